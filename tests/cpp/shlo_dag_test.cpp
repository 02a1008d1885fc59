// The prediction DAG on real lowered probes (closed forms checked against the compiled HLO
// of the same probes, tests/python/test_stage1.py) and on hand-written snippets.
#include <gtest/gtest.h>

#include <cmath>

#include "aoizora/cost/best_group.h"
#include "aoizora/cost/q1.h"
#include "aoizora/shlo/dag_builder.h"
#include "aoizora/shlo/parser.h"
#include "aoizora/shlo/propagate.h"
#include "aoizora/shlo/reshard.h"
#include "aoizora/stage1/candidate_analysis.h"
#include "aoizora/stage1/top_k.h"
#include "aoizora/topo/catalog.h"
#include "shlo_testdata.h"

namespace aoizora::shlo {
namespace {

PredictionDag dag_of(const char* text) {
  Result<Module> m = parse_module(text);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  Result<PredictionDag> d = build_dag(*m);
  EXPECT_TRUE(d.ok()) << d.error().to_string();
  return std::move(d).value();
}

std::vector<const DagNode*> comms(const PredictionDag& d) {
  std::vector<const DagNode*> out;
  for (const DagNode& n : d.nodes)
    if (n.kind == DagNode::Kind::kComm) out.push_back(&n);
  return out;
}

TEST(ShloDag, MatmulImplicitCommunication) {
  // h = x[data,model] @ w1[model,-]: contraction over "model" on both sides -> partial sums,
  // constrained to [data, model] -> reduce-scatter of the local [512, 2048] bf16 (2 MiB).
  // out = h[data,model] @ w2[-,model] -> [data,-]: gathering h's contraction dim (2 MiB result)
  // is cheaper than moving w2 and all-reducing; then the [data,model] result is gathered.
  PredictionDag d = dag_of(testdata::kMatmul);
  auto c = comms(d);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0]->comm, CommKind::kReduceScatter);
  EXPECT_EQ(c[0]->origin, CommOrigin::kContraction);
  EXPECT_EQ(c[0]->axes, (std::vector<std::string>{"model"}));
  EXPECT_EQ(c[0]->group_size, 4);
  EXPECT_DOUBLE_EQ(c[0]->operand_bytes, 512.0 * 2048 * 2);
  EXPECT_DOUBLE_EQ(c[0]->result_bytes, 512.0 * 512 * 2);
  EXPECT_EQ(c[1]->comm, CommKind::kAllGather);
  EXPECT_DOUBLE_EQ(c[1]->operand_bytes, 512.0 * 512 * 2);
  EXPECT_DOUBLE_EQ(c[1]->result_bytes, 512.0 * 2048 * 2);
  EXPECT_EQ(c[2]->comm, CommKind::kAllGather);
  EXPECT_DOUBLE_EQ(c[2]->operand_bytes, 512.0 * 256 * 2);
  // FLOPs per device: 2*512*2048*512 (first dot, K split 4 ways) + 2*512*2048*256.
  double flops = 0;
  for (const DagNode& n : d.nodes) flops += n.flops * n.repeat;
  EXPECT_DOUBLE_EQ(flops, 2.0 * 512 * 512 * 2048 + 2.0 * 512 * 2048 * 256);
  // Parameters per device: x/8 + w1/4 + w2/4, bf16.
  EXPECT_DOUBLE_EQ(d.param_bytes, (1024.0 * 2048 / 8 + 2048.0 * 2048 / 4 + 2048.0 * 1024 / 4) * 2);
}

TEST(ShloDag, ShardyAndGspmdTextsPredictTheSame) {
  PredictionDag a = dag_of(testdata::kMatmul), b = dag_of(testdata::kMatmulGspmd);
  auto ca = comms(a), cb = comms(b);
  ASSERT_EQ(ca.size(), cb.size());
  for (size_t i = 0; i < ca.size(); ++i) {
    EXPECT_EQ(ca[i]->comm, cb[i]->comm);
    EXPECT_DOUBLE_EQ(ca[i]->operand_bytes, cb[i]->operand_bytes);
    EXPECT_EQ(ca[i]->group_size, cb[i]->group_size);
  }
  EXPECT_DOUBLE_EQ(a.param_bytes, b.param_bytes);
  EXPECT_DOUBLE_EQ(a.peak_activation_bytes, b.peak_activation_bytes);
}

TEST(ShloDag, ExplicitCollectivesInShardMapNameTheirAxes) {
  for (const char* text : {testdata::kRingAllToAll, testdata::kRingGspmd}) {
    PredictionDag d = dag_of(text);
    auto c = comms(d);
    ASSERT_EQ(c.size(), 3u);
    EXPECT_EQ(c[0]->comm, CommKind::kCollectivePermute);
    EXPECT_TRUE(c[0]->overlappable);
    EXPECT_EQ(c[1]->comm, CommKind::kAllToAll);
    EXPECT_EQ(c[1]->group_size, 4);
    EXPECT_EQ(c[2]->comm, CommKind::kAllReduce);
    EXPECT_EQ(c[2]->group_size, 2);
    for (const DagNode* n : c) {
      EXPECT_EQ(n->origin, CommOrigin::kExplicit);
      EXPECT_DOUBLE_EQ(n->operand_bytes, 128.0 * 512 * 2);  // per-device block, bf16
      ASSERT_EQ(n->axes.size(), 1u);
    }
    // Permute and all-to-all run over the minor mesh axis, the psum over the major one.
    EXPECT_EQ(c[0]->axes[0], c[1]->axes[0]);
    EXPECT_NE(c[1]->axes[0], c[2]->axes[0]);
  }
  EXPECT_EQ(comms(dag_of(testdata::kRingAllToAll))[2]->axes[0], "data");
}

// GSPMD's synthetic axes are named "s<stride>x<size>"; a user's axis that merely starts with
// 's' and holds an 'x' ("sx", "seq_x") is an ordinary axis (it read as stride 0: a crash).
TEST(ShloDag, AxisNamedLikeASyntheticOneIsAnOrdinaryAxis) {
  auto rename = [](std::string t, const std::string& from, const std::string& to) {
    for (size_t at = 0; (at = t.find(from, at)) != std::string::npos; at += to.size())
      t.replace(at, from.size(), to);
    return t;
  };
  const std::string text = rename(rename(testdata::kRingAllToAll, "\"model\"", "\"seq_x\""),
                                  "\"data\"", "\"sx\"");
  const PredictionDag d = dag_of(text.c_str());
  auto c = comms(d);
  ASSERT_EQ(c.size(), 3u);
  ASSERT_EQ(c[1]->axes.size(), 1u);
  ASSERT_EQ(c[2]->axes.size(), 1u);
  EXPECT_EQ(c[1]->axes[0], "seq_x");
  EXPECT_EQ(c[2]->axes[0], "sx");
}

TEST(ShloDag, WhileTripCountAndCalleesInlined) {
  // lax.scan over 4 layers: the body's row-parallel matmul all-reduces [256,1024] bf16
  // (x is split over data) once per layer.
  PredictionDag d = dag_of(testdata::kLayersScan);
  auto c = comms(d);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0]->comm, CommKind::kAllReduce);
  EXPECT_DOUBLE_EQ(c[0]->repeat, 4);
  EXPECT_DOUBLE_EQ(c[0]->operand_bytes, 256.0 * 1024 * 2);
  EXPECT_EQ(c[0]->axes, (std::vector<std::string>{"model"}));
  double flops = 0;
  for (const DagNode& n : d.nodes)
    if (n.op == "stablehlo.dot_general") flops += n.flops * n.repeat;
  EXPECT_DOUBLE_EQ(flops, 4 * 2 * (2.0 * 256 * 1024 * 1024));
  EXPECT_TRUE(d.warnings.empty());
}

// A scan whose condition compares its counter with a value that is no constant has an
// unknown trip count: Stage 1 cannot price it (counted once, a 40-layer scan would look 40x
// cheaper) and says where, instead of a prediction.
TEST(ShloDag, UnknownTripCountIsAnError) {
  std::string text = testdata::kLayersScan;
  const std::string limit = "%c_3 = stablehlo.constant dense<4> : tensor<i32>\n"
                            "      %1 = stablehlo.compare LT, %iterArg_1, %c_3";
  const size_t at = text.find(limit);
  ASSERT_NE(at, std::string::npos);
  text.replace(at, limit.size(),
               "%c_3 = stablehlo.add %iterArg_1, %iterArg_1 : tensor<i32>\n"
               "      %1 = stablehlo.compare LT, %iterArg_1, %c_3");
  auto module = parse_module(text);
  ASSERT_TRUE(module.ok()) << module.error().to_string();
  auto d = build_dag(*module);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.error().message.find("trip count is unknown"), std::string::npos)
      << d.error().message;
  EXPECT_GT(d.error().line, 0);
}

const char* kSnippet = R"(module @m attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["x"=2, "y"=2]>
  func.func public @main(%arg0: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}, %arg1: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {"x"}]>}) -> (tensor<64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
    %0 = stablehlo.add %arg0, %arg1 : tensor<64x32xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<64x32xf32>, tensor<f32>) -> tensor<64xf32>
    %2 = stablehlo.custom_call @my_kernel(%1) : (tensor<64xf32>) -> tensor<64xf32>
    return %2 : tensor<64xf32>
  }
})";

TEST(ShloDag, ElementwiseReshardReductionAndOpaqueKernel) {
  PredictionDag d = dag_of(kSnippet);
  auto c = comms(d);
  // add: arg1 [y, x] is brought to arg0's [x, y]: both axes change dims -> one all-to-all of
  // its local 32x16 f32 block. reduce over dim 1 (split by y) -> partial sums all-reduced
  // over y. custom_call: an opaque kernel gets its operand whole -> all-gather over x.
  // return wants [x] again: the kernel's replicated result is sliced, which is free.
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0]->comm, CommKind::kAllToAll);
  EXPECT_EQ(c[0]->origin, CommOrigin::kReshard);
  EXPECT_DOUBLE_EQ(c[0]->operand_bytes, 32.0 * 16 * 4);
  EXPECT_EQ(c[0]->group_size, 4);
  EXPECT_EQ(c[1]->comm, CommKind::kAllReduce);
  EXPECT_EQ(c[1]->origin, CommOrigin::kReduction);
  EXPECT_EQ(c[1]->axes, (std::vector<std::string>{"y"}));
  EXPECT_DOUBLE_EQ(c[1]->operand_bytes, 32.0 * 4);
  EXPECT_EQ(c[2]->comm, CommKind::kAllGather);
  EXPECT_EQ(c[2]->origin, CommOrigin::kCustomCall);
  EXPECT_DOUBLE_EQ(c[2]->result_bytes, 64.0 * 4);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("my_kernel"), std::string::npos);
}

TEST(ShloPropagate, ReshapeSplitsAndMergesKeepTheMajorAxis) {
  MeshTable t{{Mesh{"mesh", {{"x", 2}, {"y", 2}}}}};
  TensorSharding s{"mesh", {{{{"x", 1, 0}}, false}, {{}, false}, {{{"y", 1, 0}}, false}}, {}, false, false};
  // [2, 256, 512] -> [2, 256, 8, 64]: dim 2 (y) splits into heads 8 x 64, y stays on heads.
  ReshapeRule a = reshape_rule(t, s, {2, 256, 512}, {2, 256, 8, 64});
  EXPECT_EQ(to_string(a.result), R"([{"x"}, {}, {"y"}, {}])");
  EXPECT_EQ(a.operand, s);
  // Merge [2, 256, 8, 64] -> [2, 256, 512] with the minor dim sharded: not contiguous, dropped.
  TensorSharding m{"mesh", {{}, {}, {}, {{{"y", 1, 0}}, false}}, {}, false, false};
  ReshapeRule b = reshape_rule(t, m, {2, 256, 8, 64}, {2, 256, 512});
  EXPECT_EQ(to_string(b.result), "[{}, {}, {}]");
  EXPECT_EQ(to_string(b.operand), "[{}, {}, {}, {}]");
  // An axis that does not divide the dimension it lands on cannot stay.
  MeshTable t4{{Mesh{"mesh", {{"x", 4}}}}};
  TensorSharding x4{"mesh", {{{{"x", 1, 0}}, false}, {}}, {}, false, false};
  EXPECT_EQ(to_string(reshape_rule(t4, x4, {8, 3}, {2, 12}).result), "[{}, {}]");
  EXPECT_EQ(to_string(reshape_rule(t4, x4, {8, 3}, {4, 6}).result), R"([{"x"}, {}])");
}

TEST(ShloReshard, ClosedForms) {
  MeshTable t{{Mesh{"mesh", {{"x", 4}, {"y", 2}}}}};
  TensorType ty{"bf16", {64, 32}, 2};
  auto sh = [](std::vector<std::vector<std::string>> dims) {
    TensorSharding s;
    s.mesh = "mesh";
    for (auto& d : dims) {
      DimSharding ds;
      for (auto& a : d) ds.axes.push_back({a, 1, 0});
      s.dims.push_back(ds);
    }
    return s;
  };
  ShardState from{sh({{"x"}, {"y"}}), {}, false, true};
  // Drop y: all-gather over y of the local 16x16 block.
  auto g = reshard(t, ty, from, sh({{"x"}, {}}));
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].comm, CommKind::kAllGather);
  EXPECT_DOUBLE_EQ(g[0].operand_bytes, 16 * 16 * 2);
  EXPECT_DOUBLE_EQ(g[0].result_bytes, 16 * 32 * 2);
  // Adding an axis is a local slice.
  EXPECT_TRUE(reshard(t, ty, ShardState{sh({{}, {}}), {}, false, true}, sh({{"x"}, {"y"}})).empty());
  // Partial over y, wanted split on dim 1 by y: reduce-scatter; wanted replicated: all-reduce.
  ShardState partial{sh({{"x"}, {}}), {{"y", 1, 0}}, false, false};
  auto rs = reshard(t, ty, partial, sh({{"x"}, {"y"}}));
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].comm, CommKind::kReduceScatter);
  EXPECT_DOUBLE_EQ(rs[0].operand_bytes, 16 * 32 * 2);
  EXPECT_DOUBLE_EQ(rs[0].result_bytes, 16 * 16 * 2);
  auto ar = reshard(t, ty, partial, sh({{"x"}, {}}));
  ASSERT_EQ(ar.size(), 1u);
  EXPECT_EQ(ar[0].comm, CommKind::kAllReduce);
  // Wire bytes on a ring: all-reduce 2 x (k-1)/k of its operand.
  EXPECT_DOUBLE_EQ(moved_bytes(ar), 2 * 0.5 * 16 * 32 * 2);
}

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
  ag.axes = {"x"};
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
    c.axes = {"x"};
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
}

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

TEST(ShloStage1, RejectsWhatDoesNotFitWithTheNumbers) {
  stage1::Stage1Options o;
  o.chip.hbm_bytes = 4e6;  // 4 MB chips: the matmul's 3.67 MB of parameters + activations do not fit
  o.hbm_usable_fraction = 1.0;
  Result<stage1::Stage1Result> r = stage1::analyze_stablehlo(testdata::kMatmul, o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->fits);
  EXPECT_NE(r->reject_reason.find("parameters 0.00 GB"), std::string::npos) << r->reject_reason;
  EXPECT_NE(r->reject_reason.find("usable HBM"), std::string::npos);
  o.chip.hbm_bytes = 16e9;
  r = stage1::analyze_stablehlo(testdata::kMatmul, o);
  EXPECT_TRUE(r->fits);
  EXPECT_TRUE(r->reject_reason.empty());
  EXPECT_DOUBLE_EQ(r->comm_bytes_by_kind.at("reduce-scatter"), 512.0 * 2048 * 2);
  EXPECT_DOUBLE_EQ(r->comm_count_by_kind.at("all-gather"), 2);
  EXPECT_GT(r->q1_seconds, 0);
  EXPECT_GE(r->q1_seconds, r->compute_seconds);
  o.topology = "v5e:9x9x9";
  EXPECT_FALSE(stage1::analyze_stablehlo(testdata::kMatmul, o).ok());
}

TEST(ShloStage1, TopKAndRecall) {
  EXPECT_EQ(stage1::select_top_k({3.0, 1.0, INFINITY, 2.0, -1.0}, 2), (std::vector<int>{1, 3}));
  EXPECT_EQ(stage1::select_top_k({2.0, 1.0, 2.0}, 0), (std::vector<int>{1, 0, 2}));  // stable ties
  EXPECT_EQ(stage1::select_top_k({2.0, 1.0}, 5), (std::vector<int>{1, 0}));
  EXPECT_EQ(stage1::k_from_recall({0, 0, 2, 1}), 4);  // worst winner rank 2 -> K 3, plus slack 1
  EXPECT_EQ(stage1::k_from_recall({}, 2, 0), 2);
}

}  // namespace
}  // namespace aoizora::shlo

namespace aoizora::shlo {
namespace {

TEST(ShloDag, ShardingPerValueAndExplicitShardyCollectives) {
  // An op annotated with sdy.sharding_per_value, and the explicit-axes collectives Shardy
  // prints (sdy.all_gather / sdy.all_to_all with out_sharding).
  const char* text = R"(module @m attributes {mhlo.num_partitions = 4 : i32} {
  sdy.mesh @mesh = <["x"=4]>
  func.func public @main(%arg0: tensor<16x8xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> tensor<16x8xbf16> {
    %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{}, {"x"}]>]>} : tensor<16x8xbf16>
    %1 = sdy.all_to_all [{"x"}: 1->0] %0 out_sharding=<@mesh, [{"x"}, {}]> : tensor<16x8xbf16>
    %2 = sdy.all_gather [{"x"}, {}] %1 out_sharding=<@mesh, [{}, {}]> : tensor<16x8xbf16>
    return %2 : tensor<16x8xbf16>
  }
})";
  Result<Module> m = parse_module(text);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const Func* f = m->entry();
  EXPECT_EQ(to_string(*m->values[f->body.ops[0].results[0]].sharding), R"([{}, {"x"}])");
  EXPECT_EQ(to_string(*m->values[f->body.ops[2].results[0]].sharding), "[{}, {}]");
  PredictionDag d = build_dag(*m).value();
  auto c = comms(d);
  // negate computes [x,-] -> annotated [-,x]: an implicit all-to-all; then the two explicit.
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0]->comm, CommKind::kAllToAll);
  EXPECT_EQ(c[0]->origin, CommOrigin::kReshard);
  EXPECT_DOUBLE_EQ(c[0]->operand_bytes, 4 * 8 * 2);
  EXPECT_EQ(c[1]->comm, CommKind::kAllToAll);
  EXPECT_EQ(c[1]->origin, CommOrigin::kExplicit);
  EXPECT_DOUBLE_EQ(c[1]->operand_bytes, 16 * 2 * 2);
  EXPECT_EQ(c[2]->comm, CommKind::kAllGather);
  EXPECT_EQ(c[2]->origin, CommOrigin::kExplicit);
  EXPECT_DOUBLE_EQ(c[2]->result_bytes, 16 * 8 * 2);
}

}  // namespace
}  // namespace aoizora::shlo
