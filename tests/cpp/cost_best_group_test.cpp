// cost/best_group.h: a collective's cost on the best group shape of a slice, by the
// simulator's algorithms (Q1's prices on a real topology).
#include "aoizora/cost/best_group.h"

#include <gtest/gtest.h>

#include "aoizora/topo/catalog.h"

namespace aoizora::cost {
namespace {

// Q1 on a real slice prices a collective with the simulator's algorithms on the best group
// shape: v5e:2x4 has no wraparound, and its 8 chips run an all-reduce as one ring round the
// 2x4 both ways (XLA's UniDirection1DRingStrategy, colors 2): 2 x 7 steps of V/16 on every
// link, 2 x 7/8 V / (2 link), half of what the old dimension order cost (1.75).
TEST(ShloQ1, BestGroupCostsUseTheSimulatorsAlgorithms) {
  Result<topo::Topology> t = topo::make_topology("v5e:2x4");
  ASSERT_TRUE(t.ok());
  const double link = t->links[0].bandwidth;
  cost::BestGroupCosts g(*t);
  EXPECT_NEAR(g.get(hlo::CollectiveKind::kAllReduce, 8).seconds_per_byte * link, 0.875, 1e-9);
  EXPECT_NEAR(g.get(hlo::CollectiveKind::kAllGather, 2).seconds_per_byte * link, 0.5, 1e-9);
  // A group of 4 is best as a 2x2 box, a ring both ways: 3 steps of V/8, 3/8 V (a line of 4
  // would carry 3/4 V on its middle links).
  EXPECT_NEAR(g.get(hlo::CollectiveKind::kReduceScatter, 4).seconds_per_byte * link, 0.375, 1e-9);
  // A ring permute of 4 on a 2x2 cycle: one hop per step.
  EXPECT_NEAR(g.get(hlo::CollectiveKind::kCollectivePermute, 4).seconds_per_byte * link, 1.0, 1e-9);
  EXPECT_GT(g.get(hlo::CollectiveKind::kAllReduce, 8).latency, 0);
  EXPECT_EQ(g.get(hlo::CollectiveKind::kAllReduce, 1).seconds(1e9), 0);
}

// TPU7x has two cores per chip, joined by a die-to-die link (1.2 TB/s) much faster than ICI
// (89.22 GB/s per link). Only one mesh axis can sit on a chip's cores: a pair that spans them
// swaps over the die-to-die link; pairs that avoid them swap over ICI between two chips, and
// the pairs of both cores share the chips' link: 2 V on it.
TEST(ShloQ1, APairOnOneCoreOfEachChipCrossesIci) {
  Result<topo::Topology> t = topo::make_topology("tpu7x:2x2x1");
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->cores_per_chip(), 2);
  const double ici = t->spec.link_bandwidth;
  const double die = t->spec.intra_chip_link->bandwidth;
  cost::BestGroupCosts g(*t);
  const auto permute = hlo::CollectiveKind::kCollectivePermute;
  EXPECT_NEAR(g.get(permute, 2, CoreAxis::kSpans).seconds_per_byte * die, 1.0, 1e-9);
  EXPECT_NEAR(g.get(permute, 2, CoreAxis::kAvoids).seconds_per_byte * ici, 2.0, 1e-9);
  EXPECT_EQ(g.get(permute, 2).seconds_per_byte, g.get(permute, 2, CoreAxis::kSpans).seconds_per_byte);
  const auto a2a = hlo::CollectiveKind::kAllToAll;
  // One core per chip (v5e): the core axis changes nothing.
  Result<topo::Topology> v5e = topo::make_topology("v5e:2x4");
  ASSERT_TRUE(v5e.ok());
  cost::BestGroupCosts h(*v5e);
  EXPECT_EQ(h.get(a2a, 4, CoreAxis::kAvoids).seconds_per_byte, h.get(a2a, 4).seconds_per_byte);
  EXPECT_EQ(h.get(a2a, 4, CoreAxis::kSpans).seconds_per_byte, h.get(a2a, 4).seconds_per_byte);
}

}  // namespace
}  // namespace aoizora::cost
