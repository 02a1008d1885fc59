// Stage 1 prices the splash kernel with the same formula as the compiled-HLO cost model.
#include "aoizora/shlo/kernel_call.h"

#include <gtest/gtest.h>

#include <vector>

namespace aoizora::shlo {
namespace {

TensorType tensor(const char* dtype, std::vector<int64_t> shape, double element_bytes) {
  return TensorType{dtype, std::move(shape), element_bytes};
}

// As jax 0.10.2 lowers a ring step's kernel (tiny Wan, 8 heads, 128-token shards):
// scalar-prefetch operands, q/k/v [8, 128, 16] f32, then the mask tables; the block sizes
// in the kernel's frontend attributes, escaped as StableHLO prints them.
TEST(ShloKernelCall, SplashCallIsPricedFromItsShapesAndBlockSizes) {
  const std::vector<TensorType> types = {
      tensor("i8", {1, 1, 1}, 1), tensor("i8", {1, 1, 1}, 1), tensor("f32", {8, 256, 16}, 4),
      tensor("f32", {8, 512, 16}, 4), tensor("f32", {8, 512, 16}, 4), tensor("i32", {128, 128}, 4),
      tensor("f32", {8, 256, 16}, 4)};
  Op op;
  op.name = "stablehlo.custom_call";
  op.callee = "tpu_custom_call";
  op.attrs = "{backend_config = \"...\", kernel_name = \"splash_mha_fwd_segmented_residuals\", "
             "mhlo.frontend_attributes = {kernel_metadata = \"{\\0A\\22xprof_metadata\\22:\\22{"
             "\\\\\\22block_q\\\\\\22: 128, \\\\\\22block_kv\\\\\\22: 256, "
             "\\\\\\22block_q_dkv\\\\\\22: null}\"}}";
  op.operands = {0, 1, 2, 3, 4, 5};
  op.results = {6};
  const auto type = [&](int v) -> const TensorType& { return types[static_cast<size_t>(v)]; };
  const std::optional<compute::SplashCall> c = splash_call(op, type);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->batch_heads, 8);
  EXPECT_EQ(c->q_len, 256);
  EXPECT_EQ(c->kv_len, 512);
  EXPECT_EQ(c->block_q, 128);  // not block_q_dkv's null
  EXPECT_EQ(c->block_kv, 256);  // priced per grid step of these blocks (compute/splash_kernel.h)
  EXPECT_DOUBLE_EQ(compute::splash_flops(*c), 2.0 * 8 * 256 * 512 * (16 + 16));
  double io = 0;
  for (const TensorType& t : types) io += t.bytes();
  // Two q blocks: K and V are read once more than the operands count them.
  EXPECT_DOUBLE_EQ(compute::splash_bytes(*c), io + 2 * (8 * 512 * 16 * 4.0));
  // Any other custom call stays unpriced here.
  op.attrs = "{kernel_name = \"my_kernel\"}";
  EXPECT_FALSE(splash_call(op, type).has_value());
}

TEST(ShloKernelCall, BlockSizesReadInBothTextForms) {
  EXPECT_EQ(compute::kernel_block_size("{\\\"block_q\\\": 512, \\\"block_kv\\\": 1024}", "block_kv"), 1024);
  EXPECT_EQ(compute::kernel_block_size("\\\\\\22block_q_dkv\\\\\\22: 7, \\\\\\22block_q\\\\\\22: 384", "block_q"), 384);
  EXPECT_EQ(compute::kernel_block_size("\\\"block_q\\\": null", "block_q"), 0);
  EXPECT_EQ(compute::kernel_block_size("no sizes here", "block_q"), 0);
}

}  // namespace
}  // namespace aoizora::shlo
