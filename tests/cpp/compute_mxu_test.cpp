// The MXU-aware compute model (compute/mxu.h) and the matmuls the HLO cost model and Stage 1's
// DAG read from real op forms: hand-computed cases.
#include <gtest/gtest.h>

#include <string>

#include "aoizora/compute/mxu.h"
#include "aoizora/cost/q2.h"
#include "aoizora/hlo/hlo_loader.h"
#include "aoizora/shlo/dag_builder.h"
#include "aoizora/shlo/parser.h"
#include "shlo_testdata.h"

namespace aoizora {
namespace {

topo::ChipSpec chip(int tile, double efficiency = 1.0) {
  topo::ChipSpec c;
  c.peak_flops = 1e15;
  c.hbm_bandwidth = 1e12;
  c.mxu_size = tile;
  c.mxu_efficiency = efficiency;
  return c;
}

// Attention with head_dim 128: Q K^T contracts over 128, which half fills a 256-wide MXU;
// P V keeps P stationary and streams V^T, so nothing pads. On a 128-wide MXU neither pads.
TEST(Mxu, ContractionPadsAndTheCompilerStreamsTheNarrowOperand) {
  const compute::Matmul scores{4096, 4096, 128, 40}, values{4096, 128, 4096, 40};
  EXPECT_DOUBLE_EQ(compute::mxu_flops(scores, 256), 2 * compute::matmul_flops(scores));
  EXPECT_DOUBLE_EQ(compute::mxu_flops(values, 256), compute::matmul_flops(values));
  EXPECT_DOUBLE_EQ(compute::mxu_flops(scores, 128), compute::matmul_flops(scores));
  // A tensor-parallel shard of 14B's FFN (13824 / 4 = 3456 = 13.5 x 256) streams through
  // 8192 stationary rows unpadded; with 300 rows (pad 512) it is cheaper to pad N to 3584.
  const compute::Matmul ffn{8192, 3456, 5120, 1}, few_rows{300, 3456, 5120, 1};
  EXPECT_DOUBLE_EQ(compute::mxu_flops(ffn, 256), compute::matmul_flops(ffn));
  EXPECT_DOUBLE_EQ(compute::mxu_flops(few_rows, 256), 2.0 * 300 * 3584 * 5120);
  EXPECT_DOUBLE_EQ(compute::mxu_flops(few_rows, 128), 2.0 * 300 * 3456 * 5120);
}

TEST(Mxu, SecondsChargeThePaddedMatmulAtTheEfficiencyAndTheRestAtPeak) {
  const compute::Matmul scores{4096, 4096, 128, 1};
  const double dense = compute::matmul_flops(scores), other = 1e9;
  const double t = compute::compute_seconds(dense + other, 0, {scores}, chip(256, 0.8));
  EXPECT_DOUBLE_EQ(t, (2 * dense / 0.8 + other) / 1e15);
  // Without matmuls an op is priced as before: flops at peak, or its bytes if slower.
  EXPECT_DOUBLE_EQ(compute::compute_seconds(dense, 0, {}, chip(256, 0.8)), dense / 1e15);
  EXPECT_DOUBLE_EQ(compute::compute_seconds(1e6, 1e9, {}, chip(256)), 1e9 / 1e12);
}

hlo::ScheduledOp root_op(const std::string& computations, const std::string& entry) {
  const std::string text = "HloModule m, num_partitions=1\n\n" + computations + "\nENTRY %e " + entry;
  auto g = hlo::collective_graph_from_text(text, "mxu.hlo");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().to_string());
  return g.ok() ? g->regions.back().ops.back() : hlo::ScheduledOp{};
}

// The TPU compiler's batched matmul as a dilated convolution (hlo_op_cost_test.cpp): the
// contraction is head_dim 128, not the 24-position window, so a 256 MXU doubles its time.
TEST(Mxu, DilatedConvolutionContractsOverItsFeatureDim) {
  hlo::ScheduledOp op = root_op("", R"((q: bf16[2,592,12,128], k: bf16[2,592,12,128]) -> f32[2,12,592,592] {
  %q = bf16[2,592,12,128]{3,1,2,0} parameter(0)
  %k = bf16[2,592,12,128]{3,1,2,0} parameter(1)
  ROOT %c = f32[2,12,592,592]{2,3,1,0} convolution(%q, %k), window={size=2x12 stride=1x11 lhs_dilate=2x12}, dim_labels=0b1f_0o1i->01bf
})");
  ASSERT_EQ(op.matmuls.size(), 1u);
  EXPECT_DOUBLE_EQ(op.matmuls[0].k, 128);
  EXPECT_DOUBLE_EQ(op.matmuls[0].n, 592);
  EXPECT_DOUBLE_EQ(op.matmuls[0].m * op.matmuls[0].count, 2.0 * 12 * 592);
  EXPECT_DOUBLE_EQ(compute::matmul_flops(op.matmuls[0]), op.flops);
  // FLOP-bound (unlimited HBM): 128 pads nothing; 256 pads K 128 -> 256 and the stationary
  // side's 2 x 12 x 592 = 14208 rows to 14336 (cheaper than padding N 592 to 768).
  topo::ChipSpec narrow = chip(128), wide = chip(256);
  narrow.hbm_bandwidth = wide.hbm_bandwidth = 1e30;
  EXPECT_DOUBLE_EQ(cost::op_seconds(op, narrow), op.flops / 1e15);
  EXPECT_DOUBLE_EQ(cost::op_seconds(op, wide), op.flops / 1e15 * 2 * 14336 / 14208);
}

// A dot inside a fusion: the fusion's op carries it, batch dims as the count.
TEST(Mxu, FusedDotKeepsItsBatchAndFreeDims) {
  hlo::ScheduledOp op = root_op(R"(%f (a: bf16[8,256,128], b: bf16[8,128,512]) -> bf16[8,256,512] {
  %a = bf16[8,256,128]{2,1,0} parameter(0)
  %b = bf16[8,128,512]{2,1,0} parameter(1)
  %d = bf16[8,256,512]{2,1,0} dot(%a, %b), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}
  ROOT %n = bf16[8,256,512]{2,1,0} negate(%d)
}
)", R"((a: bf16[8,256,128], b: bf16[8,128,512]) -> bf16[8,256,512] {
  %a = bf16[8,256,128]{2,1,0} parameter(0)
  %b = bf16[8,128,512]{2,1,0} parameter(1)
  ROOT %r = bf16[8,256,512]{2,1,0} fusion(%a, %b), kind=kOutput, calls=%f
})");
  ASSERT_EQ(op.matmuls.size(), 1u);
  EXPECT_EQ(op.matmuls[0], (compute::Matmul{256, 512, 128, 8}));
  EXPECT_DOUBLE_EQ(op.flops, compute::matmul_flops(op.matmuls[0]) + 8.0 * 256 * 512);  // + negate
}

shlo::PredictionDag dag_of(const std::string& text) {
  Result<shlo::Module> m = shlo::parse_module(text);
  EXPECT_TRUE(m.ok()) << m.error().to_string();
  Result<shlo::PredictionDag> d = shlo::build_dag(*m);
  EXPECT_TRUE(d.ok()) << d.error().to_string();
  return std::move(d).value();
}

std::vector<compute::Matmul> dot_matmuls(const shlo::PredictionDag& d) {
  std::vector<compute::Matmul> out;
  for (const shlo::DagNode& n : d.nodes)
    if (n.op == "stablehlo.dot_general") out.insert(out.end(), n.matmuls.begin(), n.matmuls.end());
  return out;
}

// Stage 1 reads a dot's matmul per device, after sharding: x[data,model] @ w1[model,-]
// contracts over the local 512 of 2048 and keeps w1's whole 2048 columns.
TEST(Mxu, StageOneDotIsTheLocalShard) {
  auto mm = dot_matmuls(dag_of(shlo::testdata::kMatmul));
  ASSERT_GE(mm.size(), 1u);
  EXPECT_EQ(mm[0], (compute::Matmul{512, 2048, 512, 1}));
}

TEST(Mxu, StageOneBatchedDotCountsItsBatch) {
  auto mm = dot_matmuls(dag_of(R"mlir(module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x256x128xbf16>, %arg1: tensor<8x128x512xbf16>) -> (tensor<8x256x512xbf16>) {
    %0 = stablehlo.dot_general %arg0, %arg1, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [DEFAULT, DEFAULT] : (tensor<8x256x128xbf16>, tensor<8x128x512xbf16>) -> tensor<8x256x512xbf16>
    return %0 : tensor<8x256x512xbf16>
  }
}
)mlir"));
  ASSERT_EQ(mm.size(), 1u);
  EXPECT_EQ(mm[0], (compute::Matmul{256, 512, 128, 8}));
}

}  // namespace
}  // namespace aoizora
