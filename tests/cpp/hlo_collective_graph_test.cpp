// hlo::replicated: R copies of one program as one program, each copy's groups and pairs
// moved to its own partitions, checked group by group on a small graph written by hand.
#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "aoizora/hlo/collective_graph.h"

namespace aoizora::hlo {
namespace {

using Groups = std::vector<std::vector<int>>;
using Pairs = std::vector<std::pair<int, int>>;

// Four partitions: an all-reduce over two pairs, a permute along a line, an all-gather that
// names no group (every partition), inside one loop of 5 trips.
CollectiveGraph FourPartitions() {
  CollectiveGraph g;
  g.num_partitions = 4;
  g.regions.resize(2);
  g.regions[0].name = "entry";
  g.regions[1].name = "body";
  g.regions[1].repeat = 5;
  Collective ar;
  ar.name = "ar";
  ar.kind = CollectiveKind::kAllReduce;
  ar.groups = {{0, 1}, {2, 3}};
  Collective cp;
  cp.name = "cp";
  cp.kind = CollectiveKind::kCollectivePermute;
  cp.source_target_pairs = {{0, 1}, {1, 2}, {2, 3}};
  cp.region = 1;
  Collective ag;
  ag.name = "ag";
  ag.kind = CollectiveKind::kAllGather;
  g.collectives = {ar, cp, ag};
  for (int c = 0; c < 3; ++c) {
    ScheduledOp op;
    op.name = g.collectives[c].name;
    op.kind = OpKind::kCollective;
    op.collective = c;
    op.flops = 10;
    g.regions[c == 1 ? 1 : 0].ops.push_back(op);
  }
  return g;
}

TEST(HloReplicated, EachCopysGroupsAndPairsMoveByItsOffset) {
  Result<CollectiveGraph> r = replicated(FourPartitions(), 3);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->num_partitions, 12);
  EXPECT_EQ(r->collectives[0].groups,
            (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}, {8, 9}, {10, 11}}));
  EXPECT_TRUE(r->collectives[0].source_target_pairs.empty());
  EXPECT_EQ(r->collectives[1].source_target_pairs,
            (Pairs{{0, 1}, {1, 2}, {2, 3}, {4, 5}, {5, 6}, {6, 7}, {8, 9}, {9, 10}, {10, 11}}));
  EXPECT_TRUE(r->collectives[1].groups.empty());
}

// "Every partition" must become every partition of each copy: one group of 12 would make
// the copies wait for each other and gather three times the bytes.
TEST(HloReplicated, AGroupOfEveryPartitionStaysWithinItsCopy) {
  Result<CollectiveGraph> r = replicated(FourPartitions(), 2);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->collectives[2].groups, (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

TEST(HloReplicated, TheScheduleAndCostsAreTheCopysOwn) {
  const CollectiveGraph g = FourPartitions();
  Result<CollectiveGraph> r = replicated(g, 2);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_EQ(r->regions.size(), 2u);
  EXPECT_EQ(r->regions[1].repeat, 5);
  EXPECT_EQ(r->regions[0].ops.size(), 2u);
  // Per device: each chip still runs one copy's ops.
  EXPECT_EQ(r->total_flops(), g.total_flops());
}

TEST(HloReplicated, OneCopyIsTheGraphItself) {
  Result<CollectiveGraph> r = replicated(FourPartitions(), 1);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->num_partitions, 4);
  EXPECT_EQ(r->collectives[0].groups, (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(r->collectives[2].groups, (Groups{{0, 1, 2, 3}}));
}

TEST(HloReplicated, NoCopiesIsRefused) {
  Result<CollectiveGraph> r = replicated(FourPartitions(), 0);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "replicated: 0 replicas; at least 1 is needed");
}

TEST(HloReplicated, AGraphOfSeveralReplicasIsRefused) {
  CollectiveGraph g = FourPartitions();
  g.replica_count = 2;
  Result<CollectiveGraph> r = replicated(g, 2);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("the graph has 2 replicas"), std::string::npos)
      << r.error().message;
}

}  // namespace
}  // namespace aoizora::hlo
