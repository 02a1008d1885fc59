#include "aoizora/hlo/hlo_loader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace aoizora::hlo {
namespace {

CollectiveGraph load(const std::string& text) {
  auto g = collective_graph_from_text(text, "snippet.hlo");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().to_string());
  return g.ok() ? std::move(*g) : CollectiveGraph{};
}

constexpr const char* kAdd = R"(
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %s = f32[] add(%x, %y)
}
)";

TEST(HloLoader, AsyncStartDoneAndWindow) {
  std::string text = std::string("HloModule m, num_partitions=8\n") + kAdd + R"(
ENTRY %e (p: bf16[64,128]) -> bf16[64,512] {
  %p = bf16[64,128]{1,0} parameter(0)
  %ags = (bf16[64,128]{1,0}, bf16[64,512]{1,0}) all-gather-start(%p), channel_id=3, replica_groups=[2,4]<=[4,2]T(1,0), dimensions={1}, use_global_device_ids=true
  %n = bf16[64,128]{1,0} negate(%p)
  %agd = bf16[64,512]{1,0} all-gather-done(%ags)
  ROOT %r = bf16[64,512]{1,0} add(%agd, %agd)
}
)";
  CollectiveGraph g = load(text);
  ASSERT_EQ(g.collectives.size(), 1u);
  const Collective& c = g.collectives[0];
  EXPECT_EQ(c.kind, CollectiveKind::kAllGather);
  EXPECT_TRUE(c.async);
  EXPECT_EQ(c.groups, (std::vector<std::vector<int>>{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(c.operand_bytes, 64 * 128 * 2);
  EXPECT_EQ(c.result_bytes, 64 * 512 * 2);
  EXPECT_EQ(c.channel_id, 3);
  const Region& r = g.regions[0];
  EXPECT_EQ(r.ops[c.start_op].kind, OpKind::kCollectiveStart);
  EXPECT_EQ(r.ops[c.done_op].kind, OpKind::kCollectiveDone);
  EXPECT_EQ(c.done_op - c.start_op, 2);  // the negate runs in the async window
  EXPECT_EQ(r.ops[c.done_op + 1].deps, (std::vector<int>{c.done_op}));
  EXPECT_DOUBLE_EQ(g.total_flops(), 64 * 128 + 64 * 512);
}

// The start and done fusions of a TPU async all-gather (channel_id=5): each wraps the same
// collective; a test adds its continuation fusion and entry.
constexpr const char* kChainStartAndDone = R"(HloModule m, num_partitions=2
%start_comp (s0: bf16[64,128]) -> (bf16[64,128], bf16[128,128]) {
  %s0 = bf16[64,128]{1,0} parameter(0)
  %sg = bf16[128,128]{1,0} all-gather(%s0), channel_id=5, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true
  ROOT %st = (bf16[64,128]{1,0}, bf16[128,128]{1,0}) tuple(%s0, %sg)
}
%done_comp (d0: bf16[64,128], d1: bf16[128,128]) -> bf16[128,128] {
  %d0 = bf16[64,128]{1,0} parameter(0)
  %d1 = bf16[128,128]{1,0} parameter(1)
  ROOT %dg = bf16[128,128]{1,0} all-gather(%d0), channel_id=5, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true
}
)";

// The TPU compiler's async collective fusion: one all-gather printed as a start fusion, a
// continuation fusion (a dot that runs while it is in flight, with the collective's buffers
// passed through) and a done fusion, all wrapping the same all-gather (channel_id=5).
TEST(HloLoader, AsyncCollectiveFusionChainIsOneCollective) {
  std::string text = std::string(kChainStartAndDone) + R"(
%cont_comp (c0: bf16[64,128], c1: bf16[128,128], x: bf16[32,128], w: bf16[128,128]) -> (bf16[32,128], bf16[64,128], bf16[128,128]) {
  %c0 = bf16[64,128]{1,0} parameter(0)
  %c1 = bf16[128,128]{1,0} parameter(1)
  %cg = bf16[128,128]{1,0} all-gather(%c0), channel_id=5, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true
  %x = bf16[32,128]{1,0} parameter(2)
  %w = bf16[128,128]{1,0} parameter(3)
  %d = bf16[32,128]{1,0} dot(%x, %w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT %ct = (bf16[32,128]{1,0}, bf16[64,128]{1,0}, bf16[128,128]{1,0}) tuple(%d, %c0, %cg)
}
ENTRY %e (p: bf16[64,128], x: bf16[32,128], w: bf16[128,128]) -> bf16[32,128] {
  %p = bf16[64,128]{1,0} parameter(0)
  %x = bf16[32,128]{1,0} parameter(1)
  %w = bf16[128,128]{1,0} parameter(2)
  %start = (bf16[64,128]{1,0}, bf16[128,128]{1,0}) fusion(%p), kind=kCustom, calls=%start_comp
  %g0 = bf16[64,128]{1,0} get-tuple-element(%start), index=0
  %g1 = bf16[128,128]{1,0} get-tuple-element(%start), index=1
  %cont = (bf16[32,128]{1,0}, bf16[64,128]{1,0}, bf16[128,128]{1,0}) fusion(%g0, %g1, %x, %w), kind=kOutput, calls=%cont_comp, backend_config={"continuation_config":{"output_tuple_original_start":"0","output_tuple_original_end":"0","operand_original_start":"2","operand_original_end":"3"}}
  %h0 = bf16[64,128]{1,0} get-tuple-element(%cont), index=1
  %h1 = bf16[128,128]{1,0} get-tuple-element(%cont), index=2
  %done = bf16[128,128]{1,0} fusion(%h0, %h1), kind=kCustom, calls=%done_comp
  %y = bf16[32,128]{1,0} get-tuple-element(%cont), index=0
  ROOT %r = bf16[32,128]{1,0} dot(%y, %done), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)";
  CollectiveGraph g = load(text);
  ASSERT_EQ(g.collectives.size(), 1u);
  const Collective& c = g.collectives[0];
  EXPECT_TRUE(c.async);
  EXPECT_EQ(c.operand_bytes, 64 * 128 * 2);
  EXPECT_EQ(c.result_bytes, 128 * 128 * 2);
  const Region& r = g.regions[0];
  EXPECT_EQ(r.ops[c.start_op].name, "start");
  EXPECT_EQ(r.ops[c.start_op].kind, OpKind::kCollectiveStart);
  EXPECT_EQ(r.ops[c.done_op].name, "done");
  EXPECT_EQ(r.ops[c.done_op].kind, OpKind::kCollectiveDone);
  // The continuation is compute in the async window: its dot, and only its own operands and
  // output as bytes (x, w read; the 32x128 product written).
  int cont = -1;
  for (size_t i = 0; i < r.ops.size(); ++i)
    if (r.ops[i].name == "cont") cont = static_cast<int>(i);
  ASSERT_GT(cont, c.start_op);
  ASSERT_LT(cont, c.done_op);
  EXPECT_EQ(r.ops[cont].kind, OpKind::kCompute);
  EXPECT_TRUE(r.ops[cont].collectives.empty());
  EXPECT_DOUBLE_EQ(r.ops[cont].flops, 2.0 * 32 * 128 * 128);
  EXPECT_DOUBLE_EQ(r.ops[cont].bytes, (32 * 128 + 128 * 128 + 32 * 128) * 2.0);
  EXPECT_EQ(g.collective_bytes(CollectiveKind::kAllGather), 64 * 128 * 2);
}

// The same chain across a nested loop: started before it, continued inside it (a matmul of
// each trip), done after it. One collective, whose -done lies in the region after the loop.
TEST(HloLoader, AsyncCollectiveFusionChainAcrossANestedLoop) {
  std::string text = std::string(kChainStartAndDone) + R"(
%cont_comp (c0: bf16[64,128], c1: bf16[128,128], x: bf16[32,128]) -> (bf16[32,128], bf16[64,128], bf16[128,128]) {
  %c0 = bf16[64,128]{1,0} parameter(0)
  %c1 = bf16[128,128]{1,0} parameter(1)
  %cg = bf16[128,128]{1,0} all-gather(%c0), channel_id=5, replica_groups={{0,1}}, dimensions={0}, use_global_device_ids=true
  %x = bf16[32,128]{1,0} parameter(2)
  %d = bf16[32,128]{1,0} dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  ROOT %ct = (bf16[32,128]{1,0}, bf16[64,128]{1,0}, bf16[128,128]{1,0}) tuple(%d, %c0, %cg)
}
%body (b: (bf16[64,128], bf16[128,128], bf16[32,128])) -> (bf16[64,128], bf16[128,128], bf16[32,128]) {
  %b = (bf16[64,128]{1,0}, bf16[128,128]{1,0}, bf16[32,128]{1,0}) parameter(0)
  %b0 = bf16[64,128]{1,0} get-tuple-element(%b), index=0
  %b1 = bf16[128,128]{1,0} get-tuple-element(%b), index=1
  %bx = bf16[32,128]{1,0} get-tuple-element(%b), index=2
  %cont = (bf16[32,128]{1,0}, bf16[64,128]{1,0}, bf16[128,128]{1,0}) fusion(%b0, %b1, %bx), kind=kOutput, calls=%cont_comp, backend_config={"continuation_config":{"output_tuple_original_start":"0","output_tuple_original_end":"0","operand_original_start":"2","operand_original_end":"2"}}
  %y = bf16[32,128]{1,0} get-tuple-element(%cont), index=0
  %h0 = bf16[64,128]{1,0} get-tuple-element(%cont), index=1
  %h1 = bf16[128,128]{1,0} get-tuple-element(%cont), index=2
  ROOT %bt = (bf16[64,128]{1,0}, bf16[128,128]{1,0}, bf16[32,128]{1,0}) tuple(%h0, %h1, %y)
}
%cond (c: (bf16[64,128], bf16[128,128], bf16[32,128])) -> pred[] {
  %c = (bf16[64,128]{1,0}, bf16[128,128]{1,0}, bf16[32,128]{1,0}) parameter(0)
  ROOT %t = pred[] constant(true)
}
ENTRY %e (p: bf16[64,128], x: bf16[32,128]) -> bf16[128,128] {
  %p = bf16[64,128]{1,0} parameter(0)
  %x = bf16[32,128]{1,0} parameter(1)
  %start = (bf16[64,128]{1,0}, bf16[128,128]{1,0}) fusion(%p), kind=kCustom, calls=%start_comp
  %g0 = bf16[64,128]{1,0} get-tuple-element(%start), index=0
  %g1 = bf16[128,128]{1,0} get-tuple-element(%start), index=1
  %init = (bf16[64,128]{1,0}, bf16[128,128]{1,0}, bf16[32,128]{1,0}) tuple(%g0, %g1, %x)
  %loop = (bf16[64,128]{1,0}, bf16[128,128]{1,0}, bf16[32,128]{1,0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"4"}}
  %l0 = bf16[64,128]{1,0} get-tuple-element(%loop), index=0
  %l1 = bf16[128,128]{1,0} get-tuple-element(%loop), index=1
  ROOT %done = bf16[128,128]{1,0} fusion(%l0, %l1), kind=kCustom, calls=%done_comp
}
)";
  CollectiveGraph g = load(text);
  ASSERT_EQ(g.collectives.size(), 1u);
  const Collective& c = g.collectives[0];
  EXPECT_TRUE(c.async);
  ASSERT_EQ(g.regions.size(), 3u);
  EXPECT_EQ(c.region, 0);
  EXPECT_EQ(g.regions[0].ops[c.start_op].kind, OpKind::kCollectiveStart);
  ASSERT_EQ(c.done_region, 2);
  EXPECT_EQ(g.regions[2].ops[c.done_op].name, "done");
  EXPECT_EQ(g.regions[2].ops[c.done_op].kind, OpKind::kCollectiveDone);
  EXPECT_EQ(g.regions[1].repeat, 4);
  bool cont_is_compute = false;
  for (const ScheduledOp& op : g.regions[1].ops)
    if (op.name == "cont") cont_is_compute = op.kind == OpKind::kCompute && op.flops > 0;
  EXPECT_TRUE(cont_is_compute);
  EXPECT_EQ(g.collective_bytes(CollectiveKind::kAllGather), 64 * 128 * 2);
}

TEST(HloLoader, AsyncWrapperFusedReduceScatterAndTupleAllToAll) {
  std::string text = std::string("HloModule m, num_partitions=4\n") + kAdd + R"(
%wrapped (a: f32[16]) -> f32[4] {
  %a = f32[16]{0} parameter(0)
  ROOT %rs = f32[4]{0} reduce-scatter(%a), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, dimensions={0}, to_apply=%add
}

%all-reduce-scatter (input: f32[32]) -> f32[8] {
  %input = f32[32]{0} parameter(0)
  %ar = f32[32]{0} all-reduce(%input), channel_id=2, replica_groups={{0,1,2,3}}, use_global_device_ids=true, to_apply=%add
  %i = u32[] partition-id()
  ROOT %ds = f32[8]{0} dynamic-slice(%ar, %i), dynamic_slice_sizes={8}
}

ENTRY %e (p: f32[16], q: f32[32]) -> f32[4] {
  %p = f32[16]{0} parameter(0)
  %q = f32[32]{0} parameter(1)
  %as = ((f32[16]{0}), f32[4]{0}) async-start(%p), calls=%wrapped
  %f = f32[8]{0} fusion(%q), kind=kCustom, calls=%all-reduce-scatter
  %ad = f32[4]{0} async-done(%as)
  %t = (f32[2]{0}, f32[2]{0}) all-to-all(%ad, %ad), channel_id=4, replica_groups={{0,1},{2,3}}
  ROOT %g = f32[2]{0} get-tuple-element(%t), index=0
}
)";
  CollectiveGraph g = load(text);
  ASSERT_EQ(g.collectives.size(), 3u);
  const Collective& rs = g.collectives[0];
  EXPECT_EQ(rs.kind, CollectiveKind::kReduceScatter);
  EXPECT_TRUE(rs.async);
  EXPECT_EQ(rs.name, "as");
  EXPECT_EQ(rs.operand_bytes, 64);
  EXPECT_EQ(rs.result_bytes, 16);
  EXPECT_EQ(g.regions[0].ops[rs.done_op].name, "ad");
  const Collective& fused = g.collectives[1];
  EXPECT_EQ(fused.kind, CollectiveKind::kReduceScatter);  // all-reduce + slice of its result
  EXPECT_EQ(fused.opcode, "all-reduce");
  EXPECT_EQ(fused.name, "f");
  EXPECT_EQ(fused.operand_bytes, 128);
  EXPECT_EQ(fused.result_bytes, 32);
  const Collective& a2a = g.collectives[2];
  EXPECT_EQ(a2a.kind, CollectiveKind::kAllToAll);
  EXPECT_EQ(a2a.operand_bytes, 32);
  EXPECT_EQ(a2a.result_bytes, 32);
  EXPECT_EQ(a2a.groups, (std::vector<std::vector<int>>{{0, 1}, {2, 3}}));  // cross-partition
}

// An async-update passes an async collective on without performing it again: one
// collective, started by the async-start and completed by the async-done.
TEST(HloLoader, AsyncUpdateDoesNotReplayItsCollective) {
  std::string text = R"(HloModule m, num_partitions=4
%wrapped (a: f32[16]) -> f32[64] {
  %a = f32[16]{0} parameter(0)
  ROOT %ag = f32[64]{0} all-gather(%a), channel_id=1, replica_groups={{0,1,2,3}}, dimensions={0}, use_global_device_ids=true
}
ENTRY %e (p: f32[16]) -> f32[64] {
  %p = f32[16]{0} parameter(0)
  %as = ((f32[16]{0}), f32[64]{0}) async-start(%p), calls=%wrapped
  %au = ((f32[16]{0}), f32[64]{0}) async-update(%as)
  ROOT %ad = f32[64]{0} async-done(%au)
}
)";
  CollectiveGraph g = load(text);
  ASSERT_EQ(g.collectives.size(), 1u);
  const Region& r = g.regions[0];
  ASSERT_EQ(r.ops.size(), 4u);
  EXPECT_EQ(r.ops[1].kind, OpKind::kCollectiveStart);
  EXPECT_EQ(r.ops[2].name, "au");
  EXPECT_EQ(r.ops[2].kind, OpKind::kCompute);
  EXPECT_TRUE(r.ops[2].collectives.empty());
  EXPECT_EQ(r.ops[3].kind, OpKind::kCollectiveDone);
  EXPECT_EQ(r.ops[3].collective, 0);
  EXPECT_EQ(g.collectives[0].done_op, 3);
  EXPECT_EQ(g.collective_bytes(CollectiveKind::kAllGather), 64);
}

// `reduce-scatter-start(...)` is an async-start wrapping a reduce-scatter (XLA's parser
// builds the wrapper): one async collective, started there and completed by its -done, with
// the groups and sizes of the wrapped op.
TEST(HloLoader, AsyncWrappedCollectiveIsOneAsyncCollective) {
  std::string text = std::string("HloModule m, num_partitions=4\n") + kAdd + R"(
ENTRY %e (p: f32[16]) -> f32[4] {
  %p = f32[16]{0} parameter(0)
  %rs = ((f32[16]{0}), f32[4]{0}, s32[]) reduce-scatter-start(%p), channel_id=1, replica_groups={{0,1,2,3}}, use_global_device_ids=true, dimensions={0}, to_apply=%add
  %n = f32[16]{0} negate(%p)
  ROOT %d = f32[4]{0} reduce-scatter-done(%rs)
}
)";
  CollectiveGraph g = load(text);
  ASSERT_EQ(g.collectives.size(), 1u);
  const Collective& rs = g.collectives[0];
  EXPECT_EQ(rs.kind, CollectiveKind::kReduceScatter);
  EXPECT_TRUE(rs.async);
  EXPECT_EQ(rs.name, "rs");
  EXPECT_EQ(rs.operand_bytes, 64);
  EXPECT_EQ(rs.result_bytes, 16);
  EXPECT_EQ(rs.groups, (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
  const Region& r = g.regions[0];
  ASSERT_EQ(r.ops.size(), 4u);
  EXPECT_EQ(r.ops[1].kind, OpKind::kCollectiveStart);
  EXPECT_EQ(r.ops[3].kind, OpKind::kCollectiveDone);
  EXPECT_EQ(rs.done_op, 3);
}

TEST(HloLoader, NestedWhilesCallsAndConditionals) {
  std::string text = std::string("HloModule m, num_partitions=2\n") + kAdd + R"(
%inner_cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(5)
  ROOT %lt = pred[] compare(%n, %i), direction=GT
}

%inner_body (s: (s32[], f32[4])) -> (s32[], f32[4]) {
  %s = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %x = f32[4]{0} get-tuple-element(%s), index=1
  %cp = f32[4]{0} collective-permute(%x), channel_id=1, source_target_pairs={{0,1},{1,0}}
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[4]{0}) tuple(%next, %cp)
}

%outer_cond (s: (s32[], f32[4])) -> pred[] {
  %s = (s32[], f32[4]{0}) parameter(0)
  %i = s32[] get-tuple-element(%s), index=0
  %n = s32[] constant(7)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%helper (h: f32[4]) -> f32[4] {
  %h = f32[4]{0} parameter(0)
  ROOT %ar = f32[4]{0} all-reduce(%h), channel_id=2, replica_groups={{0,1}}, use_global_device_ids=true, to_apply=%add
}

%outer_body (s: (s32[], f32[4])) -> (s32[], f32[4]) {
  %s = (s32[], f32[4]{0}) parameter(0)
  %zero = s32[] constant(0)
  %x0 = f32[4]{0} get-tuple-element(%s), index=1
  %from0 = (s32[], f32[4]{0}) tuple(%zero, %x0)
  %w = (s32[], f32[4]{0}) while(%from0), condition=%inner_cond, body=%inner_body
  %i = s32[] get-tuple-element(%w), index=0
  %x = f32[4]{0} get-tuple-element(%w), index=1
  %c = f32[4]{0} call(%x), to_apply=%helper
  ROOT %t = (s32[], f32[4]{0}) tuple(%i, %c)
}

%branch_cheap (b: f32[4]) -> f32[4] {
  ROOT %b = f32[4]{0} parameter(0)
}

%branch_dear (b: f32[4]) -> f32[4] {
  %b = f32[4]{0} parameter(0)
  %m = f32[4]{0} multiply(%b, %b)
  ROOT %ag = f32[4]{0} all-reduce(%m), replica_groups={}, to_apply=%add
}

ENTRY %e (p: f32[4], k: s32[]) -> f32[4] {
  %p = f32[4]{0} parameter(0)
  %k = s32[] parameter(1)
  %z = s32[] constant(2)
  %t = (s32[], f32[4]{0}) tuple(%z, %p)
  %w = (s32[], f32[4]{0}) while(%t), condition=%outer_cond, body=%outer_body, backend_config={"known_trip_count":{"n":"3"}}
  %x = f32[4]{0} get-tuple-element(%w), index=1
  ROOT %r = f32[4]{0} conditional(%k, %x, %x), branch_computations={%branch_cheap, %branch_dear}
}
)";
  CollectiveGraph g = load(text);
  // entry-before, outer body (x3), inner body (x3x5), outer body rest (x3), entry-after.
  ASSERT_EQ(g.regions.size(), 5u);
  // The loops keep the nesting: the outer body spans regions 1-3, the inner body region 2.
  ASSERT_EQ(g.loops.size(), 2u);
  EXPECT_EQ(g.loops[0].name, "outer_body");
  EXPECT_EQ(g.loops[0].trip_count, 3);
  EXPECT_EQ(g.loops[0].parent, -1);
  EXPECT_EQ(g.loops[0].first_region, 1);
  EXPECT_EQ(g.loops[0].last_region, 3);
  EXPECT_EQ(g.loops[1].name, "inner_body");
  EXPECT_EQ(g.loops[1].trip_count, 5);
  EXPECT_EQ(g.loops[1].parent, 0);
  EXPECT_EQ(g.loops[1].first_region, 2);
  EXPECT_EQ(g.loops[1].last_region, 2);
  EXPECT_EQ(g.regions[1].repeat, 3);
  EXPECT_EQ(g.regions[2].name, "inner_body");
  EXPECT_EQ(g.regions[2].repeat, 15);
  EXPECT_EQ(g.regions[3].repeat, 3);
  EXPECT_EQ(g.regions[4].repeat, 1);
  ASSERT_EQ(g.collectives.size(), 3u);
  EXPECT_EQ(g.collectives[0].kind, CollectiveKind::kCollectivePermute);
  EXPECT_EQ(g.collectives[0].repeat, 15);
  EXPECT_EQ(g.collectives[0].source_target_pairs,
            (std::vector<std::pair<int, int>>{{0, 1}, {1, 0}}));
  EXPECT_EQ(g.collectives[1].kind, CollectiveKind::kAllReduce);  // inlined from the call
  EXPECT_EQ(g.collectives[1].repeat, 3);
  EXPECT_EQ(g.regions[3].ops[g.collectives[1].start_op].name, "ar");
  // The conditional stands for its dearer branch; no channel_id: cross-replica, so with one
  // replica each partition is its own group.
  EXPECT_EQ(g.collectives[2].name, "r");
  EXPECT_EQ(g.collectives[2].groups, (std::vector<std::vector<int>>{{0}, {1}}));
  EXPECT_EQ(g.collective_bytes(CollectiveKind::kCollectivePermute), 16 * 15);
  EXPECT_EQ(g.collective_bytes(CollectiveKind::kAllReduce), 16 * 3 + 16);
  // Flops: all-reduce 4 x 3 (call) + conditional (multiply 4 + all-reduce 4) + the inner
  // counter's add, 1 x 15.
  EXPECT_DOUBLE_EQ(g.total_flops(), 12 + 8 + 15);
}

TEST(HloLoader, UnknownTripCountIsFlagged) {
  std::string text = R"(HloModule m
%c (s: (s32[], f32[])) -> pred[] {
  %s = (s32[], f32[]) parameter(0)
  ROOT %b = pred[] custom-call(%s), custom_call_target="opaque"
}
%b (s: (s32[], f32[])) -> (s32[], f32[]) {
  ROOT %s = (s32[], f32[]) parameter(0)
}
ENTRY %e (p: (s32[], f32[])) -> (s32[], f32[]) {
  %p = (s32[], f32[]) parameter(0)
  ROOT %w = (s32[], f32[]) while(%p), condition=%c, body=%b
}
)";
  CollectiveGraph g = load(text);
  ASSERT_EQ(g.regions.size(), 3u);
  EXPECT_FALSE(g.regions[1].trip_count_known);
  EXPECT_EQ(g.regions[1].repeat, 1);
  ASSERT_EQ(g.loops.size(), 1u);
  EXPECT_FALSE(g.loops[0].trip_count_known);
  EXPECT_EQ(unknown_trip_count_loops(g), (std::vector<std::string>{"b"}));
}

// The TPU compiler's windowed einsum loop counts by 2 (one trip per pair of weight shards
// received from both neighbours): `i < 4` from 0 in steps of 2 is two trips, not four. A
// counter that moves away from its limit never ends: unknown, not a guess.
TEST(HloLoader, TripCountFollowsTheInductionStep) {
  auto program = [](const std::string& init, const std::string& step_op, const std::string& step,
                    const std::string& limit) {
    return R"(HloModule m
%cond (s: (u32[], bf16[8])) -> pred[] {
  %s = (u32[], bf16[8]{0}) parameter(0)
  %i = u32[] get-tuple-element(%s), index=0
  %n = u32[] constant()" + limit + R"()
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}
%body (s: (u32[], bf16[8])) -> (u32[], bf16[8]) {
  %s = (u32[], bf16[8]{0}) parameter(0)
  %i = u32[] get-tuple-element(%s), index=0
  %x = bf16[8]{0} get-tuple-element(%s), index=1
  %cp = bf16[8]{0} collective-permute(%x), channel_id=1, source_target_pairs={{0,1},{1,0}}
  %k = u32[] constant()" + step + R"()
  %next = u32[] )" + step_op + R"((%i, %k)
  ROOT %t = (u32[], bf16[8]{0}) tuple(%next, %cp)
}
ENTRY %e (p: bf16[8]) -> bf16[8] {
  %p = bf16[8]{0} parameter(0)
  %z = u32[] constant()" + init + R"()
  %t = (u32[], bf16[8]{0}) tuple(%z, %p)
  %w = (u32[], bf16[8]{0}) while(%t), condition=%cond, body=%body
  ROOT %x = bf16[8]{0} get-tuple-element(%w), index=1
}
)";
  };
  CollectiveGraph windowed = load(program("0", "add", "2", "4"));
  ASSERT_EQ(windowed.loops.size(), 1u);
  EXPECT_TRUE(windowed.loops[0].trip_count_known);
  EXPECT_EQ(windowed.loops[0].trip_count, 2);
  ASSERT_EQ(windowed.collectives.size(), 1u);
  EXPECT_EQ(windowed.collectives[0].repeat, 2);
  EXPECT_EQ(load(program("1", "add", "3", "11")).loops[0].trip_count, 4);  // 1, 4, 7, 10
  EXPECT_EQ(load(program("0", "add", "1", "5")).loops[0].trip_count, 5);
  CollectiveGraph away = load(program("0", "subtract", "1", "4"));
  EXPECT_FALSE(away.loops[0].trip_count_known);
  // A counter updated other than by a constant step: unknown, not counted by 1.
  EXPECT_FALSE(load(program("1", "multiply", "2", "16")).loops[0].trip_count_known);
  // A counter that starts from a value the program computes: unknown, not counted from 0.
  std::string from_input = program("0", "add", "1", "4");
  const std::string init = "%z = u32[] constant(0)";
  from_input.replace(from_input.find(init), init.size(), "%z = u32[] partition-id()");
  EXPECT_FALSE(load(from_input).loops[0].trip_count_known);
}

TEST(HloLoader, ErrorsAreValues) {
  auto bad_groups = collective_graph_from_text(
      std::string("HloModule m, num_partitions=4\n") + kAdd +
          "ENTRY %e (p: f32[4]) -> f32[4] {\n  %p = f32[4]{0} parameter(0)\n"
          "  ROOT %a = f32[4]{0} all-reduce(%p), channel_id=1, replica_groups={{0,9}}, "
          "use_global_device_ids=true, to_apply=%add\n}\n",
      "x.hlo");
  ASSERT_FALSE(bad_groups.ok());
  EXPECT_EQ(bad_groups.error().line, 10);
  EXPECT_NE(bad_groups.error().to_string().find("x.hlo:10"), std::string::npos);
  EXPECT_FALSE(collective_graph_from_file("/nonexistent/file.hlo").ok());
}

// --- the real fixtures compiled by JAX (tests/data/hlo) against XLA's own numbers ---

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// MANIFEST.json: {"name.hlo": {..., "collectives": {"all-reduce": 1}, ..., "flops": 1.0, ...}}
// Read with string search: the file is written by tests/data/regen.py with sort_keys.
struct ManifestEntry {
  double flops = -1;
  std::map<std::string, int> collectives;
};

ManifestEntry manifest_entry(const std::string& manifest, const std::string& name) {
  ManifestEntry e;
  size_t at = manifest.find("\"" + name + "\"");
  if (at == std::string::npos) return e;
  size_t next = manifest.find(".hlo\"", at + name.size() + 2);
  std::string body = manifest.substr(at, next == std::string::npos ? std::string::npos : next - at);
  size_t f = body.find("\"flops\":");
  if (f != std::string::npos) e.flops = std::stod(body.substr(f + 8));
  size_t c = body.find("\"collectives\":");
  size_t end = body.find('}', c);
  std::string coll = body.substr(c, end - c);
  for (size_t q = coll.find('"', 14); q != std::string::npos; q = coll.find('"', q + 1)) {
    size_t q2 = coll.find('"', q + 1);
    std::string kind = coll.substr(q + 1, q2 - q - 1);
    size_t colon = coll.find(':', q2);
    e.collectives[kind] = std::stoi(coll.substr(colon + 1));
    q = coll.find(',', q2);
    if (q == std::string::npos) break;
  }
  return e;
}

class HloFixture : public ::testing::TestWithParam<const char*> {};

TEST_P(HloFixture, MatchesXla) {
  const std::string dir = std::string(AOIZORA_TEST_DATA) + "/hlo/";
  const std::string name = GetParam();
  auto g = collective_graph_from_file(dir + name);
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  ManifestEntry want = manifest_entry(read(dir + "MANIFEST.json"), name);
  ASSERT_GT(want.flops, 0) << name;
  // XLA's cost_analysis counts a loop body once and reports per device.
  EXPECT_NEAR(g->static_flops() / want.flops, 1.0, 0.05) << name;
  EXPECT_GE(g->total_flops(), g->static_flops());
  // Collective counts by HLO opcode (XLA's regex count) match.
  std::map<std::string, int> got;
  for (const Collective& c : g->collectives) {
    std::string op = c.opcode;
    if (op.size() > 6 && op.substr(op.size() - 6) == "-start") op.resize(op.size() - 6);
    got[op] += 1;
  }
  EXPECT_EQ(got, want.collectives) << name;
  // Every collective has groups (or pairs) covering distinct partition ids.
  for (const Collective& c : g->collectives) {
    if (c.kind == CollectiveKind::kCollectivePermute) {
      EXPECT_EQ(static_cast<int>(c.source_target_pairs.size()), g->num_partitions);
      continue;
    }
    int covered = 0;
    for (const auto& grp : c.groups) covered += static_cast<int>(grp.size());
    EXPECT_EQ(covered, g->num_partitions) << name << " " << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Real, HloFixture,
    ::testing::Values("matmul.cpu8.hlo", "matmul.v5e_2x4.hlo", "matmul.v5e_4x4.hlo",
                      "ring_alltoall.cpu8.hlo", "ring_alltoall.v5e_2x4.hlo",
                      "ring_alltoall.v5e_4x4.hlo", "layers_scan.cpu8.hlo",
                      "layers_scan.v5e_2x4.hlo", "layers_scan.v5e_4x4.hlo"),
    [](const auto& info) {
      std::string s = info.param;
      for (char& ch : s)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return s;
    });

// Closed forms of the probes (python/aoizora/probes.py), derived from the program:
// matmul x[1024,2048] @ w1[2048,2048] sharded (data, model) then @ w2[2048,1024].
TEST(HloFixtureClosedForm, MatmulV5e2x4) {
  auto g = collective_graph_from_file(std::string(AOIZORA_TEST_DATA) + "/hlo/matmul.v5e_2x4.hlo");
  ASSERT_TRUE(g.ok());
  // Partial sums [512 rows, 2048] bf16 are reduce-scattered over model=4 (the TPU's
  // all-reduce-scatter fusion); then h [512, 2048/4] is all-gathered to [512,2048].
  std::map<CollectiveKind, int> kinds;
  for (const Collective& c : g->collectives) kinds[c.kind]++;
  EXPECT_EQ(kinds[CollectiveKind::kReduceScatter], 1);
  EXPECT_EQ(kinds[CollectiveKind::kAllGather], 2);
  EXPECT_EQ(g->collective_bytes(CollectiveKind::kReduceScatter), 512 * 2048 * 2);
  EXPECT_EQ(g->collectives[0].result_bytes, 512 * 512 * 2);
  // Matmul flops per device: 2*512*512*2048 + 2*512*2048*256.
  EXPECT_NEAR(g->total_flops() / (2.0 * 512 * 512 * 2048 + 2.0 * 512 * 2048 * 256), 1.0, 0.01);
}

TEST(HloFixtureClosedForm, LayersScanRepeats) {
  auto g =
      collective_graph_from_file(std::string(AOIZORA_TEST_DATA) + "/hlo/layers_scan.v5e_2x4.hlo");
  ASSERT_TRUE(g.ok());
  ASSERT_EQ(g->collectives.size(), 1u);
  EXPECT_EQ(g->collectives[0].repeat, 4);  // four scanned layers
  // Per layer and device: two matmuls 2*256*1024*1024 each.
  EXPECT_NEAR(g->total_flops() / (4 * 2 * 2.0 * 256 * 1024 * 1024), 1.0, 0.01);
  EXPECT_EQ(g->collective_bytes(CollectiveKind::kAllReduce), 4 * 256 * 1024 * 2);
}

}  // namespace
}  // namespace aoizora::hlo

namespace aoizora::hlo {
namespace {

constexpr const char* kNoCounts = R"(HloModule llama
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[64] parameter(0)
  ROOT r = f32[64] all-reduce(p), channel_id=1, replica_groups=[1,8]<=[8], use_global_device_ids=true, to_apply=add
}
)";

TEST(HloDeviceCount, HeaderWithoutCountsInfersThemFromTheGroups) {
  auto g = collective_graph_from_text(kNoCounts);
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->num_partitions, 8);
  EXPECT_EQ(g->replica_count, 1);
  EXPECT_EQ(g->device_count_source, "inferred from replica groups");
  ASSERT_EQ(g->collectives.size(), 1u);
  EXPECT_EQ(g->collectives[0].groups, (std::vector<std::vector<int>>{{0, 1, 2, 3, 4, 5, 6, 7}}));

  // Cross-replica groups (no channel_id, so no flattened ids either) need replicas, not
  // partitions.
  std::string cross_replica = kNoCounts;
  cross_replica.replace(cross_replica.find("channel_id=1, "), 14, "");
  cross_replica.replace(cross_replica.find(", use_global_device_ids=true"), 28, "");
  auto r = collective_graph_from_text(cross_replica);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->replica_count, 8);
  EXPECT_EQ(r->num_partitions, 1);
}

TEST(HloDeviceCount, GivenDeviceCountOrHeaderWins) {
  auto g = collective_graph_from_text(kNoCounts, "", LoadOptions{16});
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->num_partitions, 16);
  EXPECT_EQ(g->device_count_source, "given");
  std::string with_header = kNoCounts;
  with_header.replace(0, 15, "HloModule llama, num_partitions=8, replica_count=1");
  auto h = collective_graph_from_text(with_header, "", LoadOptions{16});
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  EXPECT_EQ(h->num_partitions, 8);
  EXPECT_EQ(h->device_count_source, "header");
  // A header count too small for the groups stays an error.
  std::string small = kNoCounts;
  small.replace(0, 15, "HloModule llama, num_partitions=4, replica_count=1");
  EXPECT_FALSE(collective_graph_from_text(small).ok());
}

}  // namespace
}  // namespace aoizora::hlo
