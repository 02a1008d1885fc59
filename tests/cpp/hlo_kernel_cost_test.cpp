#include "aoizora/hlo/kernel_cost.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "aoizora/cost/q2.h"
#include "aoizora/hlo/hlo_loader.h"
#include "aoizora/hlo/hlo_parser.h"
#include "aoizora/topo/catalog.h"

namespace aoizora::hlo {
namespace {

// tests/data/regen_kernels.py: ring attention with the splash kernel on v5e:2x4, per device
// and call B 1 x H 8, Sq = Skv = 1024, D = Dv = 128 bf16, blocks q 256 / kv 512 / 256.
constexpr const char* kFixture = "splash_ring.v5e_2x4.hlo";
constexpr double kFlops = 2.0 * 8 * 1024 * 1024 * (128 + 128);
constexpr double kQ = 8.0 * 1024 * 128 * 2;  // = K = V = O bytes
// Operands once: two s8[1,4,2] mask tables, q, k, v, q segment ids s32[1024,128], kv segment
// ids s32[8,1024]; K and V again for each of the other 1024/256 - 1 q blocks; results once:
// m, l, o scratch f32[256,128], the output and the logsumexp f32[8,1024,128].
constexpr double kBytes = (8 + 8 + 3 * kQ + 1024 * 128 * 4 + 8 * 1024 * 4) + 3 * 2 * kQ +
                          (3 * 256 * 128 * 4 + kQ + 8.0 * 1024 * 128 * 4);

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string fixture_path() { return std::string(AOIZORA_TEST_DATA) + "/hlo/" + kFixture; }

TEST(HloKernelCost, SplashRingFixtureIsPricedFromShapesAndBlocks) {
  const std::string text = read(fixture_path());
  auto m = parse_hlo_module(text, kFixture);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  std::vector<KernelCost> found;
  for (const Computation& c : m->computations)
    for (const Instruction& ins : c.instructions)
      if (auto k = attention_kernel_cost(c, ins)) found.push_back(*k);
  ASSERT_EQ(found.size(), 2u);  // one kernel call per ring step
  for (const KernelCost& k : found) {
    EXPECT_EQ(k.kernel, "splash_mha_fwd");
    EXPECT_EQ(k.batch_heads, 8);
    EXPECT_EQ(k.q_len, 1024);
    EXPECT_EQ(k.kv_len, 1024);
    EXPECT_EQ(k.head_dim, 128);
    EXPECT_EQ(k.head_dim_v, 128);
    EXPECT_EQ(k.block_q, 256);
    EXPECT_EQ(k.block_kv, 512);
    EXPECT_EQ(k.block_kv_compute, 256);
    EXPECT_DOUBLE_EQ(k.flops, kFlops);
    EXPECT_DOUBLE_EQ(k.bytes, kBytes);
  }
}

// The simulator prices a kernel op per grid step (compute/splash_kernel.h) with the blocks
// the HLO records: 8 heads x 1024 / 256 q blocks x 1024 / 512 kv blocks = 64 steps, each at
// least its two matmuls; more than the whole-op roofline, which has no step cost.
TEST(HloKernelCost, SimulatorPricesAKernelPerGridStepOfItsBlocks) {
  auto g = collective_graph_from_file(fixture_path());
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  auto spec = topo::chip_spec("v5e");
  ASSERT_TRUE(spec.ok());
  int kernels = 0;
  for (const Region& r : g->regions)
    for (const ScheduledOp& op : r.ops) {
      if (op.name.rfind("splash_mha_fwd", 0) != 0) continue;
      ++kernels;
      EXPECT_FALSE(op.opaque);
      EXPECT_DOUBLE_EQ(op.flops, kFlops);
      EXPECT_DOUBLE_EQ(op.bytes, kBytes);
      ASSERT_TRUE(op.kernel.has_value());
      EXPECT_EQ(op.kernel->block_kv, 512);
      EXPECT_EQ(op.kernel->block_kv_compute, 256);
      const compute::SplashTime t = compute::splash_time(*op.kernel, *spec);
      EXPECT_DOUBLE_EQ(t.steps, 64);
      const double roofline = std::max(kFlops / spec->core_peak_flops(),
                                       kBytes / spec->core_hbm_bandwidth());
      EXPECT_DOUBLE_EQ(cost::op_seconds(op, *spec), t.seconds);
      EXPECT_GT(t.seconds, roofline + 64 * spec->grid_step_seconds * 0.99);
    }
  EXPECT_EQ(kernels, 2);
}

Result<HloModule> module_of(const std::string& text) { return parse_hlo_module(text, "k.hlo"); }

const std::string kHeader = "HloModule m, num_partitions=1\n\nENTRY %e (q: bf16[2,512,128]) -> ";

// Without recorded block sizes, block_q is read from the kernel's m scratch [block_q, 128]:
// here 128, so K and V are streamed 512 / 128 = 4 times.
TEST(HloKernelCost, BlockQFallsBackToTheScratchShape) {
  const std::string text = kHeader + R"((f32[128,128], bf16[2,512,128]) {
  %q = bf16[2,512,128]{2,1,0} parameter(0)
  ROOT %splash_mha_fwd_no_residuals.1 = (f32[128,128]{1,0}, bf16[2,512,128]{2,1,0}) custom-call(%q, %q, %q), custom_call_target="tpu_custom_call"
})";
  auto m = module_of(text);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const Computation& c = m->computations[m->entry];
  auto k = attention_kernel_cost(c, c.instructions.back());
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->block_q, 128);
  EXPECT_EQ(k->block_kv, 0);
  const double qb = 2.0 * 512 * 128 * 2;
  EXPECT_DOUBLE_EQ(k->flops, 2.0 * 2 * 512 * 512 * 256);
  EXPECT_DOUBLE_EQ(k->bytes, 3 * qb + 3 * 2 * qb + (128 * 128 * 4 + qb));
}

TEST(HloKernelCost, OtherTpuCustomCallsAreNotKernels) {
  const std::string text = kHeader + R"(bf16[2,512,128] {
  %q = bf16[2,512,128]{2,1,0} parameter(0)
  ROOT %my_kernel = bf16[2,512,128]{2,1,0} custom-call(%q, %q, %q), custom_call_target="tpu_custom_call", metadata={op_name="jit(f)/my_kernel/pallas_call"}
})";
  auto m = module_of(text);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const Computation& c = m->computations[m->entry];
  EXPECT_FALSE(attention_kernel_cost(c, c.instructions.back()).has_value());
  auto g = collective_graph_from_text(text, "k.hlo");
  ASSERT_TRUE(g.ok());
  EXPECT_TRUE(g->regions[0].ops.back().opaque);  // the generic estimate stays
}

}  // namespace
}  // namespace aoizora::hlo
