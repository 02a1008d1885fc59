// shlo/dag_builder.h: the prediction DAG on real lowered probes (closed forms checked against
// the compiled HLO of the same probes, tests/python/test_stage1.py) and on hand-written snippets.
#include "aoizora/shlo/dag_builder.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "aoizora/shlo/parser.h"
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
  EXPECT_EQ(axis_labels(c[0]->axes), (std::vector<std::string>{"model"}));
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
  EXPECT_EQ(comms(dag_of(testdata::kRingAllToAll))[2]->axes[0].name, "data");
}

// allgather_kv as jax lowers it (the lines of wan-tiny dp2-ag4's shard_map body): K and V
// gathered along the sequence over the 4-device axis, then transposed heads-major for the
// attention kernel, as is the local Q. The TPU compiler gathers K/V straight into that layout
// (tests/python/test_stage1.py checks it on the compiled module), so their transposes cost
// no HBM pass; Q's transpose is a copy: one read and one write of the shard.
constexpr const char* kGatherThenTranspose = R"mlir(module @jit_f attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["data"=2, "context"=4]>
  func.func public @main(%arg0: tensor<2x512x8x16xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"context"}, {}, {}]>}, %arg1: tensor<2x512x8x16xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"context"}, {}, {}]>}, %arg2: tensor<2x512x8x16xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"data"}, {"context"}, {}, {}]>}) -> (tensor<2x8x512x16xbf16> {jax.result_info = "result"}) {
    %0 = sdy.manual_computation(%arg0, %arg1, %arg2) in_shardings=[<@mesh, [{"data"}, {"context"}, {}, {}]>, <@mesh, [{"data"}, {"context"}, {}, {}]>, <@mesh, [{"data"}, {"context"}, {}, {}]>] out_shardings=[<@mesh, [{"data"}, {}, {"context"}, {}]>] manual_axes={"data", "context"} (%arg3: tensor<1x128x8x16xbf16>, %arg4: tensor<1x128x8x16xbf16>, %arg5: tensor<1x128x8x16xbf16>) {
      %1 = "stablehlo.all_gather"(%arg4) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> : (tensor<1x128x8x16xbf16>) -> tensor<1x512x8x16xbf16>
      %2 = "stablehlo.all_gather"(%arg5) <{all_gather_dim = 1 : i64, channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3], [4, 5, 6, 7]]> : tensor<2x4xi64>, use_global_device_ids}> : (tensor<1x128x8x16xbf16>) -> tensor<1x512x8x16xbf16>
      %3 = stablehlo.transpose %arg3, dims = [0, 2, 1, 3] : (tensor<1x128x8x16xbf16>) -> tensor<1x8x128x16xbf16>
      %4 = stablehlo.transpose %1, dims = [0, 2, 1, 3] : (tensor<1x512x8x16xbf16>) -> tensor<1x8x512x16xbf16>
      %5 = stablehlo.transpose %2, dims = [0, 2, 1, 3] : (tensor<1x512x8x16xbf16>) -> tensor<1x8x512x16xbf16>
      %6 = stablehlo.dot_general %3, %4, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [3] : (tensor<1x8x128x16xbf16>, tensor<1x8x512x16xbf16>) -> tensor<1x8x128x512xbf16>
      %7 = stablehlo.dot_general %6, %5, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<1x8x128x512xbf16>, tensor<1x8x512x16xbf16>) -> tensor<1x8x128x16xbf16>
      sdy.return %7 : tensor<1x8x128x16xbf16>
    } : (tensor<2x512x8x16xbf16>, tensor<2x512x8x16xbf16>, tensor<2x512x8x16xbf16>) -> tensor<2x8x512x16xbf16>
    return %0 : tensor<2x8x512x16xbf16>
  }
}
)mlir";

TEST(ShloDag, TransposeOfAnAllGatheredValueIsItsLayoutNotACopy) {
  PredictionDag d = dag_of(kGatherThenTranspose);
  ASSERT_EQ(comms(d).size(), 2u);
  double gathered = 0, local = 0;
  int transposes = 0;
  for (const DagNode& n : d.nodes) {
    if (n.kind != DagNode::Kind::kCompute || n.op != "stablehlo.transpose") continue;
    ++transposes;
    (n.line == 7 ? local : gathered) += n.bytes;
  }
  EXPECT_EQ(gathered, 0.0);
  EXPECT_EQ(local, 2.0 * 128 * 8 * 16 * 2);  // Q: read and written once, bf16
  EXPECT_GE(transposes, 1);
}

// One step of tokamax's ring as jax lowers it (the lines of Wan 1.3B dp2-ring4's step
// function, shapes cut down): the kernel's outputs are broadcast to a leading unit dim (which
// replicates nothing: XLA makes it a bitcast), the statistics sliced to lane 0, and the K/V
// shard padded by nothing (_pad_8: XLA removes it). None of those moves a byte; a broadcast
// that does replicate (the row statistics to 128 lanes) and is read by a slice still does.
constexpr const char* kRingStepMerge = R"mlir(module @jit_f attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["context"=4]>
  func.func public @main(%arg0: tensor<4x64x128xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"context"}, {}]>}, %arg1: tensor<4x64x128xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"context"}, {}]>}, %arg2: tensor<4x64xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"context"}]>}) -> (tensor<4x64x1xf32> {jax.result_info = "result"}, tensor<4x64x128xbf16>, tensor<4x64x1xf32>) {
    %0:3 = sdy.manual_computation(%arg0, %arg1, %arg2) in_shardings=[<@mesh, [{}, {"context"}, {}]>, <@mesh, [{}, {"context"}, {}]>, <@mesh, [{}, {"context"}]>] out_shardings=[<@mesh, [{}, {"context"}, {}]>, <@mesh, [{}, {"context"}, {}]>, <@mesh, [{}, {"context"}, {}]>] manual_axes={"context"} (%arg3: tensor<4x16x128xf32>, %arg4: tensor<4x16x128xbf16>, %arg5: tensor<4x16xf32>) {
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<bf16>
      %1 = stablehlo.broadcast_in_dim %arg3, dims = [1, 2, 3] : (tensor<4x16x128xf32>) -> tensor<1x4x16x128xf32>
      %2 = stablehlo.slice %1 [0:1, 0:4, 0:16, 0:1] : (tensor<1x4x16x128xf32>) -> tensor<1x4x16x1xf32>
      %3 = stablehlo.reshape %2 : (tensor<1x4x16x1xf32>) -> tensor<4x16x1xf32>
      %4 = stablehlo.pad %arg4, %cst, low = [0, 0, 0], high = [0, 0, 0], interior = [0, 0, 0] : (tensor<4x16x128xbf16>, tensor<bf16>) -> tensor<4x16x128xbf16>
      %5 = stablehlo.broadcast_in_dim %arg5, dims = [0, 1] : (tensor<4x16xf32>) -> tensor<4x16x128xf32>
      %6 = stablehlo.slice %5 [0:4, 0:16, 0:1] : (tensor<4x16x128xf32>) -> tensor<4x16x1xf32>
      sdy.return %3, %4, %6 : tensor<4x16x1xf32>, tensor<4x16x128xbf16>, tensor<4x16x1xf32>
    } : (tensor<4x64x128xf32>, tensor<4x64x128xbf16>, tensor<4x64xf32>) -> (tensor<4x64x1xf32>, tensor<4x64x128xbf16>, tensor<4x64x1xf32>)
    return %0#0, %0#1, %0#2 : tensor<4x64x1xf32>, tensor<4x64x128xbf16>, tensor<4x64x1xf32>
  }
}
)mlir";

TEST(ShloDag, BroadcastsAndPadsThatKeepTheShapeMoveNoBytes) {
  PredictionDag d = dag_of(kRingStepMerge);
  std::map<int, double> bytes_at;  // line -> bytes of its nodes
  for (const DagNode& n : d.nodes)
    if (n.kind == DagNode::Kind::kCompute) bytes_at[n.line] += n.bytes;
  EXPECT_EQ(bytes_at.count(6), 0u);  // the unit-dim broadcast: a bitcast
  EXPECT_EQ(bytes_at.count(9), 0u);  // the pad by nothing
  EXPECT_DOUBLE_EQ(bytes_at.at(7), 2.0 * 4 * 16 * 4);  // the slice reads what it keeps
  // The replicating broadcast writes 128 lanes of the row statistics for the slice.
  EXPECT_DOUBLE_EQ(bytes_at.at(10), 4 * 16 * 128 * 4.0);
}

// A ring as jax lowers it at 720p (wan 1.3B dp2-ring4, models' _ring_attention): one step
// function called once per step, which sends its K on (the permute) and works on the K it
// holds. The last call's permute feeds nothing: XLA removes it once the calls are inlined
// (the compiled module has 3 permutes of K per ring of 4, not 4), so Stage 1 counts n - 1.
constexpr const char* kRingOfCalls = R"mlir(module @jit_f attributes {mhlo.num_partitions = 4 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @mesh = <["context"=4]>
  func.func public @main(%arg0: tensor<512x128xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"context"}, {}]>}) -> (tensor<512x128xbf16> {jax.result_info = "result"}) {
    %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"context"}, {}]>] out_shardings=[<@mesh, [{"context"}, {}]>] manual_axes={"context"} (%arg1: tensor<128x128xbf16>) {
      %1:2 = call @step(%arg1, %arg1) : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> (tensor<128x128xbf16>, tensor<128x128xbf16>)
      %2:2 = call @step(%1#0, %1#1) : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> (tensor<128x128xbf16>, tensor<128x128xbf16>)
      sdy.return %2#0 : tensor<128x128xbf16>
    } : (tensor<512x128xbf16>) -> tensor<512x128xbf16>
    return %0 : tensor<512x128xbf16>
  }
  func.func private @step(%arg0: tensor<128x128xbf16>, %arg1: tensor<128x128xbf16>) -> (tensor<128x128xbf16>, tensor<128x128xbf16>) {
    %0 = "stablehlo.collective_permute"(%arg1) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, source_target_pairs = dense<[[0, 1], [1, 2], [2, 3], [3, 0]]> : tensor<4x2xi64>}> : (tensor<128x128xbf16>) -> tensor<128x128xbf16>
    %1 = stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [1] : (tensor<128x128xbf16>, tensor<128x128xbf16>) -> tensor<128x128xbf16>
    %2 = stablehlo.add %arg0, %1 : tensor<128x128xbf16>
    return %2, %0 : tensor<128x128xbf16>, tensor<128x128xbf16>
  }
}
)mlir";

TEST(ShloDag, APermuteWhoseResultTheCallerDropsIsNotCounted) {
  PredictionDag d = dag_of(kRingOfCalls);
  auto c = comms(d);
  ASSERT_EQ(c.size(), 1u);  // the first step's; the second's result is never read
  EXPECT_EQ(c[0]->comm, CommKind::kCollectivePermute);
  EXPECT_DOUBLE_EQ(c[0]->operand_bytes, 128.0 * 128 * 2);
  EXPECT_EQ(c[0]->cycle_length, 4);  // 0 -> 1 -> 2 -> 3 -> 0
  int dots = 0;
  for (const DagNode& n : d.nodes) dots += n.op == "stablehlo.dot_general";
  EXPECT_EQ(dots, 2);  // the work of both steps stays
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
  EXPECT_EQ(c[1]->axes[0].name, "seq_x");
  EXPECT_EQ(c[2]->axes[0].name, "sx");
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
  EXPECT_EQ(axis_labels(c[0]->axes), (std::vector<std::string>{"model"}));
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
  EXPECT_TRUE(d.error().is_unsupported());  // valid input the model cannot price, not a typo
}

// The counter's step comes from the body: a scan that adds 2 to it runs `i < 4` twice; one
// that moves it away from the limit, or changes it other than by a constant step, has an
// unknown trip count.
TEST(ShloDag, WhileTripCountFollowsTheCountersStep) {
  auto with_update = [](const std::string& update) {
    std::string text = testdata::kLayersScan;
    const std::string step = "%c_3 = stablehlo.constant dense<1> : tensor<i32>\n"
                             "      %4 = stablehlo.add %iterArg_1, %c_3 : tensor<i32>";
    const size_t at = text.find(step);
    EXPECT_NE(at, std::string::npos);
    text.replace(at, step.size(), update);
    auto module = parse_module(text);
    EXPECT_TRUE(module.ok()) << module.error().to_string();
    return build_dag(*module);
  };
  auto by_two = with_update("%c_3 = stablehlo.constant dense<2> : tensor<i32>\n"
                            "      %4 = stablehlo.add %c_3, %iterArg_1 : tensor<i32>");
  ASSERT_TRUE(by_two.ok()) << by_two.error().to_string();
  auto c = comms(*by_two);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_DOUBLE_EQ(c[0]->repeat, 2);
  auto away = with_update("%c_3 = stablehlo.constant dense<1> : tensor<i32>\n"
                          "      %4 = stablehlo.subtract %iterArg_1, %c_3 : tensor<i32>");
  ASSERT_FALSE(away.ok());
  EXPECT_NE(away.error().message.find("trip count is unknown"), std::string::npos);
  auto doubling = with_update("%c_3 = stablehlo.constant dense<2> : tensor<i32>\n"
                              "      %4 = stablehlo.multiply %iterArg_1, %c_3 : tensor<i32>");
  EXPECT_FALSE(doubling.ok());
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
  EXPECT_EQ(axis_labels(c[1]->axes), (std::vector<std::string>{"y"}));
  EXPECT_DOUBLE_EQ(c[1]->operand_bytes, 32.0 * 4);
  EXPECT_EQ(c[2]->comm, CommKind::kAllGather);
  EXPECT_EQ(c[2]->origin, CommOrigin::kCustomCall);
  EXPECT_DOUBLE_EQ(c[2]->result_bytes, 64.0 * 4);
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_NE(d.warnings[0].find("my_kernel"), std::string::npos);
}

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
