#include <gtest/gtest.h>

#include <string>

#include "aoizora/hlo/hlo_loader.h"

namespace aoizora::hlo {
namespace {

double entry_flops(const std::string& body) {
  std::string text = "HloModule m, num_partitions=1\n\nENTRY %e " + body;
  auto g = collective_graph_from_text(text, "conv.hlo");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().to_string());
  return g.ok() ? g->total_flops() : -1;
}

// The TPU compiler writes a batched matmul [B,H,S,D] x [B,H,T,D] as a convolution whose
// window runs over the batch dims of a dilated input: only one window position per output
// is real, so the cost is 2*B*H*S*T*D, not 24x that.
TEST(HloOpCost, DilatedWindowConvolutionIsABatchedMatmul) {
  double f = entry_flops(R"((q: bf16[2,592,12,128], k: bf16[2,592,12,128]) -> f32[2,12,592,592] {
  %q = bf16[2,592,12,128]{3,1,2,0} parameter(0)
  %k = bf16[2,592,12,128]{3,1,2,0} parameter(1)
  ROOT %c = f32[2,12,592,592]{2,3,1,0} convolution(%q, %k), window={size=2x12 stride=1x11 lhs_dilate=2x12}, dim_labels=0b1f_0o1i->01bf
})");
  EXPECT_DOUBLE_EQ(f, 2.0 * 2 * 12 * 592 * 592 * 128);
}

TEST(HloOpCost, PlainMatmulConvolution) {
  double f = entry_flops(R"((x: bf16[512,512], w: bf16[512,4096]) -> bf16[512,4096] {
  %x = bf16[512,512]{1,0} parameter(0)
  %w = bf16[512,4096]{1,0} parameter(1)
  ROOT %c = bf16[512,4096]{1,0} convolution(%x, %w), dim_labels=bf_io->bf
})");
  EXPECT_DOUBLE_EQ(f, 2.0 * 512 * 512 * 4096);
}

TEST(HloOpCost, PaddedSpatialConvolutionCountsOnlyRealInputs) {
  // A 1-D convolution of length 4 with a 3-tap kernel and padding 1 on each side: of the
  // 4 x 3 (output, tap) pairs, the first output's left tap and the last output's right tap
  // fall on padding, so 10 pairs are real. One feature in, one out, batch 1.
  double f = entry_flops(R"((x: f32[1,4,1], w: f32[3,1,1]) -> f32[1,4,1] {
  %x = f32[1,4,1]{2,1,0} parameter(0)
  %w = f32[3,1,1]{2,1,0} parameter(1)
  ROOT %c = f32[1,4,1]{2,1,0} convolution(%x, %w), window={size=3 pad=1_1}, dim_labels=b0f_0io->b0f
})");
  EXPECT_DOUBLE_EQ(f, 2.0 * 10);
}

}  // namespace
}  // namespace aoizora::hlo
