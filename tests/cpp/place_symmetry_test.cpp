// place/symmetry.h: which grid symmetries survive the route check, and the property that
// makes removing them safe: a placement and its image under every symmetry the search uses
// have the same Q2 and the same simulated time.
#include "aoizora/place/symmetry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "aoizora/cost/q2.h"
#include "aoizora/sim/simulator.h"
#include "aoizora/topo/catalog.h"
#include "place_test_support.h"
#include "sim_testing.h"

namespace aoizora::place {
namespace {

using hlo::CollectiveKind;

// The chip at coords (x, y, z) after g.
int image_at(const topo::Topology& t, const std::vector<int>& g, std::array<int, 3> c) {
  return g[static_cast<size_t>(t.chip_at(c))];
}

// The simulated step time.
double simulated_seconds(const hlo::CollectiveGraph& g, const topo::Topology& t,
                         const Placement& p) {
  return sim::Ok(sim::simulate(g, t, p)).step_seconds;
}

TEST(Symmetry, TransposeIsDroppedWhenItChangesRoutes) {
  const topo::Topology t = must("v5e:4x4");
  // The square's 8 candidates; x-then-y routing keeps only the reflections.
  EXPECT_EQ(grid_symmetries(t).size(), 8u);
  const std::vector<std::vector<int>> kept = route_symmetries(t);
  EXPECT_EQ(kept.size(), 4u);
  for (const std::vector<int>& g : grid_symmetries(t)) {
    // A transpose (with or without reflections) sends chip (1,0) to (0,*) or (3,*).
    const bool transpose = image_at(t, g, {1, 0, 0}) % 4 == 0 || image_at(t, g, {1, 0, 0}) % 4 == 3;
    EXPECT_EQ(preserves_routes(t, g), !transpose);
    EXPECT_EQ(std::count(kept.begin(), kept.end(), g), transpose ? 0 : 1);
  }
  // The transpose proper: route (0,0) -> (1,1) goes by (1,0); its image by (0,1), while the
  // route (0,0) -> (1,1) still goes by (1,0).
  std::vector<int> transpose(16);
  for (const topo::Chip& c : t.chips)
    transpose[static_cast<size_t>(c.id)] = t.chip_at({c.coords[1], c.coords[0], 0});
  EXPECT_FALSE(preserves_routes(t, transpose));
  EXPECT_EQ(route_symmetries(must("v5e:2x4")).size(), 4u);   // flip x, flip y: all kept
  EXPECT_EQ(route_symmetries(must("v4:2x2x2")).size(), 8u);  // of the cube's 48, the flips
}

// A reflection maps the shorter way round a ring onto the shorter way, except at the half-way
// tie of an even ring, which goes the + way both before and after.
TEST(Symmetry, ReflectionOfAnEvenTorusAxisIsDroppedAndOfAnOddOneKept) {
  const topo::Topology wide = must("v5e:8x16");  // y wraps (16), x does not
  ASSERT_TRUE(wide.wrap[1] && !wide.wrap[0]);
  EXPECT_EQ(grid_symmetries(wide).size(), 4u);
  const std::vector<std::vector<int>> kept = route_symmetries(wide);
  ASSERT_EQ(kept.size(), 2u);  // identity, flip x
  EXPECT_EQ(image_at(wide, kept[1], {0, 0, 0}), wide.chip_at({7, 0, 0}));
  EXPECT_TRUE(route_symmetries(must("v4:4x4x4")).size() == 1u);  // every axis an even ring
  topo::ChipSpec spec;
  spec.link_bandwidth = 1e9;
  const topo::Topology odd = topo::Topology::grid("3x3", {3, 3, 1}, {true, true, false}, spec);
  EXPECT_EQ(grid_symmetries(odd).size(), 8u);
  EXPECT_EQ(route_symmetries(odd).size(), 4u);  // the flips
}

TEST(Symmetry, ReflectedPlacementsShareTheCanonicalForm) {
  const auto g = route_symmetries(must("v5e:2x4"));
  std::vector<int> p{0, 1, 2, 3, 4, 5, 6, 7}, flipped;
  for (int c : p) flipped.push_back(g[1][static_cast<size_t>(c)]);
  EXPECT_NE(p, flipped);
  EXPECT_EQ(canonical(p, g), canonical(flipped, g));
}

// A program over a logical (rows x cols) mesh that exercises every algorithm family: ring
// all-gathers and reduce-scatters over rows, an async all-reduce over columns overlapping an
// all-to-all, a ring permute, and compute to hide some of it.
hlo::CollectiveGraph mixed_program(int rows, int cols) {
  const int n = rows * cols;
  hlo::CollectiveGraph g;
  g.num_partitions = n;
  g.regions.push_back(hlo::Region{"layer", 2, {}});
  std::vector<std::vector<int>> by_row, by_col, all(1);
  for (int r = 0; r < rows; ++r) {
    by_row.emplace_back();
    for (int c = 0; c < cols; ++c) by_row.back().push_back(r * cols + c);
  }
  for (int c = 0; c < cols; ++c) {
    by_col.emplace_back();
    for (int r = 0; r < rows; ++r) by_col.back().push_back(r * cols + c);
  }
  for (int p = 0; p < n; ++p) all[0].push_back(p);
  std::vector<hlo::ScheduledOp>& ops = g.regions[0].ops;
  auto compute = [&](double flops) {
    hlo::ScheduledOp op;
    op.name = "f" + std::to_string(ops.size());
    op.flops = flops;
    ops.push_back(op);
  };
  auto start = [&](CollectiveKind kind, std::vector<std::vector<int>> groups, double bytes,
                   bool async) {
    hlo::Collective c;
    c.name = "c" + std::to_string(g.collectives.size());
    c.kind = kind;
    c.groups = std::move(groups);
    c.operand_bytes = c.result_bytes = static_cast<int64_t>(bytes);
    if (kind == CollectiveKind::kCollectivePermute) {
      for (int p = 0; p < n; ++p) c.source_target_pairs.emplace_back(p, (p + 1) % n);
      c.groups.clear();
    }
    c.async = async;
    c.repeat = 2;
    c.start_op = c.done_op = static_cast<int>(ops.size());
    hlo::ScheduledOp op;
    op.name = c.name;
    op.kind = async ? hlo::OpKind::kCollectiveStart : hlo::OpKind::kCollective;
    op.collective = static_cast<int>(g.collectives.size());
    ops.push_back(op);
    g.collectives.push_back(c);
    return op.collective;
  };
  auto done = [&](int ci) {
    hlo::ScheduledOp op;
    op.name = "d" + std::to_string(ci);
    op.kind = hlo::OpKind::kCollectiveDone;
    op.collective = ci;
    g.collectives[static_cast<size_t>(ci)].done_op = static_cast<int>(ops.size());
    ops.push_back(op);
  };
  start(CollectiveKind::kAllGather, by_row, 8e6, false);
  compute(2e9);
  const int ar = start(CollectiveKind::kAllReduce, by_col, 4e6, true);
  const int a2a = start(CollectiveKind::kAllToAll, by_row, 6e6, true);
  compute(1e8);
  done(ar);
  done(a2a);
  start(CollectiveKind::kReduceScatter, all, 16e6, false);
  start(CollectiveKind::kCollectivePermute, {}, 2e6, false);
  compute(1e9);
  return g;
}

// The safety of removing symmetric placements: for random placements, and for every
// symmetry the search uses, the image has the same Q2 and the same simulated time.
TEST(Symmetry, EverySymmetryKeepsQ2AndTheSimulatedTime) {
  struct Case {
    topo::Topology t;
    int rows, cols;
  };
  topo::ChipSpec spec = must("v5e:2x2").spec;
  std::vector<Case> cases;
  cases.push_back({must("v5e:4x4"), 4, 4});
  cases.push_back({must("v5e:2x4"), 2, 4});
  cases.push_back({must("v4:2x2x2"), 2, 4});
  // An even ring (x, whose reflection is dropped) beside a line (y, whose is kept).
  cases.push_back({topo::Topology::grid("6x4 x-torus", {6, 4, 1}, {true, false, false}, spec), 4, 6});
  cases.push_back({topo::Topology::grid("3x3 torus", {3, 3, 1}, {true, true, false}, spec), 3, 3});
  // Two cores per chip: the grid symmetries lifted to devices, and swapping the cores of any
  // chips (which canonical() quotients out).
  cases.push_back({must("tpu7x:2x2x1"), 2, 4});
  cases.push_back({must("tpu7x:2x2x2"), 4, 4});
  std::mt19937_64 rng(13);
  for (const Case& c : cases) {
    const hlo::CollectiveGraph g = mixed_program(c.rows, c.cols);
    cost::Q2Evaluator q2(g, c.t);
    const std::vector<std::vector<int>> symmetries = route_symmetries(c.t);
    ASSERT_GE(symmetries.size(), 2u) << c.t.name;
    const int n = c.t.num_devices();
    for (int i = 0; i < 12; ++i) {
      Placement p{"random", std::vector<int>(static_cast<size_t>(n))};
      std::iota(p.device_of.begin(), p.device_of.end(), 0);
      if (i > 0) std::shuffle(p.device_of.begin(), p.device_of.end(), rng);  // and row-major
      const double q = q2.seconds(p.device_of);
      const double s = simulated_seconds(g, c.t, p);
      for (size_t k = 1; k < symmetries.size(); ++k) {
        Placement image{"image", p.device_of};
        for (int& chip : image.device_of) chip = symmetries[k][static_cast<size_t>(chip)];
        EXPECT_NEAR(q2.seconds(image.device_of) / q, 1.0, 1e-9) << c.t.name << " sample " << i << " symmetry " << k;
        EXPECT_NEAR(simulated_seconds(g, c.t, image) / s, 1.0, 1e-9) << c.t.name << " sample " << i << " symmetry " << k;
      }
      if (c.t.cores_per_chip() == 2) {
        Placement swapped{"cores swapped", p.device_of};
        const uint64_t chips = rng();  // a random set of chips whose cores trade places
        for (int& d : swapped.device_of)
          if (chips >> (d / 2 % 64) & 1) d ^= 1;
        EXPECT_NEAR(q2.seconds(swapped.device_of) / q, 1.0, 1e-9) << c.t.name << " sample " << i;
        EXPECT_NEAR(simulated_seconds(g, c.t, swapped) / s, 1.0, 1e-9) << c.t.name << " sample " << i;
        EXPECT_EQ(canonical(swapped.device_of, symmetries, 2), canonical(p.device_of, symmetries, 2));
      }
    }
  }
}

}  // namespace
}  // namespace aoizora::place
