// cost/q1.h: Stage 1's cost of a prediction DAG (Q1): ring bandwidth per mesh axis, and
// which communication hides under compute.
#include "aoizora/cost/q1.h"

#include "aoizora/cost/best_group.h"
#include "aoizora/topo/catalog.h"

#include <gtest/gtest.h>

#include <cmath>
#include <utility>
#include <vector>

namespace aoizora::shlo {
namespace {

TEST(ShloQ1, RingClosedFormsAndOverlapWindows) {
  cost::Q1Params p;
  p.chip.link_bandwidth = 50e9;
  p.chip.hop_latency = 0;
  p.slice_dims = {4, 4, 1};
  p.slice_wrap = {false, false, false};
  // Axis of 4 fits a 2x2 sub-grid (Hamiltonian cycle): bidirectional ring, 2 links.
  EXPECT_DOUBLE_EQ(cost::best_axis_bandwidth(4, p), 100e9);
  EXPECT_DOUBLE_EQ(cost::best_axis_bandwidth(2, p), 50e9);   // one link between two chips
  EXPECT_DOUBLE_EQ(cost::best_axis_bandwidth(3, p), 50e9);   // odd: a line
  EXPECT_TRUE(std::isinf(cost::best_axis_bandwidth(1, p)));
  cost::Q1Params wrap = p;
  wrap.slice_dims = {16, 1, 1};
  wrap.slice_wrap = {true, false, false};
  EXPECT_DOUBLE_EQ(cost::best_axis_bandwidth(16, wrap), 100e9);
  cost::Q1Params line = p;
  line.slice_dims = {8, 1, 1};
  EXPECT_DOUBLE_EQ(cost::best_axis_bandwidth(8, line), 50e9);  // a line, no wraparound

  PredictionDag d;
  d.mesh = "mesh";
  d.meshes = MeshTable{{Mesh{"mesh", {{"x", 4}}}}};
  DagNode matmul;
  matmul.op = "stablehlo.dot_general";
  matmul.flops = 197e12 * 0.010;  // 10 ms at peak
  matmul.bytes = 1;
  DagNode ag;
  ag.kind = DagNode::Kind::kComm;
  ag.comm = CommKind::kAllGather;
  ag.axes = {shlo::AxisRef{"x"}};
  ag.group_size = 4;
  ag.result_bytes = 4e9;           // (3/4) * 4 GB / 100 GB/s = 30 ms
  ag.overlappable = true;          // a weight: prefetchable
  DagNode consumer = matmul;
  consumer.deps = {1};
  p.chip.peak_flops = 197e12;
  d.nodes = {matmul, ag, consumer};
  cost::Q1Breakdown q = cost::q1(d, p);
  EXPECT_NEAR(q.compute, 0.020, 1e-12);
  EXPECT_NEAR(q.overlappable_comm, 0.030, 1e-12);
  // The gather hides under the one matmul before its consumer: 30 - 10 ms exposed.
  EXPECT_NEAR(q.exposed_comm, 0.020, 1e-12);
  EXPECT_NEAR(q.q1, 0.040, 1e-12);
  // An activation gather cannot run alongside the matmul that produces what it gathers.
  d.nodes[1].overlappable = false;
  d.nodes[1].deps = {0};
  EXPECT_NEAR(cost::q1(d, p).q1, 0.050, 1e-12);
  // A reduction of partial sums is a barrier.
  d.nodes[1].comm = CommKind::kAllReduce;
  d.nodes[1].operand_bytes = 4e9;  // 2 x (3/4) x 4 GB / 100 GB/s = 60 ms
  EXPECT_NEAR(cost::q1(d, p).barrier_comm, 0.060, 1e-12);
  EXPECT_NEAR(cost::q1(d, p).q1, 0.080, 1e-12);
  EXPECT_NEAR(cost::q1(d, p).comm_by_axis.at("x"), 0.060, 1e-12);
}

// A ring step's K and V permutes run alongside the ring's kernels and share them: an unrolled
// ring inside a layer does not hide its permutes under the whole layer (each one under all of
// it, as Q1 once did), a chain of steps hides only its last, and a rolled ring loop hides
// them under its own body once.
TEST(ShloQ1, RingStepPermutesShareTheComputeBetweenOperandAndConsumer) {
  cost::Q1Params p;
  p.chip.peak_flops = 197e12;
  p.chip.link_bandwidth = 50e9;
  p.chip.hop_latency = 0;
  PredictionDag d;
  d.mesh = "mesh";
  d.meshes = MeshTable{{Mesh{"mesh", {{"x", 4}}}}};
  auto compute = [](double seconds, std::vector<int> deps, double repeat = 1) {
    DagNode c;
    c.flops = 197e12 * seconds;
    c.bytes = 1;
    c.deps = std::move(deps);
    c.repeat = repeat;
    return c;
  };
  auto permute = [](std::vector<int> deps, double repeat = 1) {
    DagNode c;
    c.kind = DagNode::Kind::kComm;
    c.comm = CommKind::kCollectivePermute;
    c.axes = {shlo::AxisRef{"x"}};
    c.group_size = 4;
    c.operand_bytes = 150e6;  // 3 ms on a 50 GB/s link
    c.overlappable = true;
    c.deps = std::move(deps);
    c.repeat = repeat;
    return c;
  };
  // K/V heads (1 ms), kernel of step 0 (4 ms), permute K and V (3 ms each), kernel of step 1,
  // the rest of the layer (20 ms).
  d.nodes = {compute(0.001, {}), compute(0.004, {0}), permute({0}), permute({0}),
             compute(0.004, {2, 3}), compute(0.020, {4})};
  cost::Q1Breakdown q = cost::q1(d, p);
  EXPECT_NEAR(q.compute, 0.029, 1e-12);
  EXPECT_NEAR(q.overlappable_comm, 0.006, 1e-12);
  EXPECT_NEAR(q.exposed_comm, 0.002, 1e-12);  // 6 ms of permutes under 4 ms of kernel
  EXPECT_NEAR(q.q1, 0.031, 1e-12);
  // A rolled ring loop of 8 steps: the permutes' result is carried to the next iteration (no
  // later consumer); they hide under the loop body's kernel, once, not under the layer after.
  d.nodes = {compute(0.004, {}, 8), permute({}, 8), permute({}, 8), compute(0.020, {0})};
  q = cost::q1(d, p);
  EXPECT_NEAR(q.exposed_comm, 8 * 0.002, 1e-12);
  // A ring of 3 steps, unrolled: step 2 sends what step 1 received. XLA issues the chain back
  // to back; step 1's permutes (6 ms) are exposed, step 2's hide under kernels 0 and 1.
  d.nodes = {compute(0.001, {}),     compute(0.004, {0}),    permute({0}), permute({0}),
             compute(0.004, {2, 3}), permute({2}),           permute({3}),
             compute(0.004, {5, 6}), compute(0.020, {7})};
  q = cost::q1(d, p);
  EXPECT_NEAR(q.compute, 0.033, 1e-12);
  EXPECT_NEAR(q.exposed_comm, 0.006, 1e-12);
  // The same ring as tokamax's ring kernel lowers it (send, then work): each step sends its
  // K/V on before its kernel reads them, and XLA issues each step's permutes when the
  // previous ones are done, alongside that step's kernel (the compiled schedule of dp2-ring4,
  // Wan 1.3B on v5e:2x4). Step 0's permutes (6 ms) hide 4 ms under kernel 0, step 1's 4 ms
  // under kernel 1: 4 ms exposed, where the back-to-back chain above exposes 6.
  d.nodes = {compute(0.001, {}),  permute({0}),          permute({0}),
             compute(0.004, {0}), permute({1}),          permute({2}),
             compute(0.004, {1, 2}), compute(0.004, {4, 5}), compute(0.020, {7})};
  q = cost::q1(d, p);
  EXPECT_NEAR(q.compute, 0.033, 1e-12);
  EXPECT_NEAR(q.exposed_comm, 0.004, 1e-12);
}

// A ring step's permute runs round its whole cycle at once. On TPU7x (two cores per chip) a
// ring of 8 over the cores of 4 chips crosses ICI on half its hops, so a step costs V over one
// ICI link; priced as one pair on the chip's cores (the die-to-die link, 13x faster), Q1 put
// Wan 1.3B ring8 at 29 ms where its compiled program simulates 63 ms.
TEST(ShloQ1, ARingPermuteIsPricedOnItsWholeCycle) {
  Result<topo::Topology> t = topo::make_topology("tpu7x:2x2x1");
  ASSERT_TRUE(t.ok());
  cost::BestGroupCosts groups(*t);
  cost::Q1Params p;
  p.chip = t->spec;
  p.group_costs = &groups;
  p.core_axis = "context";
  MeshTable meshes{{Mesh{"mesh", {{"context", 8}}}}};
  DagNode n;
  n.kind = DagNode::Kind::kComm;
  n.comm = CommKind::kCollectivePermute;
  n.axes = {shlo::AxisRef{"context"}};
  n.group_size = 2;
  n.operand_bytes = 1e9;
  n.overlappable = true;
  n.cycle_length = 8;
  const double ici = 1e9 / t->spec.link_bandwidth;
  const double die = 1e9 / t->spec.intra_chip_link->bandwidth;
  EXPECT_NEAR(cost::collective_seconds(n, meshes, "mesh", p), ici, 0.01 * ici);
  n.cycle_length = 2;  // a swap of the two cores of each chip
  EXPECT_NEAR(cost::collective_seconds(n, meshes, "mesh", p), die, 0.01 * die);
}

}  // namespace
}  // namespace aoizora::shlo
