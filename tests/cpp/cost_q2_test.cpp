#include "aoizora/cost/q2.h"

#include <gtest/gtest.h>

#include <numeric>

#include "aoizora/sim/simulator.h"
#include "sim_testing.h"

namespace aoizora::cost {
namespace {

using hlo::CollectiveKind;

topo::ChipSpec spec(double latency = 0, const char* grid = "bidirectional-ring") {
  topo::ChipSpec s;
  s.peak_flops = 1e12;
  s.hbm_bandwidth = 1e11;
  s.link_bandwidth = 1e9;
  s.hop_latency = latency;
  s.algorithms.grid = grid;
  return s;
}

place::Placement identity(int n) {
  place::Placement p;
  p.device_of.resize(static_cast<size_t>(n));
  std::iota(p.device_of.begin(), p.device_of.end(), 0);
  return p;
}

// A graph builder: ops appended to one region.
struct Builder {
  hlo::CollectiveGraph g;
  Builder(int n, int64_t repeat = 1) {
    g.num_partitions = n;
    g.regions.push_back(hlo::Region{"entry", repeat, {}});
  }
  int compute(double flops) {
    hlo::ScheduledOp op;
    op.name = "f" + std::to_string(g.regions[0].ops.size());
    op.opcode = "fusion";
    op.flops = flops;
    g.regions[0].ops.push_back(op);
    return static_cast<int>(g.regions[0].ops.size()) - 1;
  }
  // A synchronous collective, or the -start of an async one (finish with done()).
  int collective(hlo::Collective c, bool async) {
    c.async = async;
    c.repeat = g.regions[0].repeat;
    hlo::ScheduledOp op;
    op.name = "c" + std::to_string(g.collectives.size());
    op.kind = async ? hlo::OpKind::kCollectiveStart : hlo::OpKind::kCollective;
    op.collective = static_cast<int>(g.collectives.size());
    c.start_op = c.done_op = static_cast<int>(g.regions[0].ops.size());
    g.regions[0].ops.push_back(op);
    g.collectives.push_back(c);
    return op.collective;
  }
  void done(int ci) {
    hlo::ScheduledOp op;
    op.name = "d" + std::to_string(ci);
    op.kind = hlo::OpKind::kCollectiveDone;
    op.collective = ci;
    g.collectives[static_cast<size_t>(ci)].done_op = static_cast<int>(g.regions[0].ops.size());
    g.regions[0].ops.push_back(op);
  }
};

// The simulated step time.
double simulated_seconds(const hlo::CollectiveGraph& g, const topo::Topology& t,
                         const place::Placement& p) {
  return sim::Ok(sim::simulate(g, t, p)).step_seconds;
}

hlo::Collective all_gather(std::vector<int> group, double gathered) {
  hlo::Collective c;
  c.kind = CollectiveKind::kAllGather;
  c.result_bytes = static_cast<int64_t>(gathered);
  c.operand_bytes = static_cast<int64_t>(gathered / static_cast<double>(group.size()));
  c.groups = {std::move(group)};
  return c;
}

hlo::Collective permute(std::vector<std::pair<int, int>> pairs, double bytes) {
  hlo::Collective c;
  c.kind = CollectiveKind::kCollectivePermute;
  c.operand_bytes = c.result_bytes = static_cast<int64_t>(bytes);
  c.source_target_pairs = std::move(pairs);
  return c;
}

TEST(Q2, RingAllGatherClosedFormsLineAndTorus) {
  const int n = 8;
  const double V = 8e6, B = 1e9, T = 1e-6;
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  Builder b(n);
  b.collective(all_gather(all, V), false);
  topo::Topology line = topo::Topology::grid("line", {n, 1, 1}, {false, false, false}, spec(T));
  topo::Topology ring = topo::Topology::grid("ring", {n, 1, 1}, {true, false, false}, spec(T));
  // Line: the busiest link carries n-1 shards one way; n-1 one-hop steps.
  EXPECT_NEAR(evaluate_q2(b.g, line, identity(n)).seconds, (n - 1) * V / n / B + (n - 1) * T, 1e-12);
  // Torus: half of each shard goes each way round: half the line's time (V/W, W = 2B).
  EXPECT_NEAR(evaluate_q2(b.g, ring, identity(n)).seconds, (n - 1) * V / n / (2 * B) + (n - 1) * T, 1e-12);
}

// An async collective started before a nested loop and completed after it (the TPU
// compiler's continuation fusions) hides under the rest of its region, the loop's compute x its
// trip count, and the ops before its -done.
TEST(Q2, AsyncCollectiveAcrossANestedLoopHidesUnderIt) {
  topo::Topology t = topo::Topology::grid("line2", {2, 1, 1}, {false, false, false}, spec());
  auto graph = [](double loop_flops) {
    Builder b(2);
    const int ci = b.collective(permute({{0, 1}}, 5e6), true);  // 5 ms on a 1 GB/s link
    b.compute(1e9);                                             // 1 ms
    b.g.regions.push_back(hlo::Region{"loop", 4, {}});
    hlo::ScheduledOp body;
    body.name = "body";
    body.flops = loop_flops;
    b.g.regions.back().ops.push_back(body);
    b.g.regions.push_back(hlo::Region{"after", 1, {}});
    hlo::ScheduledOp done;
    done.name = "d";
    done.kind = hlo::OpKind::kCollectiveDone;
    done.collective = ci;
    b.g.regions.back().ops.push_back(done);
    b.g.collectives[static_cast<size_t>(ci)].done_region = 2;
    b.g.collectives[static_cast<size_t>(ci)].done_op = 0;
    return b.g;
  };
  // 1 ms + 4 x 0.5 ms of compute hide 3 of the 5 ms.
  hlo::CollectiveGraph g = graph(0.5e9);
  EXPECT_NEAR(evaluate_q2(g, t, identity(2)).seconds, 3e-3 + 2e-3, 1e-12);
  // Enough loop compute hides it all.
  g = graph(2e9);
  EXPECT_NEAR(evaluate_q2(g, t, identity(2)).seconds, 1e-3 + 8e-3, 1e-12);
}

// The phases of an algorithm run one after another, so each is charged its own busiest link.
// A 2x2 all-gather gathers along x (V/4 per link), then along y (V/2 per link): 3V/4 / B, as
// on a line of 4 (whose middle link carries 3 shards), and as the simulator plays it. Summing
// the phases' loads before taking the busiest link would give V/2 / B.
TEST(Q2, GridAllGatherChargesItsPhasesOneAfterAnother) {
  const double V = 4e6, B = 1e9, T = 1e-6;
  Builder b(4);
  b.collective(all_gather({0, 1, 2, 3}, V), false);
  topo::Topology box = topo::Topology::grid("2x2", {2, 2, 1}, {false, false, false},
                                            spec(T, "dimension-order"));
  topo::Topology line = topo::Topology::grid("4x1", {4, 1, 1}, {false, false, false}, spec(T));
  const double closed_form = 3 * V / 4 / B + 2 * T;  // 2 one-hop steps
  EXPECT_NEAR(evaluate_q2(b.g, box, identity(4)).seconds, closed_form, 1e-12);
  EXPECT_NEAR(evaluate_q2(b.g, line, identity(4)).seconds, 3 * V / 4 / B + 3 * T, 1e-12);
  const double simulated = simulated_seconds(b.g, box, identity(4));
  EXPECT_NEAR(evaluate_q2(b.g, box, identity(4)).seconds / simulated, 1.0, 0.02);
  // Q2Evaluator agrees, and a collective's own time is charged the same way.
  Q2Evaluator e(b.g, box);
  EXPECT_NEAR(e.seconds(identity(4).device_of), closed_form, 1e-12);
  EXPECT_NEAR(e.evaluate(identity(4).device_of).collective_seconds[0], closed_form, 1e-12);
}

// Concurrent collectives contend within a phase: two async 2x2 all-gathers in one window put
// twice the bytes on every link of each phase, and take twice as long.
TEST(Q2, OverlappingGridAllGathersShareEachPhase) {
  const double V = 4e6, B = 1e9;
  topo::Topology box =
      topo::Topology::grid("2x2", {2, 2, 1}, {false, false, false}, spec(0, "dimension-order"));
  Builder one(4), two(4), mixed(4);
  int a = one.collective(all_gather({0, 1, 2, 3}, V), true);
  one.done(a);
  a = two.collective(all_gather({0, 1, 2, 3}, V), true);
  int c = two.collective(all_gather({0, 1, 2, 3}, V), true);
  two.done(a);
  two.done(c);
  // A different pattern in the same window: an x-line all-gather of the same bytes per link
  // in phase 0 (V/4 on each x link) meets the box's x phase only.
  a = mixed.collective(all_gather({0, 1, 2, 3}, V), true);
  c = mixed.collective(all_gather({0, 1}, V / 2), true);
  mixed.done(a);
  mixed.done(c);
  EXPECT_NEAR(evaluate_q2(one.g, box, identity(4)).seconds, 3 * V / 4 / B, 1e-12);
  EXPECT_NEAR(evaluate_q2(two.g, box, identity(4)).seconds, 2 * 3 * V / 4 / B, 1e-12);
  // Phase 0: x links carry V/4 + V/4; phase 1: y links V/2.
  EXPECT_NEAR(evaluate_q2(mixed.g, box, identity(4)).seconds, (V / 2 + V / 2) / B, 1e-12);
}

// As a ring (the profiles' grid algorithm) the same 2x2 all-gather moves half a shard each
// way per step for 3 steps: 3V/8 / B, half the dimension-order time, in Q2 and the simulator.
TEST(Q2, GridAllGatherAsOneRingTakesHalfTheDimensionOrderTime) {
  const double V = 4e6, B = 1e9, T = 1e-6;
  Builder b(4);
  b.collective(all_gather({0, 1, 2, 3}, V), false);
  topo::Topology box = topo::Topology::grid("2x2", {2, 2, 1}, {false, false, false}, spec(T));
  const double closed_form = 3 * V / 8 / B + 3 * T;  // 3 one-hop steps
  EXPECT_NEAR(evaluate_q2(b.g, box, identity(4)).seconds, closed_form, 1e-12);
  EXPECT_NEAR(evaluate_q2(b.g, box, identity(4)).seconds / simulated_seconds(b.g, box, identity(4)),
              1.0, 0.02);
}

TEST(Q2, TwoGroupsSharingALinkTakeTwiceAsLong) {
  topo::Topology t = topo::Topology::grid("2x4", {2, 4, 1}, {false, false, false}, spec());
  // (0,0)->(0,2) and (0,1)->(0,3) both cross the link (0,1)->(0,2); chips 0, 2, 4, 6.
  Builder one(8), both(8), apart(8);
  one.collective(permute({{0, 4}}, 1e6), false);
  both.collective(permute({{0, 4}, {2, 6}}, 1e6), false);
  apart.collective(permute({{0, 4}, {3, 7}}, 1e6), false);  // (1,1)->(1,3): other column
  const double t1 = evaluate_q2(one.g, t, identity(8)).seconds;
  EXPECT_NEAR(t1, 1e-3, 1e-12);
  EXPECT_NEAR(evaluate_q2(both.g, t, identity(8)).seconds, 2 * t1, 1e-12);
  EXPECT_NEAR(evaluate_q2(apart.g, t, identity(8)).seconds, t1, 1e-12);
  // Two async collectives whose windows overlap share links too; disjoint windows do not.
  Builder overlap(8), serial(8);
  int a = overlap.collective(permute({{0, 4}}, 1e6), true);
  int c = overlap.collective(permute({{2, 6}}, 1e6), true);
  overlap.done(a);
  overlap.done(c);
  a = serial.collective(permute({{0, 4}}, 1e6), true);
  serial.done(a);
  c = serial.collective(permute({{2, 6}}, 1e6), true);
  serial.done(c);
  EXPECT_NEAR(evaluate_q2(overlap.g, t, identity(8)).seconds, 2 * t1, 1e-12);
  EXPECT_NEAR(evaluate_q2(serial.g, t, identity(8)).seconds, 2 * t1, 1e-12);
  Builder overlap3(8);  // a third, link-disjoint permute in the same window costs nothing
  a = overlap3.collective(permute({{0, 4}}, 1e6), true);
  c = overlap3.collective(permute({{3, 7}}, 1e6), true);
  overlap3.done(a);
  overlap3.done(c);
  EXPECT_NEAR(evaluate_q2(overlap3.g, t, identity(8)).seconds, t1, 1e-12);
}

// A ring's permutes as XLA schedules them: each step sends what the previous one received,
// so its -start follows that one's -done, and the windows form a chain, each overlapping the
// next. Only windows that all overlap run at once: steps 1 and 2 share the link with nothing
// to hide them (2 ms), step 3 hides under the kernel after it. Merging the whole chain into
// one cluster, as Q2 once did, ran the three at once under all of the chain's compute (3 ms).
TEST(Q2, ChainedAsyncWindowsRunOneAfterAnotherAsInTheSimulator) {
  topo::Topology t = topo::Topology::grid("line2", {2, 1, 1}, {false, false, false}, spec());
  Builder b(2);
  const int k1 = b.collective(permute({{0, 1}}, 1e6), true);  // 1 ms alone on the link
  const int v1 = b.collective(permute({{0, 1}}, 1e6), true);
  b.done(k1);
  const int k2 = b.collective(permute({{0, 1}}, 1e6), true);
  b.done(v1);
  b.compute(2e9);                                            // the kernel: 2 ms
  b.done(k2);
  EXPECT_NEAR(evaluate_q2(b.g, t, identity(2)).seconds, 4e-3, 1e-12);
  EXPECT_NEAR(simulated_seconds(b.g, t, identity(2)), 4e-3, 2e-6);  // + 1 us fixed latency
}

TEST(Q2, AsyncCommunicationHidesUnderComputeInItsWindow) {
  topo::Topology t = topo::Topology::grid("2x4", {2, 4, 1}, {false, false, false}, spec());
  Builder b(8, /*repeat=*/3);
  const int c = b.collective(permute({{0, 1}}, 1e6), true);  // 1 ms of link time
  b.compute(4e8);                                          // 0.4 ms inside the window
  b.done(c);
  b.compute(1e9);                                          // 1 ms after it
  Q2Result r = evaluate_q2(b.g, t, identity(8));
  EXPECT_NEAR(r.compute_seconds, 3 * 1.4e-3, 1e-12);
  EXPECT_NEAR(r.exposed_comm_seconds, 3 * 0.6e-3, 1e-12);
  EXPECT_NEAR(r.seconds, 3 * 2.0e-3, 1e-12);
  EXPECT_NEAR(r.link_bytes[static_cast<size_t>(t.link_between(0, 1))], 3e6, 1e-6);
  double total = 0;
  for (double x : r.link_bytes) total += x;
  EXPECT_NEAR(total, 3e6, 1e-6);
}

TEST(Q2, HamiltonianCycleBeatsRowMajorForRingOf8On2x4) {
  topo::Topology t = topo::Topology::grid("2x4", {2, 4, 1}, {false, false, false}, spec(1e-6));
  std::vector<std::pair<int, int>> ring, both;
  for (int i = 0; i < 8; ++i) {
    ring.push_back({i, (i + 1) % 8});
    both.push_back({i, (i + 1) % 8});
    both.push_back({i, (i + 7) % 8});
  }
  Builder uni(8), bidi(8);
  uni.collective(permute(ring, 1e6), false);
  bidi.collective(permute(both, 1e6), false);
  place::Placement row_major = identity(8);
  // Down column x=0, back up column x=1: every ring neighbour is one hop away.
  place::Placement cycle{"cycle", {0, 2, 4, 6, 7, 5, 3, 1}};
  // One-way ring: no link carries two shards either way, but row-major's closing edge
  // (1,3)->(0,0) takes 4 hops instead of 1.
  EXPECT_NEAR(evaluate_q2(uni.g, t, cycle).seconds, 1e-3 + 1e-6, 1e-12);
  EXPECT_NEAR(evaluate_q2(uni.g, t, row_major).seconds, 1e-3 + 4e-6, 1e-12);
  // Both ways (a bidirectional ring step): row-major puts 2 shards on (0,0)->(1,0).
  EXPECT_NEAR(evaluate_q2(bidi.g, t, cycle).seconds, 1e-3 + 1e-6, 1e-12);
  EXPECT_NEAR(evaluate_q2(bidi.g, t, row_major).seconds, 2e-3 + 4e-6, 1e-12);
}

TEST(Q2, EvaluatorMatchesEvaluateQ2AndDeduplicatesPatterns) {
  topo::Topology t = topo::Topology::grid("4x4", {4, 4, 1}, {false, false, false}, spec(1e-6));
  Builder b(16, 2);
  for (int k = 0; k < 3; ++k) {
    int c = b.collective(all_gather({0, 1, 2, 3}, 4e6 * (k + 1)), true);
    b.compute(1e8);
    b.done(c);
  }
  int x = b.collective(all_gather({0, 4, 8, 12}, 1e6), true);
  int y = b.collective(permute({{0, 5}, {5, 10}}, 1e6), true);
  b.compute(1e7);
  b.done(x);
  b.done(y);
  Q2Evaluator e(b.g, t);
  EXPECT_EQ(e.num_patterns(), 3);
  place::Placement p{"p", {15, 2, 7, 0, 1, 3, 4, 5, 6, 8, 9, 10, 11, 12, 13, 14}};
  for (const place::Placement& pl : {identity(16), p}) {
    Q2Result full = evaluate_q2(b.g, t, pl);
    EXPECT_NEAR(e.seconds(pl.device_of), full.seconds, 1e-15);
    // The compute part is the placement-free roofline: 2 runs x (3 x 1e8 + 1e7) flops at
    // 1e12 flop/s (a lost repeat or a dropped op would show here).
    EXPECT_NEAR(full.compute_seconds, 2 * 3.1e8 / 1e12, 1e-15);
    Q2Result fast = e.evaluate(pl.device_of);
    EXPECT_NEAR(fast.compute_seconds, full.compute_seconds, 1e-15);
    EXPECT_NEAR(fast.exposed_comm_seconds, full.exposed_comm_seconds, 1e-15);
    EXPECT_GE(full.comm_seconds, full.exposed_comm_seconds);
  }
}

}  // namespace
}  // namespace aoizora::cost
