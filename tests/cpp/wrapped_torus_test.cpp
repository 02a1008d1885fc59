// Collectives over wrapped axes and tori, in Q2 and the simulator, against the closed forms of
// docs/simulator.md ("Collectives on wrapped axes and tori: closed forms"). B is the
// profile's one-way link bandwidth (links are full duplex: B each way), alpha its hop
// latency, V the collective's volume (all-gather: gathered bytes; reduce-scatter and
// all-reduce: the operand), N the chips of a group, W = 2B the scaling book's bidirectional
// bandwidth:
//   line of n (no wraparound)        (n-1) V / (n B)         + (n-1) alpha
//   wrapped axis of n                (n-1) V / (2 n B)       + (n-1) alpha
//   torus of D wrapped axes of n     (N-1) V / (2 D N B)     + D (n-1) alpha
// all-reduce twice these; the simulator adds its fixed overhead per collective. The topologies
// are the catalog's, on their shipped profiles; the collectives are 64 MiB, so latency is a
// few percent and is counted exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "aoizora/cost/algorithm.h"
#include "aoizora/cost/q2.h"
#include "aoizora/sim/simulator.h"
#include "aoizora/topo/catalog.h"
#include "sim_testing.h"

namespace aoizora {
namespace {

using hlo::CollectiveKind;

constexpr double kV = 64.0 * 1024 * 1024;  // bytes
constexpr double kOverhead = 2e-6;         // the simulator's fixed cost per collective, s

topo::Topology Must(const std::string& name) {
  Result<topo::Topology> t = topo::make_topology(name);
  EXPECT_TRUE(t.ok()) << name;
  return std::move(t).value();
}

// Every group of chips that spans `axes` fully and fixes the other coordinates, each group
// listed x fastest (one-core generations: device ids are chip ids).
std::vector<std::vector<int>> Boxes(const topo::Topology& t, const std::vector<int>& axes) {
  std::vector<std::vector<int>> groups;
  std::vector<int> key_of_group;
  for (int d = 0; d < t.num_devices(); ++d) {
    const topo::DeviceCoords c = t.device_coords(d);
    int key = 0;
    for (int a = 0; a < 3; ++a)
      if (std::find(axes.begin(), axes.end(), a) == axes.end())
        key = key * 64 + c[static_cast<size_t>(a)];
    const auto it = std::find(key_of_group.begin(), key_of_group.end(), key);
    if (it == key_of_group.end()) {
      key_of_group.push_back(key);
      groups.push_back({d});
    } else {
      groups[static_cast<size_t>(it - key_of_group.begin())].push_back(d);
    }
  }
  return groups;
}

// One synchronous collective over `groups` on every device of t, volume kV.
hlo::CollectiveGraph OneCollective(const topo::Topology& t, CollectiveKind kind,
                                   std::vector<std::vector<int>> groups) {
  const double k = static_cast<double>(groups.front().size());
  hlo::CollectiveGraph g;
  g.num_partitions = t.num_devices();
  g.regions.push_back(hlo::Region{"entry", 1, {}});
  hlo::Collective c;
  c.name = "c0";
  c.kind = kind;
  c.groups = std::move(groups);
  c.operand_bytes = static_cast<int64_t>(kind == CollectiveKind::kAllGather ? kV / k : kV);
  c.result_bytes = static_cast<int64_t>(kind == CollectiveKind::kReduceScatter ? kV / k : kV);
  g.collectives.push_back(c);
  hlo::ScheduledOp op;
  op.name = "c0";
  op.kind = hlo::OpKind::kCollective;
  op.collective = 0;
  g.regions[0].ops.push_back(op);
  return g;
}

place::Placement Identity(const topo::Topology& t) {
  place::Placement p;
  p.device_of.resize(static_cast<size_t>(t.num_devices()));
  std::iota(p.device_of.begin(), p.device_of.end(), 0);
  return p;
}

struct Times {
  cost::Q2Result q2;
  sim::SimResult sim;
};

Times Both(const topo::Topology& t, CollectiveKind kind, std::vector<std::vector<int>> groups) {
  const hlo::CollectiveGraph g = OneCollective(t, kind, std::move(groups));
  sim::SimOptions o;
  o.collective_overhead = kOverhead;
  return {cost::evaluate_q2(g, t, Identity(t)), sim::Ok(sim::simulate(g, t, Identity(t), o))};
}

// Bandwidth terms of the closed forms (seconds for volume kV over one-way link bandwidth B).
double Line(int n, double B) { return (n - 1) * kV / (n * B); }
double WrappedAxis(int n, double B) { return (n - 1) * kV / (2.0 * n * B); }
double Torus(int N, int D, double B) { return (N - 1) * kV / (2.0 * D * N * B); }

// Q2 is the closed form (phases' busiest links + steps x one hop); the simulator adds its
// overhead and plays the same steps.
void ExpectClosedForm(const Times& r, double bandwidth_seconds, int steps, double alpha) {
  const double q2 = bandwidth_seconds + steps * alpha;
  EXPECT_NEAR(r.q2.seconds, q2, 1e-9 * q2);
  EXPECT_NEAR(r.sim.step_seconds, q2 + kOverhead, 1e-3 * (q2 + kOverhead));
}

// On v5e:8x16 the y axis (16) wraps and x (8) does not. A y column runs a ring both ways,
// (n-1) V / 2n on every link; an x row is an unfolded line, whose end chips take n-1 shards
// through one link: per chip of the group, the ring is twice the line's bandwidth. Ignoring
// the wrap (the column as a line) or one direction only (a one-way ring) doubles the ring.
TEST(WrappedTorus, WrappedAxisAllGatherIsTheBidirectionalRingAndALineHalfItsBandwidth) {
  const topo::Topology t = Must("v5e:8x16");
  ASSERT_TRUE(t.wrap[1] && !t.wrap[0]);
  const double B = t.spec.link_bandwidth, alpha = t.spec.hop_latency;
  ExpectClosedForm(Both(t, CollectiveKind::kAllGather, Boxes(t, {1})), WrappedAxis(16, B), 15, alpha);
  ExpectClosedForm(Both(t, CollectiveKind::kAllGather, Boxes(t, {0})), Line(8, B), 7, alpha);
  // The scaling book's V / W (W = 2B) within (n-1)/n.
  EXPECT_NEAR(WrappedAxis(16, B), kV / (2 * B) * 15 / 16, 1e-12);
}

// Reduce-scatter costs what all-gather does and all-reduce twice that, on the 16 x-rings of
// v5e:16x16 at once (disjoint links: one ring's time).
TEST(WrappedTorus, WrappedAxisReduceScatterAndAllReduce) {
  const topo::Topology t = Must("v5e:16x16");
  const double B = t.spec.link_bandwidth, alpha = t.spec.hop_latency;
  ExpectClosedForm(Both(t, CollectiveKind::kReduceScatter, Boxes(t, {0})), WrappedAxis(16, B), 15, alpha);
  ExpectClosedForm(Both(t, CollectiveKind::kAllReduce, Boxes(t, {0})), 2 * WrappedAxis(16, B), 30, alpha);
}

// Every directed link of a wrapped axis, the wraparound links included, carries (n-1) V / 2n:
// a closing edge routed the long way round, or taken twice, loads some links more.
TEST(WrappedTorus, WrapLinksCarryWhatEveryOtherRingLinkCarries) {
  const topo::Topology t = Must("v5e:16x16");
  const Times r = Both(t, CollectiveKind::kAllGather, Boxes(t, {0}));
  const double per_link = 15 * kV / (2 * 16);
  int wraps = 0;
  for (const topo::Link& l : t.links) {
    const double expected = l.dim == 0 ? per_link : 0;
    EXPECT_NEAR(r.q2.link_bytes[static_cast<size_t>(l.id)], expected, 1e-6 * per_link) << "link " << l.id;
    EXPECT_NEAR(r.sim.link_bytes[static_cast<size_t>(l.id)], expected, 1e-6 * per_link) << "link " << l.id;
    wraps += l.dim == 0 && l.wraparound;
  }
  EXPECT_EQ(wraps, 2 * 16);  // each row's closing link, both ways
}

// The whole v5e:16x16 (a 2-D torus of 16-chip rings) runs both axes at once, one colour per
// axis order (XLA's StrategyND, dim_used {0 1},{1 0}): (N-1) V / 4NB, the scaling book's
// V / (W n_axes). One ring through all 256 chips, or the axes one after another, take twice
// as long (V / 2B), and the ring 255 steps of latency instead of 30.
TEST(WrappedTorus, TwoDimensionalTorusUsesBothAxesAtOnce) {
  const topo::Topology t = Must("v5e:16x16");
  const double B = t.spec.link_bandwidth, alpha = t.spec.hop_latency;
  const std::vector<std::vector<int>> all = Boxes(t, {0, 1});
  ASSERT_EQ(all.size(), 1u);
  ExpectClosedForm(Both(t, CollectiveKind::kAllGather, all), Torus(256, 2, B), 30, alpha);
  ExpectClosedForm(Both(t, CollectiveKind::kReduceScatter, all), Torus(256, 2, B), 30, alpha);
  ExpectClosedForm(Both(t, CollectiveKind::kAllReduce, all), 2 * Torus(256, 2, B), 60, alpha);
  EXPECT_NEAR(Torus(256, 2, B), kV / (2 * B * 2) * 255 / 256, 1e-12);
}

// On a torus every directed link carries the same bytes, (N-1) V / 2DN: no link idles and
// none carries a share twice.
TEST(WrappedTorus, EveryTorusLinkCarriesAnEqualShare) {
  for (const char* name : {"v5e:16x16", "v4:4x4x4"}) {
    SCOPED_TRACE(name);
    const topo::Topology t = Must(name);
    const int D = t.dims[2] > 1 ? 3 : 2, N = t.num_chips();
    const Times r = Both(t, CollectiveKind::kAllGather, Boxes(t, {0, 1, 2}));
    const double per_link = (N - 1) * kV / (2.0 * D * N);
    for (const topo::Link& l : t.links) {
      EXPECT_NEAR(r.q2.link_bytes[static_cast<size_t>(l.id)], per_link, 1e-6 * per_link) << "link " << l.id;
      EXPECT_NEAR(r.sim.link_bytes[static_cast<size_t>(l.id)], per_link, 1e-6 * per_link) << "link " << l.id;
    }
  }
}

// v4:4x4x4 is a 3-D torus of 4-chip rings (whole cubes wrap): the whole cube is (N-1) V / 6NB
// (XLA: UniDirectionNDRingStrategy, dim_used {0 1 2},{1 2 0},{2 0 1}), a 4x4 plane of it
// (two wrapped axes) (N-1) V / 4NB, one axis (n-1) V / 2nB.
TEST(WrappedTorus, ThreeDimensionalTorusUsesEveryAxisAtOnce) {
  const topo::Topology t = Must("v4:4x4x4");
  ASSERT_TRUE(t.wrap[0] && t.wrap[1] && t.wrap[2]);
  const double B = t.spec.link_bandwidth, alpha = t.spec.hop_latency;
  ExpectClosedForm(Both(t, CollectiveKind::kAllGather, Boxes(t, {0, 1, 2})), Torus(64, 3, B), 9, alpha);
  ExpectClosedForm(Both(t, CollectiveKind::kAllReduce, Boxes(t, {0, 1, 2})), 2 * Torus(64, 3, B), 18, alpha);
  // The four xy planes at once: their links are disjoint.
  ExpectClosedForm(Both(t, CollectiveKind::kReduceScatter, Boxes(t, {0, 1})), Torus(16, 2, B), 6, alpha);
  ExpectClosedForm(Both(t, CollectiveKind::kAllGather, Boxes(t, {2})), WrappedAxis(4, B), 3, alpha);
}

// Unequal axes (v4:4x4x8, every axis wraps): the same three colours, each phase as long as the
// longest ring (L = 7 steps). In units u = V / 3N (a colour's shard), an all-gather's phases
// load a link of each axis with (n-1)/2 times the colour's piece there:
//   phase 0: x, y 1.5u (colours 0, 1), z 3.5u (colour 2)
//   phase 1: y 6u, z 14u, x 12u     (pieces 4u, 4u, 8u)
//   phase 2: z 56u, x 48u, y 48u    (pieces 16u, 32u, 32u)
// Q2 charges each phase its busiest link: (3.5 + 14 + 56) u / B + 3 x 7 hops, which is also
// the bytes of the busiest (z) links over the whole collective, so nothing can be faster at
// this split of the data. The simulator lets each colour step on its own (a lane per colour)
// and, without the lockstep, lands within a few percent of it (it was 39 % slower with every
// colour in one lane: 463.4 against 334.4 us).
TEST(WrappedTorus, UnequalTorusChargesEachPhaseItsBusiestAxis) {
  const topo::Topology t = Must("v4:4x4x8");
  ASSERT_TRUE(t.wrap[0] && t.wrap[1] && t.wrap[2]);
  const double B = t.spec.link_bandwidth, alpha = t.spec.hop_latency;
  const double u = kV / (3 * 128), busiest = 73.5 * u / B;
  for (CollectiveKind kind : {CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
                              CollectiveKind::kAllReduce}) {
    const double times = kind == CollectiveKind::kAllReduce ? 2 : 1;
    const Times r = Both(t, kind, Boxes(t, {0, 1, 2}));
    const double q2 = times * (busiest + 21 * alpha);
    EXPECT_NEAR(r.q2.seconds, q2, 1e-9 * q2);
    EXPECT_GE(r.sim.step_seconds, times * busiest + kOverhead);
    EXPECT_NEAR(r.sim.step_seconds / r.q2.seconds, 1.0, 0.05);
  }
}

// A box with an axis that does not wrap is no torus: the whole v5e:8x16 (x a line of 8, y a
// ring of 16) runs the profile's grid ring through its 128 chips, (N-1) V / 2NB in N-1 steps.
TEST(WrappedTorus, BoxWithALineAxisRunsTheGridRing) {
  const topo::Topology t = Must("v5e:8x16");
  ASSERT_TRUE(t.spec.algorithms.grid_is_ring());
  const double B = t.spec.link_bandwidth, alpha = t.spec.hop_latency;
  const std::vector<std::vector<int>> all = Boxes(t, {0, 1});
  EXPECT_EQ(cost::classify_group(all.front(), t), cost::GroupAlgorithm::kGrid);
  EXPECT_EQ(cost::classify_group(Boxes(Must("v5e:16x16"), {0, 1}).front(), Must("v5e:16x16")),
            cost::GroupAlgorithm::kTorus);
  ExpectClosedForm(Both(t, CollectiveKind::kAllGather, all), WrappedAxis(128, B), 127, alpha);
}

}  // namespace
}  // namespace aoizora
