// stage2/placement_search.h: the seeded local search over placements, and the ranking of
// candidate orders by Q2.
#include "aoizora/stage2/placement_search.h"

#include <gtest/gtest.h>

#include "aoizora/cost/q2.h"
#include "aoizora/hlo/collective_graph.h"
#include "aoizora/place/placement.h"
#include "place_test_support.h"

namespace aoizora::place {
namespace {

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
