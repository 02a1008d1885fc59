#include <gtest/gtest.h>

#include <string>

#include "aoizora/hlo/hlo_loader.h"

namespace aoizora::hlo {
namespace {

CollectiveGraph load(const std::string& computations, const std::string& entry) {
  std::string text = "HloModule m, num_partitions=1\n\n" + computations + "\nENTRY %e " + entry;
  auto g = collective_graph_from_text(text, "cost.hlo");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().to_string());
  return g.ok() ? std::move(*g) : CollectiveGraph{};
}

double entry_flops(const std::string& body) { return load("", body).total_flops(); }

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

// A fusion that takes one block out of a stacked operand reads the block, not the stack
// (XLA's rule), also when a nested fusion does the slicing.
TEST(HloOpCost, FusionThatSlicesItsOperandReadsOnlyTheSlice) {
  CollectiveGraph g = load(R"(
%inner (a: f32[16,256], i: s32[]) -> f32[1,256] {
  %a = f32[16,256]{1,0} parameter(0)
  %i = s32[] parameter(1)
  %z = s32[] constant(0)
  ROOT %s = f32[1,256]{1,0} dynamic-slice(%a, %i, %z), dynamic_slice_sizes={1,256}
}

%outer (stack: f32[16,256], i: s32[], x: f32[1,256]) -> f32[1,256] {
  %stack = f32[16,256]{1,0} parameter(0)
  %i = s32[] parameter(1)
  %x = f32[1,256]{1,0} parameter(2)
  %blk = f32[1,256]{1,0} fusion(%stack, %i), kind=kLoop, calls=%inner
  ROOT %m = f32[1,256]{1,0} multiply(%blk, %x)
}
)", R"((stack: f32[16,256], i: s32[], x: f32[1,256]) -> f32[1,256] {
  %stack = f32[16,256]{1,0} parameter(0)
  %i = s32[] parameter(1)
  %x = f32[1,256]{1,0} parameter(2)
  ROOT %f = f32[1,256]{1,0} fusion(%stack, %i, %x), kind=kLoop, calls=%outer
})");
  // Reads one 1 KiB row of the stack, the 4-byte index and x (1 KiB); writes 1 KiB.
  EXPECT_DOUBLE_EQ(g.total_bytes(), 1024 + 4 + 1024 + 1024);
}

// TPU7x's compiled layer loop re-tiles the stacked weights (a nested fusion that is one
// layout-only copy, T(16,128) -> T(8,128)) and then slices one layer out: the fusion still
// reads one layer, not the stack. A copy that changes the dims is a real transpose-like read
// of the whole operand and is charged whole.
TEST(HloOpCost, SliceBehindALayoutCopyReadsOnlyTheSlice) {
  const std::string retile = R"(
%retile (in: bf16[30,256,256]) -> bf16[30,256,256] {
  %in = bf16[30,256,256]{2,1,0:T(16,128)(2,1)} parameter(0)
  ROOT %c = bf16[30,256,256]{2,1,0:T(8,128)(2,1)} copy(%in)
}

%layer (stack: bf16[30,256,256], i: s32[]) -> bf16[256,256,1] {
  %stack = bf16[30,256,256]{2,1,0:T(16,128)(2,1)} parameter(0)
  %r = bf16[30,256,256]{2,1,0:T(8,128)(2,1)} fusion(%stack), kind=kLoop, calls=%retile
  %i = s32[] parameter(1)
  %z = s32[] constant(0)
  %s = bf16[1,256,256]{2,1,0:T(8,128)(2,1)} dynamic-slice(%r, %i, %z, %z), dynamic_slice_sizes={1,256,256}
  ROOT %b = bf16[256,256,1]{1,0,2:T(8,128)(2,1)} bitcast(%s)
}
)";
  const std::string entry = R"((stack: bf16[30,256,256], i: s32[]) -> bf16[256,256,1] {
  %stack = bf16[30,256,256]{2,1,0:T(16,128)(2,1)} parameter(0)
  %i = s32[] parameter(1)
  ROOT %f = bf16[256,256,1]{1,0,2:T(8,128)(2,1)} fusion(%stack, %i), kind=kLoop, calls=%layer
})";
  const double layer = 256 * 256 * 2;
  // Reads one layer of the stack and the index; writes one layer.
  EXPECT_DOUBLE_EQ(load(retile, entry).total_bytes(), layer + 4 + layer);

  // The same slice behind a copy that transposes (the dims change): the whole stack is read.
  const std::string transpose = R"(
%transpose (in: bf16[30,256,256]) -> bf16[256,30,256] {
  %in = bf16[30,256,256]{2,1,0} parameter(0)
  ROOT %c = bf16[256,30,256]{2,1,0} copy(%in)
}

%rows (stack: bf16[30,256,256], i: s32[]) -> bf16[1,30,256] {
  %stack = bf16[30,256,256]{2,1,0} parameter(0)
  %r = bf16[256,30,256]{2,1,0} fusion(%stack), kind=kLoop, calls=%transpose
  %i = s32[] parameter(1)
  %z = s32[] constant(0)
  ROOT %s = bf16[1,30,256]{2,1,0} dynamic-slice(%r, %i, %z, %z), dynamic_slice_sizes={1,30,256}
}
)";
  const std::string entry_rows = R"((stack: bf16[30,256,256], i: s32[]) -> bf16[1,30,256] {
  %stack = bf16[30,256,256]{2,1,0} parameter(0)
  %i = s32[] parameter(1)
  ROOT %f = bf16[1,30,256]{2,1,0} fusion(%stack, %i), kind=kLoop, calls=%rows
})";
  EXPECT_DOUBLE_EQ(load(transpose, entry_rows).total_bytes(), 30 * layer + 4 + 30 * 256 * 2);
}

// AllocateBuffer (what the TPU compiler makes of a broadcast that is overwritten whole, e.g.
// a ring kernel's accumulators) reserves memory: it moves no bytes, unlike another custom
// call of the same shape, which is charged its result.
TEST(HloOpCost, AllocateBufferMovesNoBytes) {
  const std::string entry = R"(() -> f32[4,12,608,128] {
  ROOT %a = f32[4,12,608,128]{3,2,1,0} custom-call(), custom_call_target="AllocateBuffer"
})";
  CollectiveGraph g = load("", entry);
  EXPECT_DOUBLE_EQ(g.total_bytes(), 0);
  std::string other = entry;
  other.replace(other.find("AllocateBuffer"), 14, "SomethingElse");
  EXPECT_DOUBLE_EQ(load("", other).total_bytes(), 4.0 * 4 * 12 * 608 * 128);
}

TEST(HloOpCost, InPlaceDynamicUpdateSliceWritesOnlyTheUpdate) {
  CollectiveGraph g = load(R"(
%upd (buf: f32[16,256], row: f32[1,256], i: s32[]) -> f32[16,256] {
  %buf = f32[16,256]{1,0} parameter(0)
  %row = f32[1,256]{1,0} parameter(1)
  %i = s32[] parameter(2)
  %z = s32[] constant(0)
  ROOT %d = f32[16,256]{1,0} dynamic-update-slice(%buf, %row, %i, %z)
}
)", R"((buf: f32[16,256], row: f32[1,256], i: s32[]) -> f32[16,256] {
  %buf = f32[16,256]{1,0} parameter(0)
  %row = f32[1,256]{1,0} parameter(1)
  %i = s32[] parameter(2)
  ROOT %f = f32[16,256]{1,0} fusion(%buf, %row, %i), kind=kLoop, calls=%upd
})");
  // Updated in place, as XLA counts it: the buffer is neither read nor rewritten; the row is
  // read and written once, plus the index.
  EXPECT_DOUBLE_EQ(g.total_bytes(), 1024 + 4 + 1024);
}

// TPU async DMAs: a slice-start moves one slice of its operand (element 1 of its result
// tuple), a copy-start one buffer; each reads and writes it once, and the -done only waits.
TEST(HloOpCost, AsyncSliceAndCopyMoveOnlyTheirBuffer) {
  CollectiveGraph g = load("", R"((w: bf16[40,256,512]) -> bf16[256,512] {
  %w = bf16[40,256,512]{2,1,0} parameter(0)
  %ss = ((bf16[40,256,512]{2,1,0}), bf16[1,256,512]{2,1,0}, s32[]) slice-start(%w), slice={[3:4], [0:256], [0:512]}
  %sd = bf16[1,256,512]{2,1,0} slice-done(%ss)
  %b = bf16[256,512]{1,0} bitcast(%sd)
  %cs = (bf16[256,512]{1,0}, bf16[256,512]{1,0}, u32[]) copy-start(%b)
  ROOT %cd = bf16[256,512]{1,0} copy-done(%cs)
})");
  EXPECT_DOUBLE_EQ(g.total_bytes(), 2.0 * (256 * 512 * 2) * 2);
  // The same slice as an explicit async-start of a slice computation costs the same.
  CollectiveGraph explicit_form = load(R"(sl {
  %a = bf16[40,256,512]{2,1,0} parameter(0)
  ROOT %s = bf16[1,256,512]{2,1,0} slice(%a), slice={[3:4], [0:256], [0:512]}
}
)", R"((w: bf16[40,256,512]) -> bf16[1,256,512] {
  %w = bf16[40,256,512]{2,1,0} parameter(0)
  %ss = ((bf16[40,256,512]{2,1,0}), bf16[1,256,512]{2,1,0}, s32[]) async-start(%w), calls=%sl
  ROOT %sd = bf16[1,256,512]{2,1,0} async-done(%ss)
})");
  EXPECT_DOUBLE_EQ(explicit_form.total_bytes(), 2.0 * (256 * 512 * 2));
}

}  // namespace
}  // namespace aoizora::hlo
