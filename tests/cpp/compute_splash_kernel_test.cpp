// The splash kernel's per-grid-step time (compute/splash_kernel.h), by hand: one call of
// B H = 1, Sq = Skv = 256, D = Dv = 128 in bf16, blocks q 128 / kv 128 / kv-compute 128, on a
// made-up one-core chip whose figures are round numbers. Per grid step (2 x 2 = 4 steps):
//   MXU:  Q K^T [128,128]x[128,128] and P V [128,128]x[128,128] on a 128 tile:
//         2 x (2 x 128 x 128 x 128) = 8,388,608 FLOP
//   VPU:  128 x 128 scores x 7 ops + 1 sub-tile x 128 rows x 128 x 2 = 147,456 ops
//   EUP:  128 x 128 = 16,384 exps
//   DMA:  every operand and result once (K+V 131,072 B, q+o 131,072 B) and K/V once more
//         for the second q block: 393,216 B / 4 steps = 98,304 B
#include "aoizora/compute/splash_kernel.h"

#include <gtest/gtest.h>

namespace aoizora::compute {
namespace {

SplashCall call(double block_kv_compute = 128) {
  SplashCall c;
  c.batch_heads = 1;
  c.q_len = c.kv_len = 256;
  c.head_dim = c.head_dim_v = 128;
  c.block_q = c.block_kv = 128;
  c.block_kv_compute = block_kv_compute;
  c.kv_bytes = 256.0 * 256 * 2;               // K and V
  c.io_bytes = c.kv_bytes + 256.0 * 256 * 2;  // and q and o
  return c;
}

// Every resource fast except the one a case makes slow.
topo::ChipSpec chip() {
  topo::ChipSpec s;
  s.peak_flops = 1e12;            // MXU step 8.388608 us
  s.hbm_bandwidth = 1e12;         // DMA step 0.098304 us
  s.mxu_size = 128;
  s.vector_ops_per_second = 1e12;       // VPU step 0.147456 us
  s.transcendentals_per_second = 1e12;  // EUP step 0.016384 us
  s.grid_step_seconds = 1e-7;
  return s;
}

constexpr double kDma = 98304 / 1e12;

TEST(SplashKernel, BigMatmulsAreMxuBoundAndPayTheStepCostOnTop) {
  const SplashTime t = splash_time(call(), chip());
  EXPECT_DOUBLE_EQ(t.steps, 4);
  EXPECT_DOUBLE_EQ(t.mxu, 8388608 / 1e12);
  EXPECT_DOUBLE_EQ(t.vector, 147456 / 1e12);
  EXPECT_DOUBLE_EQ(t.dma, kDma);
  EXPECT_EQ(t.bound, KernelBound::kMxu);
  // 4 x (8.388608 + 0.1) us + the first block's DMA, which nothing overlaps.
  EXPECT_DOUBLE_EQ(t.seconds, 4 * (8.388608e-6 + 1e-7) + kDma);
}

TEST(SplashKernel, SlowVectorUnitBoundsTheSoftmax) {
  topo::ChipSpec s = chip();
  s.vector_ops_per_second = 1e10;  // 14.7456 us per step, above the MXU's 8.39
  const SplashTime t = splash_time(call(), s);
  EXPECT_EQ(t.bound, KernelBound::kVector);
  EXPECT_DOUBLE_EQ(t.seconds, 4 * (14.7456e-6 + 1e-7) + kDma);
}

TEST(SplashKernel, SlowExpUnitBoundsTheSoftmaxToo) {
  topo::ChipSpec s = chip();
  s.transcendentals_per_second = 1e9;  // 16,384 exps: 16.384 us per step
  const SplashTime t = splash_time(call(), s);
  EXPECT_EQ(t.bound, KernelBound::kVector);
  EXPECT_DOUBLE_EQ(t.vector, 16.384e-6);
}

TEST(SplashKernel, SmallerComputeBlocksRescaleTheAccumulatorMoreOften) {
  topo::ChipSpec s = chip();
  s.vector_ops_per_second = 1e10;
  // Two 64-key sub-tiles: the rescale runs twice, 114,688 + 2 x 32,768 = 180,224 ops.
  EXPECT_DOUBLE_EQ(splash_time(call(64), s).vector, 180224 / 1e10);
}

TEST(SplashKernel, SlowHbmBoundsTheKvStream) {
  topo::ChipSpec s = chip();
  s.hbm_bandwidth = 1e9;  // 98.304 us per step
  const SplashTime t = splash_time(call(), s);
  EXPECT_EQ(t.bound, KernelBound::kHbmDma);
  EXPECT_DOUBLE_EQ(t.seconds, 4 * (98.304e-6 + 1e-7) + 98.304e-6);
}

TEST(SplashKernel, ManyTinyStepsAreBoundByTheirFixedCost) {
  topo::ChipSpec s = chip();
  s.grid_step_seconds = 1e-5;  // above every resource's 8.39 us
  const SplashTime t = splash_time(call(), s);
  EXPECT_EQ(t.bound, KernelBound::kStepOverhead);
  EXPECT_DOUBLE_EQ(t.seconds, 4 * (8.388608e-6 + 1e-5) + kDma);
}

// The next block's DMA runs under this block's compute: a DMA as long as the MXU work adds
// nothing per step (a model that summed them would take twice as long).
TEST(SplashKernel, DmaOverlapsTheMatmulsInsteadOfAddingToThem) {
  topo::ChipSpec s = chip();
  s.hbm_bandwidth = 98304 / 8.388608e-6;  // DMA step == MXU step
  s.grid_step_seconds = 0;
  const SplashTime t = splash_time(call(), s);
  EXPECT_DOUBLE_EQ(t.dma, t.mxu);
  EXPECT_DOUBLE_EQ(t.seconds, 5 * 8.388608e-6);
}

// Fewer, larger blocks: one q block and one kv block is one step of the same total work,
// so it pays one fixed cost instead of four.
TEST(SplashKernel, WholeLengthBlocksPayOneStep) {
  SplashCall c = call();
  c.block_q = c.block_kv = 0;
  c.block_kv_compute = 0;
  topo::ChipSpec s = chip();
  s.grid_step_seconds = 1e-5;
  const SplashTime t = splash_time(c, s);
  EXPECT_DOUBLE_EQ(t.steps, 1);
  EXPECT_DOUBLE_EQ(t.mxu, 4 * 8388608 / 1e12);
  EXPECT_LT(t.seconds, splash_time(call(), s).seconds);
}

// A TPU7x chip has two cores: each call runs on one and gets half the chip's vector rate.
TEST(SplashKernel, TwoCoreChipsShareTheVectorUnitsOut) {
  topo::ChipSpec s = chip();
  s.vector_ops_per_second = 2e10;
  s.cores_per_chip = 2;
  s.peak_flops = 2e12;
  s.hbm_bandwidth = 2e12;
  s.transcendentals_per_second = 2e12;
  EXPECT_DOUBLE_EQ(splash_time(call(), s).vector, 147456 / 1e10);
}

}  // namespace
}  // namespace aoizora::compute
