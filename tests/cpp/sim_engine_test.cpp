// Closed-form checks of the event engine, with hand-made flows on Topology::grid routes.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "aoizora/sim/simulator.h"
#include "sim_testing.h"

namespace aoizora::sim {
namespace {

using hlo::CollectiveKind;
using hlo::OpKind;

constexpr double kBw = 1e10;    // bytes/s per directed link
constexpr double kLat = 1e-6;   // s per hop
constexpr double kOver = 2e-6;  // s per collective
constexpr double kPeak = 1e12;  // FLOP/s

topo::ChipSpec Spec() {
  topo::ChipSpec s;
  s.generation = "test";
  s.peak_flops = kPeak;
  s.hbm_bandwidth = 1e11;
  s.link_bandwidth = kBw;
  s.hop_latency = kLat;
  return s;
}

SimOptions Options() {
  SimOptions o;
  o.collective_overhead = kOver;
  o.max_iterations = 0;
  return o;
}

place::Placement Identity(int n) {
  place::Placement p;
  p.device_of.resize(n);
  std::iota(p.device_of.begin(), p.device_of.end(), 0);
  return p;
}

// Builds a graph op by op.
struct GraphBuilder {
  hlo::CollectiveGraph g;
  explicit GraphBuilder(int n) {
    g.num_partitions = n;
    g.regions.emplace_back();
    g.regions.back().name = "entry";
  }
  GraphBuilder& Region(int64_t repeat) {
    g.regions.emplace_back();
    g.regions.back().name = "body" + std::to_string(g.regions.size() - 1);
    g.regions.back().repeat = repeat;
    return *this;
  }
  GraphBuilder& Compute(double flops, std::string name = "") {
    hlo::ScheduledOp op;
    op.name = name.empty() ? "fusion." + std::to_string(g.regions.back().ops.size()) : name;
    op.opcode = "fusion";
    op.flops = flops;
    g.regions.back().ops.push_back(op);
    return *this;
  }
  // A collective over groups; async adds a -start now and returns its index for Done().
  int Collective(CollectiveKind kind, std::vector<std::vector<int>> groups, int64_t bytes,
                 bool async = false) {
    hlo::Collective c;
    c.name = std::string(hlo::to_string(kind)) + "." + std::to_string(g.collectives.size());
    c.kind = kind;
    c.groups = std::move(groups);
    c.operand_bytes = c.result_bytes = bytes;
    c.async = async;
    c.region = static_cast<int>(g.regions.size()) - 1;
    c.repeat = g.regions.back().repeat;
    c.start_op = c.done_op = static_cast<int>(g.regions.back().ops.size());
    hlo::ScheduledOp op;
    op.name = c.name + (async ? "-start" : "");
    op.kind = async ? OpKind::kCollectiveStart : OpKind::kCollective;
    op.collective = static_cast<int>(g.collectives.size());
    g.regions.back().ops.push_back(op);
    g.collectives.push_back(c);
    return op.collective;
  }
  void Done(int coll) {
    hlo::ScheduledOp op;
    op.name = g.collectives[coll].name + "-done";
    op.kind = OpKind::kCollectiveDone;
    op.collective = coll;
    g.collectives[coll].done_op = static_cast<int>(g.regions.back().ops.size());
    g.regions.back().ops.push_back(op);
  }
};

// Unidirectional ring algorithms over each group in its listed order (what the flow expansion
// would produce for a ring), so the engine can be checked against closed forms.
cost::CollectiveFlows RingFlows(const hlo::Collective& c, const place::Placement& p) {
  cost::CollectiveFlows out;
  for (const auto& g : c.groups) {
    const int n = static_cast<int>(g.size());
    if (n < 2) continue;
    double chunk = 0;
    int steps = n - 1;
    if (c.kind == CollectiveKind::kAllGather) chunk = static_cast<double>(c.result_bytes) / n;
    if (c.kind == CollectiveKind::kReduceScatter) chunk = static_cast<double>(c.operand_bytes) / n;
    if (c.kind == CollectiveKind::kAllReduce) {
      chunk = static_cast<double>(c.operand_bytes) / n;
      steps = 2 * (n - 1);
    }
    for (int s = 0; s < steps; ++s)
      for (int i = 0; i < n; ++i)
        out.flows.push_back({p.device_of[g[i]], p.device_of[g[(i + 1) % n]], chunk, s});
    out.num_steps = std::max(out.num_steps, steps);
  }
  return out;
}

FlowModel RingModel(const topo::Topology& t, const place::Placement& p) {
  return FlowModel{[&p](const hlo::Collective& c) { return RingFlows(c, p); },
                   [&t](int a, int b) {
                     auto r = t.route(a, b);
                     return std::vector<int>(r.begin(), r.end());
                   }};
}

void ExpectAccounted(const SimResult& r, const place::Placement& p) {
  for (int c : p.device_of) {
    const ChipTime& t = r.chips[c];
    EXPECT_NEAR(t.compute + t.comm + t.idle, r.step_seconds, 1e-12 + 1e-9 * r.step_seconds)
        << "chip " << c;
    EXPECT_GE(t.idle, -1e-15);
    EXPECT_GE(t.comm, -1e-15);
  }
}

class SimRing : public ::testing::TestWithParam<CollectiveKind> {};

// An uncontended ring on an 8-chip torus: (steps) x (chunk / bandwidth + one hop) + overhead.
TEST_P(SimRing, MatchesClosedForm) {
  const int n = 8;
  topo::Topology t = topo::Topology::grid("ring8", {n, 1, 1}, {true, false, false}, Spec());
  place::Placement p = Identity(n);
  GraphBuilder b(n);
  const int64_t bytes = 64 << 20;
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  b.Collective(GetParam(), {all}, bytes);
  SimResult r = Ok(simulate_with(b.g, t, p, Options(), RingModel(t, p)));
  const double chunk = static_cast<double>(bytes) / n;
  const int steps = GetParam() == CollectiveKind::kAllReduce ? 2 * (n - 1) : n - 1;
  const double expected = kOver + steps * (chunk / kBw + kLat);
  EXPECT_NEAR(r.step_seconds, expected, 1e-9 * expected);  // the engine is exact here
  // Each ring link (i -> i+1) carries steps x chunk; the reverse links nothing.
  for (int i = 0; i < n; ++i) {
    const int l = t.link_between(i, (i + 1) % n);
    ASSERT_GE(l, 0);
    EXPECT_DOUBLE_EQ(r.link_bytes[l], steps * chunk);
    EXPECT_NEAR(r.link_utilization[l], steps * chunk / (kBw * r.step_seconds), 1e-12);
    EXPECT_DOUBLE_EQ(r.link_bytes[t.link_between((i + 1) % n, i)], 0.0);
  }
  EXPECT_EQ(r.flows, static_cast<int64_t>(steps) * n);
  EXPECT_EQ(r.collectives, 1);
  for (int c = 0; c < n; ++c) {
    EXPECT_NEAR(r.chips[c].comm, expected, 1e-9 * expected);
    EXPECT_NEAR(r.chips[c].idle, 0.0, 1e-12);
  }
  ASSERT_FALSE(r.critical_path.empty());
  EXPECT_EQ(r.critical_path[0].kind, hlo::to_string(GetParam()));
  EXPECT_NEAR(r.critical_path_seconds, expected, 1e-9 * expected);
  // The same ring listed the other way round (7, 6, ..., 0) goes the short way round too:
  // one hop each on the reverse links (0 -> 7 over the wraparound), in the same time.
  GraphBuilder back(n);
  back.Collective(GetParam(), {std::vector<int>(all.rbegin(), all.rend())}, bytes);
  SimResult rb = Ok(simulate_with(back.g, t, p, Options(), RingModel(t, p)));
  EXPECT_NEAR(rb.step_seconds, expected, 1e-9 * expected);
  for (int i = 0; i < n; ++i)
    EXPECT_DOUBLE_EQ(rb.link_bytes[t.link_between((i + 1) % n, i)], steps * chunk) << i;
}

INSTANTIATE_TEST_SUITE_P(Kinds, SimRing,
                         ::testing::Values(CollectiveKind::kAllGather,
                                           CollectiveKind::kReduceScatter,
                                           CollectiveKind::kAllReduce));

// Flows the test spells out per collective (by index), whatever the groups say.
FlowModel FixedModel(const topo::Topology& t,
                     std::vector<std::vector<cost::Flow>> per_collective,
                     const hlo::CollectiveGraph& g) {
  return FlowModel{[per_collective, &g](const hlo::Collective& c) {
                     cost::CollectiveFlows out;
                     for (size_t i = 0; i < g.collectives.size(); ++i)
                       if (g.collectives[i].name == c.name) out.flows = per_collective[i];
                     for (auto& f : out.flows) out.num_steps = std::max(out.num_steps, f.step + 1);
                     return out;
                   },
                   [&t](int a, int b) {
                     auto r = t.route(a, b);
                     return std::vector<int>(r.begin(), r.end());
                   }};
}

// Two groups of one collective on a 4-chip line: 0->3 (S bytes, 3 hops) and 1->2 (2S bytes)
// share link 1->2. Both get half of it until the short one drains at 2S/B; the other then
// sends its last S at the full rate: 3S/B.
TEST(SimEngine, TwoGroupsShareALink) {
  topo::Topology t = topo::Topology::grid("line4", {4, 1, 1}, {false, false, false}, Spec());
  place::Placement p = Identity(4);
  GraphBuilder b(4);
  const double S = 1e6;
  b.Collective(CollectiveKind::kCollectivePermute, {{0, 3}, {1, 2}}, 0);
  FlowModel m = FixedModel(t, {{{0, 3, S, 0}, {1, 2, 2 * S, 0}}}, b.g);
  SimResult r = Ok(simulate_with(b.g, t, p, Options(), m));
  const double g03 = kOver + 2 * S / kBw + 3 * kLat;
  const double g12 = kOver + 3 * S / kBw + kLat;
  EXPECT_NEAR(r.step_seconds, std::max(g03, g12), 1e-12);
  EXPECT_NEAR(r.chips[0].comm, g03, 1e-12);
  EXPECT_NEAR(r.chips[3].comm, g03, 1e-12);
  EXPECT_NEAR(r.chips[1].comm, g12, 1e-12);
  EXPECT_NEAR(r.chips[0].idle, g12 - g03, 1e-12);
  EXPECT_DOUBLE_EQ(r.link_bytes[t.link_between(1, 2)], 3 * S);
  EXPECT_DOUBLE_EQ(r.link_bytes[t.link_between(0, 1)], S);
  ExpectAccounted(r, p);
}

// Lanes are independent sequences of steps (the colours of a torus, cost/flow.h). On a 3-chip
// line, lane 0 sends S from 0 to 1 and then s back; lane 1 sends s from 2 to 1 and then s
// back. Chip 2's second step waits only for its lane's inflow, so its part is over after two
// small steps; were both in one lane it would wait for the big S too.
TEST(SimEngine, LanesStepIndependently) {
  topo::Topology t = topo::Topology::grid("line3", {3, 1, 1}, {false, false, false}, Spec());
  GraphBuilder b(3);
  const double S = 1e6, s = 1e3;
  b.Collective(CollectiveKind::kAllGather, {{0, 1, 2}}, 0);
  const auto flows = [&](int lane) {
    return std::vector<cost::Flow>{
        {0, 1, S, 0, 0}, {1, 0, s, 1, 0}, {2, 1, s, 0, lane}, {1, 2, s, 1, lane}};
  };
  SimResult two = Ok(simulate_with(b.g, t, Identity(3), Options(), FixedModel(t, {flows(1)}, b.g)));
  SimResult one = Ok(simulate_with(b.g, t, Identity(3), Options(), FixedModel(t, {flows(0)}, b.g)));
  EXPECT_NEAR(two.chips[2].comm, kOver + 2 * (s / kBw + kLat), 1e-12);
  EXPECT_NEAR(one.chips[2].comm, kOver + S / kBw + s / kBw + 2 * kLat, 1e-12);
  // The collective ends with lane 0 either way.
  EXPECT_NEAR(two.step_seconds, one.step_seconds, 1e-12);
}

// Without the shared link (the 1->2 group moved to 2->1), each group runs at full rate.
TEST(SimEngine, OppositeDirectionsDoNotShare) {
  topo::Topology t = topo::Topology::grid("line4", {4, 1, 1}, {false, false, false}, Spec());
  place::Placement p = Identity(4);
  GraphBuilder b(4);
  const double S = 1e6;
  b.Collective(CollectiveKind::kCollectivePermute, {{0, 3}, {1, 2}}, 0);
  FlowModel m = FixedModel(t, {{{0, 3, S, 0}, {2, 1, 2 * S, 0}}}, b.g);
  SimResult r = Ok(simulate_with(b.g, t, p, Options(), m));
  EXPECT_NEAR(r.chips[0].comm, kOver + S / kBw + 3 * kLat, 1e-12);
  EXPECT_NEAR(r.step_seconds, kOver + 2 * S / kBw + kLat, 1e-12);
}

// A collective starts when its slowest member arrives: X keeps 0 and 1 busy, then Y over all
// four waits for them; chips 2 and 3 idle for exactly X's transfer.
TEST(SimEngine, CollectiveWaitsForSlowestMember) {
  topo::Topology t = topo::Topology::grid("line4", {4, 1, 1}, {false, false, false}, Spec());
  place::Placement p = Identity(4);
  GraphBuilder b(4);
  const double S = 4e6;
  b.Collective(CollectiveKind::kCollectivePermute, {{0, 1}, {2}, {3}}, 0);
  b.Collective(CollectiveKind::kAllReduce, {{0, 1, 2, 3}}, 0);
  FlowModel m = FixedModel(t, {{{0, 1, S, 0}}, {}}, b.g);
  SimResult r = Ok(simulate_with(b.g, t, p, Options(), m));
  const double x = S / kBw + kLat;
  EXPECT_NEAR(r.step_seconds, 2 * kOver + x, 1e-12);
  EXPECT_NEAR(r.chips[2].idle, x, 1e-12);
  EXPECT_NEAR(r.chips[2].comm, 2 * kOver, 1e-12);
  EXPECT_NEAR(r.chips[0].idle, 0.0, 1e-12);
  ExpectAccounted(r, p);
  // The critical path runs through X's transfer.
  ASSERT_FALSE(r.critical_path.empty());
  EXPECT_EQ(r.critical_path[0].name, b.g.collectives[0].name);
  EXPECT_NEAR(r.critical_path[0].seconds, kOver + x, 1e-12);
}

// A member goes on once its own flows are delivered, while the rest of its group still
// communicates: chips 0 and 1 exchange S, chips 2 and 3 ten times as much.
TEST(SimEngine, MembersFinishTheirOwnPart) {
  topo::Topology t = topo::Topology::grid("line4", {4, 1, 1}, {false, false, false}, Spec());
  place::Placement p = Identity(4);
  GraphBuilder b(4);
  const double S = 1e6;
  b.Collective(CollectiveKind::kAllToAll, {{0, 1, 2, 3}}, 0);
  b.Compute(1e6);  // 1 us
  FlowModel m = FixedModel(t, {{{0, 1, S, 0}, {3, 2, 10 * S, 0}}}, b.g);
  SimResult r = Ok(simulate_with(b.g, t, p, Options(), m));
  const double fast = kOver + S / kBw + kLat, slow = kOver + 10 * S / kBw + kLat;
  EXPECT_NEAR(r.step_seconds, slow + 1e-6, 1e-12);
  EXPECT_NEAR(r.chips[0].comm, fast, 1e-12);
  EXPECT_NEAR(r.chips[0].idle, slow - fast, 1e-12);
  EXPECT_NEAR(r.chips[3].comm, slow, 1e-12);
  ExpectAccounted(r, p);
}

// Skew from compute: all members run the same ops, so make one group's prior collective slow
// and check the next collective starts at its members' max arrival plus compute.
TEST(SimEngine, ComputeIsRooflineAndSkewPropagates) {
  topo::Topology t = topo::Topology::grid("line2", {2, 1, 1}, {false, false, false}, Spec());
  place::Placement p = Identity(2);
  GraphBuilder b(2);
  b.Compute(1e9);  // 1 ms at 1e12 FLOP/s
  hlo::ScheduledOp mem;
  mem.name = "copy";
  mem.flops = 1e3;
  mem.bytes = 1e8;  // 1 ms at 1e11 B/s: memory bound
  b.g.regions.back().ops.push_back(mem);
  SimResult r = Ok(simulate_with(b.g, t, p, Options(), RingModel(t, p)));
  EXPECT_NEAR(r.step_seconds, 2e-3, 1e-15);
  EXPECT_NEAR(r.compute_bound_seconds, 2e-3, 1e-15);
  EXPECT_NEAR(r.chips[0].compute, 2e-3, 1e-15);
}

// Step dependencies: chip 1 forwards at step 1 only after its step-0 inflow is delivered;
// chip 3's step-1 flow has no step-0 inflow to wait for.
TEST(SimEngine, StepsWaitForInflows) {
  topo::Topology t = topo::Topology::grid("line4", {4, 1, 1}, {false, false, false}, Spec());
  place::Placement p = Identity(4);
  GraphBuilder b(4);
  const double S = 1e6;
  b.Collective(CollectiveKind::kAllGather, {{0, 1, 2, 3}}, 0);
  FlowModel m = FixedModel(t, {{{0, 1, S, 0}, {1, 2, S, 1}, {3, 2, S / 2, 1}}}, b.g);
  SimResult r = Ok(simulate_with(b.g, t, p, Options(), m));
  EXPECT_NEAR(r.step_seconds, kOver + 2 * (S / kBw + kLat), 1e-12);
}

// Chip 0 sends at steps 0 and 1 with no inflow to wait for; chip 1 forwards at step 1 what
// it got at step 0. Step-synchronous (the default): chip 0's step 1 waits for its step-0
// send, so the step-0 chunk gets the whole link. Without it the two steps of chip 0 share the
// link and the forward starts a chunk later.
TEST(SimEngine, StepsWaitForOwnSends) {
  topo::Topology t = topo::Topology::grid("line4", {4, 1, 1}, {false, false, false}, Spec());
  place::Placement p = Identity(4);
  GraphBuilder b(4);
  const double S = 1e6;
  b.Collective(CollectiveKind::kAllGather, {{0, 1, 2, 3}}, 0);
  FlowModel m = FixedModel(t, {{{0, 1, S, 0}, {0, 1, S, 1}, {1, 2, S, 1}}}, b.g);
  SimOptions o = Options();
  SimResult sync = Ok(simulate_with(b.g, t, p, o, m));
  EXPECT_NEAR(sync.step_seconds, kOver + 2 * S / kBw + 2 * kLat, 1e-12);
  o.steps_wait_for_sends = false;
  SimResult ahead = Ok(simulate_with(b.g, t, p, o, m));
  EXPECT_NEAR(ahead.step_seconds, kOver + 3 * S / kBw + 2 * kLat, 1e-12);
}

// An async collective overlaps the compute between its start and done.
TEST(SimEngine, AsyncOverlapsCompute) {
  const int n = 8;
  topo::Topology t = topo::Topology::grid("ring8", {n, 1, 1}, {true, false, false}, Spec());
  place::Placement p = Identity(n);
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  const int64_t bytes = 8 << 20;
  const double comm = kOver + (n - 1) * (bytes / n / kBw + kLat);
  for (double flops : {1e8, 1e9}) {  // compute 0.1 ms < comm, 1 ms > comm
    GraphBuilder b(n);
    int c = b.Collective(CollectiveKind::kAllGather, {all}, bytes, /*async=*/true);
    b.Compute(flops);
    b.Done(c);
    SimResult r = Ok(simulate_with(b.g, t, p, Options(), RingModel(t, p)));
    EXPECT_NEAR(r.step_seconds, std::max(comm, flops / kPeak), 1e-12) << flops;
    ExpectAccounted(r, p);
    GraphBuilder s(n);
    s.Collective(CollectiveKind::kAllGather, {all}, bytes);
    s.Compute(flops);
    SimResult rs = Ok(simulate_with(s.g, t, p, Options(), RingModel(t, p)));
    EXPECT_NEAR(rs.step_seconds, comm + flops / kPeak, 1e-12) << flops;
  }
}

// A repeated region with contention and overlap: simulating 3 iterations and extrapolating
// gives the same step time, stats and link bytes as simulating all 12.
TEST(SimEngine, ExtrapolationEqualsFullSimulation) {
  topo::Topology t = topo::Topology::grid("2x4", {2, 4, 1}, {false, false, false}, Spec());
  place::Placement p;
  p.device_of = {0, 3, 5, 6, 1, 2, 4, 7};  // rings that cross each other
  GraphBuilder b(8);
  b.Compute(1e7, "embed");
  b.Region(12);
  b.Compute(2e7, "qkv");
  int ag = b.Collective(CollectiveKind::kAllGather, {{0, 1, 2, 3}, {4, 5, 6, 7}}, 4 << 20, true);
  b.Compute(5e7, "attn");
  b.Done(ag);
  b.Collective(CollectiveKind::kAllReduce, {{0, 4}, {1, 5}, {2, 6}, {3, 7}}, 2 << 20);
  b.Region(1);
  b.Compute(1e7, "head");
  SimOptions full = Options();
  SimOptions fast = Options();
  fast.max_iterations = 3;
  SimResult a = Ok(simulate_with(b.g, t, p, full, RingModel(t, p)));
  SimResult e = Ok(simulate_with(b.g, t, p, fast, RingModel(t, p)));
  EXPECT_FALSE(a.extrapolated);
  EXPECT_TRUE(e.extrapolated);
  EXPECT_LT(e.flows, a.flows);
  EXPECT_NEAR(e.step_seconds, a.step_seconds, 1e-9 * a.step_seconds);
  for (int c = 0; c < 8; ++c) {
    EXPECT_NEAR(e.chips[c].compute, a.chips[c].compute, 1e-9 * a.step_seconds);
    EXPECT_NEAR(e.chips[c].comm, a.chips[c].comm, 1e-9 * a.step_seconds);
    EXPECT_NEAR(e.chips[c].idle, a.chips[c].idle, 1e-9 * a.step_seconds);
  }
  for (size_t l = 0; l < t.links.size(); ++l)
    EXPECT_NEAR(e.link_bytes[l], a.link_bytes[l], 1e-6);
  EXPECT_NEAR(e.critical_path_seconds, a.critical_path_seconds, 1e-6 * a.step_seconds);
  ExpectAccounted(a, p);
  ExpectAccounted(e, p);
  EXPECT_GE(a.step_seconds, a.compute_bound_seconds);
}

// A group whose member never arrives (partition 1 listed in two groups joins only the
// second) blocks chip 0 forever: the run is an error naming the collective, not a short step.
TEST(SimEngine, UnfinishedChipIsADeadlockError) {
  topo::Topology t = topo::Topology::grid("line3", {3, 1, 1}, {false, false, false}, Spec());
  place::Placement p = Identity(3);
  GraphBuilder b(3);
  b.Compute(1e9, "before");
  b.Collective(CollectiveKind::kAllReduce, {{0, 1}, {1, 2}}, 1 << 20);
  b.Compute(1e9, "after");
  Result<SimResult> r = simulate_with(b.g, t, p, Options(), RingModel(t, p));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("deadlock"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("partition 0"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("all-reduce.0"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("1 of 2 members arrived"), std::string::npos)
      << r.error().message;
}

TEST(SimEngine, CheckInputsRejectsBadPlacements) {
  topo::Topology t = topo::Topology::grid("line4", {4, 1, 1}, {false, false, false}, Spec());
  GraphBuilder b(4);
  b.Collective(CollectiveKind::kAllReduce, {{0, 1, 2, 3}}, 8);
  place::Placement p = Identity(3);
  EXPECT_FALSE(check_inputs(b.g, t, p).ok());
  p = Identity(4);
  p.device_of[3] = 0;
  EXPECT_NE(check_inputs(b.g, t, p).error().message.find("two partitions"), std::string::npos);
  p.device_of[3] = 9;
  EXPECT_FALSE(check_inputs(b.g, t, p).ok());
  p = Identity(4);
  EXPECT_TRUE(check_inputs(b.g, t, p).ok());
}

TEST(SimEngine, TimelineRecordsSlicesAndLinkRates) {
  const int n = 4;
  topo::Topology t = topo::Topology::grid("ring4", {n, 1, 1}, {true, false, false}, Spec());
  place::Placement p = Identity(n);
  GraphBuilder b(n);
  b.Compute(1e6, "pre");
  b.Collective(CollectiveKind::kAllGather, {{0, 1, 2, 3}}, 1 << 20);
  SimOptions o = Options();
  o.record_timeline = true;
  SimResult r = Ok(simulate_with(b.g, t, p, o, RingModel(t, p)));
  int compute = 0, comm = 0;
  for (const Slice& s : r.timeline.slices) {
    EXPECT_LE(s.start, s.end);
    if (s.kind == SliceKind::kCompute) {
      ++compute;
      EXPECT_EQ(r.timeline.labels[s.label], "pre");
    }
    if (s.kind == SliceKind::kCollectiveComm) ++comm;
  }
  EXPECT_EQ(compute, n);
  EXPECT_EQ(comm, n);
  // Every ring link goes busy at full bandwidth and back to zero.
  const int l = t.link_between(0, 1);
  std::vector<double> rates;
  for (const LinkSample& s : r.timeline.links)
    if (s.link == l) rates.push_back(s.bytes_per_second);
  ASSERT_GE(rates.size(), 2u);
  EXPECT_DOUBLE_EQ(rates.front(), kBw);
  EXPECT_DOUBLE_EQ(rates.back(), 0.0);
}

}  // namespace
}  // namespace aoizora::sim
