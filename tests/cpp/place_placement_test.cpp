#include <gtest/gtest.h>

#include <set>

#include "aoizora/place/axis_order.h"
#include "aoizora/place/jax_default.h"
#include "aoizora/place/placement.h"
#include "aoizora/place/ring_orders.h"
#include "aoizora/stage2/placement_search.h"
#include "aoizora/topo/catalog.h"

namespace aoizora::place {
namespace {

topo::Topology must(const std::string& name) {
  Result<topo::Topology> t = topo::make_topology(name);
  EXPECT_TRUE(t.ok());
  return std::move(t).value();
}

size_t count_orders(const std::string& topo_name, MeshShape mesh, bool remove = true) {
  AxisOrderOptions o;
  o.remove_symmetric = remove;
  Result<std::vector<Placement>> r = enumerate_axis_orders(must(topo_name), mesh, o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  for (const Placement& p : *r) EXPECT_TRUE(validate(p, must(topo_name)).ok()) << p.name;
  return r->size();
}

// With power-of-two sizes an axis order is a bijection between the bits of the logical index
// and the bits of the physical coordinates (every split is allowed, and whole axes are the
// bit pairs kept in order), so there are (number of bits)! orders. Every order puts partition
// 0 on chip (0,0), so no reflection relates two of them; a transpose of equal axes would pair
// them, but it changes dimension-order routes, so it is not a symmetry (place/symmetry.h).
TEST(AxisOrders, CountsOn2x4) {
  // 2x4: bits x0 | y1 y0. 3! orders; 2 != 4, so no transpose.
  EXPECT_EQ(count_orders("v5e:2x4", {8}), 6u);
  EXPECT_EQ(count_orders("v5e:2x4", {2, 4}), 6u);
  EXPECT_EQ(count_orders("v5e:2x4", {4, 2}), 6u);
  EXPECT_EQ(count_orders("v5e:2x4", {2, 2, 2}), 6u);
}

TEST(AxisOrders, CountsOn4x4) {
  // 4x4: bits x1 x0 | y1 y0. 4! = 24 orders, all kept: the x<->y transpose changes routes.
  EXPECT_EQ(count_orders("v5e:4x4", {4, 4}, false), 24u);
  EXPECT_EQ(count_orders("v5e:4x4", {4, 4}), 24u);
  EXPECT_EQ(count_orders("v5e:4x4", {16}), 24u);
  EXPECT_EQ(count_orders("v5e:4x4", {2, 8}), 24u);
  // Axes must multiply to the chips.
  EXPECT_FALSE(enumerate_axis_orders(must("v5e:4x4"), {4, 2}).ok());
}

TEST(AxisOrders, WholeAxesComeFirstAndAreNamed) {
  Result<std::vector<Placement>> r = enumerate_axis_orders(must("v5e:2x4"), {2, 4});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].name, "axes x|y");
  // x|y: partition p = 4i + j on (x=i, y=j).
  EXPECT_EQ((*r)[0].device_of, (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
}

TEST(JaxDefault, HandlersAndTorusAssignment) {
  // v5e with 8 chips: the tray ring (0,1,2,3,7,6,5,4) whatever the mesh shape.
  Result<Placement> a = default_placement(must("v5e:2x4"), {2, 4});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->device_of, (std::vector<int>{0, 1, 2, 3, 7, 6, 5, 4}));
  // v5e 4x4 with a 1D mesh of 16: the 4x4 tray ring.
  Result<Placement> b = default_placement(must("v5e:4x4"), {16});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->device_of[5], 6);
  // v5e 4x4 as 4x4: logical axis 1 takes x (with the size-1 z), axis 0 takes y: row-major.
  Result<Placement> c = default_placement(must("v5e:4x4"), {4, 4});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->device_of, row_major(must("v5e:4x4")).device_of);
  // v4 2x2x2 as (2, 4): axis 1 takes x,y (x major), axis 0 takes z.
  Result<Placement> d = default_placement(must("v4:2x2x2"), {2, 4});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->device_of, (std::vector<int>{0, 2, 1, 3, 4, 6, 5, 7}));
    // (32, 2) on 4x4x4 needs a 2 out of a 4: JAX raises, so there is no default.
  EXPECT_TRUE(default_placement(must("v5p:2x4x4"), {8, 4}).ok());
  EXPECT_FALSE(default_placement(must("v5p:4x4x4"), {32, 2}).ok());
  // v5e may split: (2, 8) on 4x4.
  EXPECT_TRUE(default_placement(must("v5e:4x4"), {2, 8}).ok());
}

TEST(RingOrders, SnakesAndCyclesAreOneHopRings) {
  topo::Topology t = must("v5e:2x4");
  for (const Placement& p : snake_orders(t)) {
    ASSERT_TRUE(validate(p, t).ok());
    for (size_t i = 0; i + 1 < p.device_of.size(); ++i) EXPECT_EQ(t.hops(p.device_of[i], p.device_of[i + 1]), 1) << p.name;
  }
  auto cycles = tile_cycle_orders(t, {8});
  ASSERT_EQ(cycles.size(), 1u);  // 2x4 over (x, y)
  const auto& c = cycles[0].device_of;
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(t.hops(c[i], c[(i + 1) % 8]), 1);
  topo::Topology t44 = must("v5e:4x4");
  auto quads = tile_cycle_orders(t44, {4, 4});  // 2x2 tiles (and 4x1 has no cycle)
  ASSERT_FALSE(quads.empty());
  for (const Placement& p : quads) {
    ASSERT_TRUE(validate(p, t44).ok());
    for (size_t g = 0; g < 16; g += 4)
      for (size_t i = 0; i < 4; ++i) EXPECT_EQ(t44.hops(p.device_of[g + i], p.device_of[g + (i + 1) % 4]), 1) << p.name;
  }
}

TEST(Coords, RoundTrip) {
  topo::Topology t = must("v5e:4x4");
  Placement p = *default_placement(t, {16});
  Result<Placement> q = placement_from_coords(t, coords_of(t, p));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->device_of, p.device_of);
  EXPECT_FALSE(placement_from_coords(t, {{0, 0, 0}, {0, 0, 0}}).ok());
  EXPECT_FALSE(placement_from_coords(t, {{4, 0, 0}}).ok());
}

// A ring of ppermutes over all 8 partitions (ring attention's step).
hlo::CollectiveGraph ring_graph() {
  hlo::CollectiveGraph g;
  g.num_partitions = 8;
  g.regions.push_back(hlo::Region{"entry", 1, {}});
  hlo::Collective c;
  c.kind = hlo::CollectiveKind::kCollectivePermute;
  for (int i = 0; i < 8; ++i) {
    c.source_target_pairs.push_back({i, (i + 1) % 8});
    c.source_target_pairs.push_back({i, (i + 7) % 8});
  }
  c.operand_bytes = c.result_bytes = 1 << 20;
  hlo::ScheduledOp op;
  op.kind = hlo::OpKind::kCollective;
  op.collective = 0;
  g.regions[0].ops.push_back(op);
  g.collectives.push_back(c);
  return g;
}

TEST(Search, LocalSearchFindsAOneHopRing) {
  topo::Topology t = must("v5e:2x4");
  hlo::CollectiveGraph g = ring_graph();
  cost::Q2Evaluator q2(g, t);
  const double best_possible = (1 << 20) / t.spec.link_bandwidth + t.spec.hop_latency;
  double found = 0;
  Placement p =
      stage2::local_search(q2, row_major(t), stage2::SearchOptions{7, 3000, 0.02}, &found);
  EXPECT_NEAR(found, best_possible, 1e-12);
  EXPECT_NEAR(q2.seconds(p.device_of), found, 1e-15);
  // Deterministic for a seed.
  EXPECT_EQ(stage2::local_search(q2, row_major(t), stage2::SearchOptions{7, 3000, 0.02}).device_of,
            p.device_of);
}

TEST(Search, RankingPutsRingFriendlyOrdersFirst) {
  topo::Topology t = must("v5e:2x4");
  stage2::RankOptions o;
  o.search_starts = 0;
  Result<stage2::Ranking> r = stage2::rank_placements(ring_graph(), t, {8}, o);
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->jax_default.has_value());
  const double best_possible = (1 << 20) / t.spec.link_bandwidth + t.spec.hop_latency;
  EXPECT_NEAR(r->ranked.front().q2, best_possible, 1e-12);
  for (size_t i = 1; i < r->ranked.size(); ++i) EXPECT_LE(r->ranked[i - 1].q2, r->ranked[i].q2);
  // JAX's tray ring (0,1,2,3,7,6,5,4) is not a cycle on 2x4: its closing edge 4 -> 0 is 2 hops.
  EXPECT_GT(r->jax_default->q2, r->ranked.front().q2);
}

}  // namespace
}  // namespace aoizora::place
