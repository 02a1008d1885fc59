#include "aoizora/cost/flow.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>

#include "aoizora/cost/algorithm.h"

namespace aoizora::cost {
namespace {

using hlo::Collective;
using hlo::CollectiveKind;

topo::ChipSpec spec(const char* grid = "bidirectional-ring") {
  topo::ChipSpec s;
  s.peak_flops = 1e12;
  s.hbm_bandwidth = 1e11;
  s.link_bandwidth = 1e9;
  s.hop_latency = 0;
  s.algorithms.grid = grid;
  return s;
}

place::Placement identity(int n) {
  place::Placement p;
  p.device_of.resize(static_cast<size_t>(n));
  std::iota(p.device_of.begin(), p.device_of.end(), 0);
  return p;
}

Collective collective(CollectiveKind kind, std::vector<std::vector<int>> groups, int64_t operand,
                      int64_t result) {
  Collective c;
  c.kind = kind;
  c.groups = std::move(groups);
  c.operand_bytes = operand;
  c.result_bytes = result;
  return c;
}

// Bytes on each directed link summed over all steps.
std::map<int, double> link_loads(const CollectiveFlows& f, const topo::Topology& t) {
  std::map<int, double> load;
  for (const Flow& fl : f.flows)
    for (int l : t.route(fl.src, fl.dst)) load[l] += fl.bytes;
  return load;
}

TEST(Expand, AllGatherOnLineUnfoldsBidirectionally) {
  topo::Topology t = topo::Topology::grid("line8", {8, 1, 1}, {false, false, false}, spec());
  const double V = 8000;
  CollectiveFlows f = expand(collective(CollectiveKind::kAllGather, {{0, 1, 2, 3, 4, 5, 6, 7}}, 1000, 8000),
                             identity(8), t);
  EXPECT_EQ(f.num_steps, 7);
  for (const Flow& fl : f.flows) EXPECT_EQ(t.hops(fl.src, fl.dst), 1);
  // Every chip receives the 7 shards it lacks.
  std::map<int, double> received;
  for (const Flow& fl : f.flows) received[fl.dst] += fl.bytes;
  for (int c = 0; c < 8; ++c) EXPECT_DOUBLE_EQ(received[c], 7 * V / 8);
  // Link i -> i+1 carries the shards of chips 0..i.
  auto load = link_loads(f, t);
  EXPECT_DOUBLE_EQ(load[t.link_between(6, 7)], 7 * V / 8);
  EXPECT_DOUBLE_EQ(load[t.link_between(0, 1)], V / 8);
  EXPECT_DOUBLE_EQ(load[t.link_between(1, 0)], 7 * V / 8);
}

TEST(Expand, AllGatherOnTorusUsesBothDirections) {
  topo::Topology t = topo::Topology::grid("ring8", {8, 1, 1}, {true, false, false}, spec());
  CollectiveFlows f =
      expand(collective(CollectiveKind::kAllGather, {{3, 1, 0, 2, 4, 5, 6, 7}}, 1000, 8000), identity(8), t);
  EXPECT_EQ(f.num_steps, 7);
  auto load = link_loads(f, t);
  EXPECT_EQ(load.size(), 16u);  // all 16 directed links
  for (auto& [l, b] : load) EXPECT_DOUBLE_EQ(b, 7 * 8000.0 / 16);
}

TEST(Expand, AllReduceOnSubGridIsDimensionByDimension) {
  topo::Topology t =
      topo::Topology::grid("4x4", {4, 4, 1}, {false, false, false}, spec("dimension-order"));
  // The 2x2 block at the origin: chips 0, 1, 4, 5.
  Collective c = collective(CollectiveKind::kAllReduce, {{0, 1, 4, 5}}, 4000, 4000);
  EXPECT_EQ(classify_group({0, 1, 4, 5}, t), GroupAlgorithm::kGrid);
  CollectiveFlows f = expand(c, identity(16), t);
  // Reduce-scatter x (1 step, 2000 B), y (1 step, 1000 B), all-gather y, x.
  EXPECT_EQ(f.num_steps, 4);
  double total = 0;
  for (const Flow& fl : f.flows) {
    EXPECT_EQ(t.hops(fl.src, fl.dst), 1);
    total += fl.bytes;
  }
  EXPECT_DOUBLE_EQ(total, 4 * (2000 + 1000 + 1000 + 2000));
}

// XLA's TPU all-reduce on a 2x2 block is one ring of 4 chips, both ways
// (UniDirection1DRingStrategy, colors:2; docs/cost-model.md): every one of the 8 directed
// links carries half a shard per step, 3 steps of reduce-scatter and 3 of all-gather.
TEST(Expand, AllReduceOnSubGridIsOneBidirectionalRing) {
  topo::Topology t = topo::Topology::grid("4x4", {4, 4, 1}, {false, false, false}, spec());
  const double V = 4000;
  CollectiveFlows f = expand(collective(CollectiveKind::kAllReduce, {{0, 1, 4, 5}}, V, V), identity(16), t);
  EXPECT_EQ(f.num_steps, 6);
  auto load = link_loads(f, t);
  EXPECT_EQ(load.size(), 8u);
  for (auto& [l, b] : load) EXPECT_DOUBLE_EQ(b, 2 * 3 * (V / 4) / 2);
  for (const Flow& fl : f.flows) EXPECT_EQ(t.hops(fl.src, fl.dst), 1);
}

// The cycle visits every cell of a box once, each step to a neighbour, and closes; a box
// whose sides are all odd has none.
TEST(GridCycle, IsAHamiltonianCycleOfNeighbours) {
  const std::vector<std::pair<std::vector<int>, topo::DeviceCoords>> boxes = {
      {{0, 1}, {2, 2, 1, 1}}, {{0, 1}, {2, 3, 1, 1}}, {{0, 1}, {3, 4, 1, 1}},
      {{0, 1}, {4, 4, 1, 1}}, {{0, 1, 2}, {2, 2, 2, 1}}, {{0, 1, 2}, {3, 3, 2, 1}},
      {{0, 1, 2}, {3, 4, 5, 1}}};
  for (const auto& [axes, ext] : boxes) {
    const detail::GridCycle cycle(axes, ext);
    ASSERT_TRUE(cycle.exists());
    const int n = cycle.size();
    EXPECT_EQ(n, ext[0] * ext[1] * ext[2]);
    std::set<topo::DeviceCoords> seen;
    for (int i = 0; i < n; ++i) {
      const topo::DeviceCoords a = cycle.cell(i), b = cycle.cell((i + 1) % n);
      seen.insert(a);
      int distance = 0;
      for (size_t k = 0; k < a.size(); ++k) {
        EXPECT_TRUE(a[k] >= 0 && a[k] < ext[k]);
        distance += std::abs(a[k] - b[k]);
      }
      EXPECT_EQ(distance, 1) << "step " << i << " of a box " << ext[0] << "x" << ext[1] << "x" << ext[2];
    }
    EXPECT_EQ(static_cast<int>(seen.size()), n);
  }
  EXPECT_FALSE(detail::GridCycle({0, 1}, {3, 3, 1, 1}).exists());
}

TEST(Expand, ScatteredGroupIsRoutedRingInGroupOrder) {
  topo::Topology t = topo::Topology::grid("2x4", {2, 4, 1}, {false, false, false}, spec());
  EXPECT_EQ(classify_group({0, 7}, t), GroupAlgorithm::kRoutedRing);
  EXPECT_EQ(classify_group({0, 2, 4, 6}, t), GroupAlgorithm::kLine);
  CollectiveFlows f = expand(collective(CollectiveKind::kReduceScatter, {{0, 7, 3}}, 3000, 1000), identity(8), t);
  EXPECT_EQ(f.num_steps, 2);
  ASSERT_EQ(f.flows.size(), 6u);
  EXPECT_EQ(f.flows[0].src, 0);
  EXPECT_EQ(f.flows[0].dst, 7);
  EXPECT_DOUBLE_EQ(f.flows[0].bytes, 1000);
}

TEST(Expand, AllToAllPairwiseAndPermute) {
  topo::Topology t = topo::Topology::grid("2x4", {2, 4, 1}, {false, false, false}, spec());
  CollectiveFlows a = expand(collective(CollectiveKind::kAllToAll, {{0, 1, 2, 3}}, 4000, 4000), identity(8), t);
  EXPECT_EQ(a.flows.size(), 12u);
  for (const Flow& fl : a.flows) EXPECT_DOUBLE_EQ(fl.bytes, 1000);
  Collective p;
  p.kind = CollectiveKind::kCollectivePermute;
  p.source_target_pairs = {{0, 1}, {1, 1}, {2, 5}};
  p.operand_bytes = 64;
  place::Placement swap = identity(8);
  std::swap(swap.device_of[1], swap.device_of[5]);
  CollectiveFlows f = expand(p, swap, t);
  ASSERT_EQ(f.flows.size(), 2u);  // the self-pair moves nothing
  EXPECT_EQ(f.flows[0].dst, 5);   // partition 1 sits on chip 5
  EXPECT_EQ(f.flows[1].dst, 1);
}

TEST(Expand, AggregateEqualsSumOfSteps) {
  topo::Topology t = topo::Topology::grid("4x4w", {4, 4, 1}, {true, false, false}, spec());
  for (auto kind : {CollectiveKind::kAllGather, CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter}) {
    for (std::vector<int> g : {std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}, std::vector<int>{4, 9, 14}}) {
      Collective c = collective(kind, {g}, 1200, 1200);
      std::map<std::pair<int, int>, double> steps, agg;
      place::Placement id = identity(16);
      for (const Flow& fl : expand(c, id, t).flows) steps[{fl.src, fl.dst}] += fl.bytes;
      generate_flows(c, id.device_of, t, collective_volume(c), true,
                     [&](int s, int d, double b, int, int, int) { agg[{s, d}] += b; });
      ASSERT_EQ(steps.size(), agg.size());
      for (auto& [k, v] : steps) EXPECT_NEAR(agg[k], v, 1e-9);
    }
  }
}

}  // namespace
}  // namespace aoizora::cost
