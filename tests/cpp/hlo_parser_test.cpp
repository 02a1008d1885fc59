#include "aoizora/hlo/hlo_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace aoizora::hlo {
namespace {

TEST(HloParser, ShapesParseWithLayoutsAndTuplesAndMalformedOnesFail) {
  auto s = parse_shape("bf16[256,1024]{1,0:T(8,128)(2,1)S(1)}");
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->type, PrimitiveType::kBF16);
  EXPECT_EQ(s->dims, (std::vector<int64_t>{256, 1024}));
  EXPECT_EQ(s->layout_text, "1,0:T(8,128)(2,1)S(1)");
  auto layout = parse_layout(s->layout_text);
  ASSERT_TRUE(layout.ok()) << layout.error().to_string();
  EXPECT_EQ(layout->minor_to_major, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(layout->tiles, (std::vector<std::vector<int64_t>>{{8, 128}, {2, 1}}));
  EXPECT_EQ(layout->memory_space, 1);
  EXPECT_FALSE(parse_layout("1,0:T(8,").ok());
  EXPECT_EQ(s->byte_size(), 256 * 1024 * 2);

  auto scalar = parse_shape("s32[]{:T(128)S(6)}");
  ASSERT_TRUE(scalar.ok());
  EXPECT_EQ(scalar->num_elements(), 1);
  EXPECT_EQ(scalar->byte_size(), 4);

  auto tuple = parse_shape("(f32[2,3]{1,0}, (s4[16], pred[]), token[], /*index=3*/u8[0])");
  ASSERT_TRUE(tuple.ok()) << tuple.error().to_string();
  ASSERT_EQ(tuple->tuple.size(), 4u);
  EXPECT_EQ(tuple->tuple[1].tuple[0].byte_size(), 8);  // 16 x 4 bits
  EXPECT_EQ(tuple->byte_size(), 24 + 8 + 1);

  for (const char* t : {"f8e4m3fn[4]", "f8e5m2[4]", "f8e4m3b11fnuz[4]", "u4[4]", "c64[4]",
                        "bf16[<=8,4]", "f32[?]", "f32[4]{0:T(256)E(32)#(s32)*(u64)}"})
    EXPECT_TRUE(parse_shape(t).ok()) << t;
  for (const char* t : {"f33[4]", "f32[4", "f32[4]{0:?}", "(f32[]", "f32[-1]", "f32[4]{0,}x"})
    EXPECT_FALSE(parse_shape(t).ok()) << t;
}

constexpr const char* kModule = R"(HloModule jit_f, is_scheduled=true, entry_computation_layout={(f32[8]{0})->f32[8]{0}}, num_partitions=4, frontend_attributes={a="b,c"}

FileNames
1 "/a/b.py"

FunctionNames
1 "<module>"

FileLocations
1 {file_name_id=1 function_name_id=1 line=3 end_line=3 column=1 end_column=2}

StackFrames
1 {file_location_id=1 parent_frame_id=1}


add (x: f32[], y: f32[]) -> f32[] {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT sum = f32[] add(x, y), backend_config={"k":"}{,\"]","n":[1,{"m":2}]}
}

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0), sharding={devices=[4]<=[4]}, metadata={op_name="a{b" source_file="x.py" source_line=3}
  %c = f32[] constant(0.5)
  %b = f32[8]{0} broadcast(f32[] %c), dimensions={}
  %m = f32[8]{0} multiply(f32[8]{0} %p, %b)
  ROOT %ar = f32[8]{0} all-reduce(%m), channel_id=1, replica_groups=mesh['x'=2,'y'=2], device_ids=(0,2,1,3) {'y'}, use_global_device_ids=true, to_apply=%add
}
)";

TEST(HloParser, Module) {
  auto m = parse_hlo_module(kModule, "m.hlo");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->name, "jit_f");
  EXPECT_EQ(m->num_partitions, 4);
  EXPECT_TRUE(m->is_scheduled);
  ASSERT_EQ(m->computations.size(), 2u);
  EXPECT_EQ(m->computations[0].name, "add");
  EXPECT_EQ(m->computations[0].instructions[2].attr("backend_config"),
            R"({"k":"}{,\"]","n":[1,{"m":2}]})");
  const Computation& e = m->computations[m->entry];
  EXPECT_TRUE(e.is_entry);
  ASSERT_EQ(e.instructions.size(), 5u);
  EXPECT_EQ(e.root, 4);
  const Instruction& mul = e.instructions[3];
  EXPECT_EQ(mul.opcode, "multiply");
  EXPECT_EQ(mul.operands, (std::vector<int>{0, 2}));  // inline operand shapes tolerated
  const Instruction& ar = e.instructions[4];
  EXPECT_EQ(ar.attr("replica_groups"), "mesh['x'=2,'y'=2], device_ids=(0,2,1,3) {'y'}");
  EXPECT_EQ(ar.attr("use_global_device_ids"), "true");
  EXPECT_EQ(ar.called, (std::vector<int>{0}));
  EXPECT_EQ(ar.line, 27);
  EXPECT_EQ(e.instructions[0].attr("metadata"),
            R"({op_name="a{b" source_file="x.py" source_line=3})");
}

TEST(HloParser, ErrorsCarryLineAndColumn) {
  std::string text = kModule;
  text.replace(text.find("multiply("), 9, "multiply ");
  auto m = parse_hlo_module(text, "m.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().file, "m.hlo");
  EXPECT_EQ(m.error().line, 26);
  EXPECT_GT(m.error().column, 20);
  EXPECT_NE(m.error().message.find("expected '('"), std::string::npos) << m.error().message;

  // Names as XLA's lexer reads them; module attributes XLA knows (a misspelt num_partitions
  // would read as one partition).
  for (const char* t : {"HloModule te$st\nENTRY e {\n ROOT p = f32[8] parameter(0)\n}\n",
                        "HloModule m\nENTRY e {\n ROOT %%p = f32[8] parameter(0)\n}\n",
                        "HloModule m\nENTRY e {\n ROOT 1p = f32[8] parameter(0)\n}\n",
                        "HloModule m, num_partition=8\nENTRY e {\n ROOT p = f32[8] parameter(0)\n}\n",
                        "HloModule m, num_partitions=8, num_partitions=4\nENTRY e {\n"
                        " ROOT p = f32[8] parameter(0)\n}\n",
                        "HloModule m, is_scheduled=yes\nENTRY e {\n ROOT p = f32[8] parameter(0)\n}\n"})
    EXPECT_FALSE(parse_hlo_module(t).ok()) << t;
  EXPECT_TRUE(parse_hlo_module("HloModule m_1.b-c, is_scheduled=true, num_partitions=2\nENTRY "
                               "_e.1 {\n ROOT %p.2-x = f32[8] parameter(0)\n}\n")
                  .ok());
  auto unknown = parse_hlo_module("HloModule m\nENTRY e {\n  ROOT r = f32[] call(), to_apply=%nope\n}\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("nope"), std::string::npos);

  for (const char* bad : {"", "HloModule", "HloModule m\nENTRY e {\n", "HloModule m\ne {\n}\n",
                          "HloModule m\nENTRY e {\n r = f32[] add(\n}\n",
                          "HloModule m, a={\nENTRY e {\n ROOT r = f32[] constant(1)\n}\n",
                          "HloModule m\nENTRY e {\n ROOT r = f32[] constant(1), b=\"x\n}\n"}) {
    auto r = parse_hlo_module(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) EXPECT_GE(r.error().line, 1) << bad;
  }
}

}  // namespace
}  // namespace aoizora::hlo

namespace aoizora::hlo {
namespace {

const Computation& entry(const HloModule& m) { return m.computations[m.entry]; }

TEST(HloParser, NestedOperandsBecomeInstructionsBeforeTheirUser) {
  auto m = parse_hlo_module(
      "HloModule m\nENTRY e {\n"
      "  ROOT r = f16[10,10] convert(f32[10,10] reshape(f32[100] parameter(0)))\n}\n");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const Computation& e = entry(*m);
  ASSERT_EQ(e.instructions.size(), 3u);
  EXPECT_EQ(e.instructions[0].name, "parameter.anon");
  EXPECT_EQ(e.instructions[1].name, "reshape.anon");
  EXPECT_EQ(e.instructions[1].operands, (std::vector<int>{0}));
  EXPECT_EQ(e.instructions[2].operands, (std::vector<int>{1}));
  EXPECT_EQ(e.instructions[1].shape.dims, (std::vector<int64_t>{10, 10}));
  EXPECT_EQ(e.root, 2);

  auto reducer = parse_hlo_module(
      "HloModule m\nadd {\n  ROOT s = f32[] add(f32[] parameter(0), f32[] parameter(1))\n}\n"
      "ENTRY e {\n  i = s32[] parameter(0)\n  ROOT c = pred[] compare(i, s32[] constant(5)), "
      "direction=LT\n}\n");
  ASSERT_TRUE(reducer.ok()) << reducer.error().to_string();
  const Computation& add = reducer->computations[0];
  ASSERT_EQ(add.instructions.size(), 3u);
  EXPECT_EQ(add.instructions[1].name, "parameter.anon.1");  // names stay unique
  EXPECT_EQ(add.instructions[2].operands, (std::vector<int>{0, 1}));
  EXPECT_EQ(entry(*reducer).instructions[2].operands, (std::vector<int>{0, 1}));
  EXPECT_EQ(entry(*reducer).instructions[2].attr("direction"), "LT");
}

TEST(HloParser, UndefinedOperandIsAnErrorAtItsPosition) {
  auto m = parse_hlo_module("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n"
                            "  ROOT a = f32[4] add(p, typo)\n}\n", "t.hlo");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().line, 4);
  EXPECT_EQ(m.error().column, 26);
  EXPECT_NE(m.error().message.find("'typo'"), std::string::npos) << m.error().message;
  EXPECT_EQ(m.error().to_string().find('\n'), std::string::npos);
  // XLA needs operands defined before their use, too.
  EXPECT_FALSE(parse_hlo_module("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n"
                                "  ROOT a = f32[4] add(p, q)\n  q = f32[4] negate(p)\n}\n")
                   .ok());
}

// XLA resolves control-predecessors as it resolves operands: names defined before the
// instruction in its own computation (two texts of XLA's corpus are refused for it).
TEST(HloParser, UndefinedControlPredecessorIsAnErrorAtItsPosition) {
  const std::string text = R"(HloModule m
neg {
  x = f32[4] parameter(0)
  ROOT n = f32[4] negate(x)
}
ENTRY e {
  p = f32[4] parameter(0)
  a = f32[4] negate(p)
  ROOT b = f32[4] abs(p), control-predecessors={a, %PRED}
}
)";
  auto with = [&](const std::string& preds) {
    std::string t = text;
    t.replace(t.find("PRED"), 4, preds);
    return parse_hlo_module(t, "c.hlo");
  };
  auto m = with("typo");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().file, "c.hlo");
  EXPECT_EQ(m.error().line, 9);
  EXPECT_EQ(m.error().column, 52);
  EXPECT_NE(m.error().message.find("control predecessor 'typo'"), std::string::npos)
      << m.error().message;
  EXPECT_NE(m.error().message.find("computation 'e'"), std::string::npos) << m.error().message;
  EXPECT_EQ(m.error().to_string().find('\n'), std::string::npos);
  for (const char* bad : {"b",    // itself: not defined before it
                          "x"}) {  // another computation's
    auto r = with(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().line, 9) << bad;
    EXPECT_NE(r.error().message.find(std::string("'") + bad + "'"), std::string::npos)
        << r.error().message;
  }
  // Defined later in the computation: XLA refuses it as well.
  const std::string later = R"(HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  b = f32[4] abs(p), control-predecessors={a}
  ROOT a = f32[4] negate(p)
}
)";
  auto l = parse_hlo_module(later);
  ASSERT_FALSE(l.ok()) << later;
  EXPECT_NE(l.error().message.find("control predecessor 'a'"), std::string::npos)
      << l.error().message;
  // An empty list or a missing comma: XLA expects a name, then ',' or '}'.
  EXPECT_FALSE(parse_hlo_module(std::string(text).replace(text.find("{a, %PRED}"), 10, "{}")).ok());
  EXPECT_FALSE(parse_hlo_module(std::string(text).replace(text.find("{a, %PRED}"), 10, "{a p}")).ok());
  // Names defined before, with '%', over lines and comments, repeated: accepted.
  auto ok = with("p /* the parameter */,\n    a");
  EXPECT_TRUE(ok.ok()) << ok.error().to_string();
}

TEST(HloParser, DuplicateComputationOrInstructionNameIsAnError) {
  auto m = parse_hlo_module("HloModule m\nc {\n  ROOT x = f32[] parameter(0)\n}\n"
                            "c {\n  ROOT y = f32[] parameter(0)\n}\n"
                            "ENTRY e {\n  p = f32[] parameter(0)\n  ROOT r = f32[] call(p), "
                            "to_apply=c\n}\n");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().line, 5);
  EXPECT_NE(m.error().message.find("'c' is defined twice"), std::string::npos) << m.error().message;
  auto i = parse_hlo_module("HloModule m\nENTRY e {\n  p = f32[] parameter(0)\n"
                            "  p = f32[] negate(p)\n}\n");
  ASSERT_FALSE(i.ok());
  EXPECT_EQ(i.error().line, 4);
}

TEST(HloParser, CommentsAfterAValueAreNotPartOfIt) {
  auto m = parse_hlo_module(R"(HloModule m
cond {
  p = (s32[]) parameter(0)
  i = s32[] get-tuple-element(p), index=0  // the counter
  ROOT c = pred[] compare(i, s32[] constant(5)), direction=LT /* trailing */
}
while_body.2 {
  p = (s32[]) parameter(0)
  i = s32[] get-tuple-element(p), /* index */ index=0
  ROOT t = (s32[]) tuple(i)
}
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  z = s32[] constant(0)
  t = (s32[]) tuple(z)
  w = (s32[]) while(t), condition=cond, body=while_body.2  // 17
  a = f32[8] parameter(0)
  ROOT r = f32[8] all-reduce(a), channel_id=7  // sum
    , replica_groups={}, to_apply=add
}
)");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const Computation& e = entry(*m);
  EXPECT_EQ(e.instructions[2].callee("body"), 1);
  EXPECT_EQ(e.instructions[2].callee("condition"), 0);
  EXPECT_EQ(e.instructions[4].attr("channel_id"), "7");
  EXPECT_EQ(e.instructions[4].attr("replica_groups"), "{}");
  EXPECT_EQ(e.instructions[4].called, (std::vector<int>{2}));
  EXPECT_EQ(m->computations[0].instructions[1].attr("index"), "0");
  EXPECT_EQ(m->computations[0].instructions[3].attr("direction"), "LT");
  EXPECT_EQ(m->computations[1].instructions[1].attr("index"), "0");
}

}  // namespace
}  // namespace aoizora::hlo

namespace aoizora::hlo {
namespace {

// Each text is one dialect class that XLA's parser accepts and ours used to refuse.
TEST(HloParser, AcceptsWhatXlaAccepts) {
  const char* texts[] = {
      // an attribute list continued after ',' and on a line starting with ','
      "HloModule m\nadd {\n x = f32[] parameter(0)\n y = f32[] parameter(1)\n"
      " ROOT s = f32[] add(x, y)\n}\nENTRY e {\n p = f32[8] parameter(0)\n"
      " ROOT r = f32[8] all-reduce(p), channel_id=1,\n   replica_groups={{0,1}}\n"
      "   , to_apply=add\n}\n",
      // an attribute value on the next line
      "HloModule m\nENTRY e {\n p = f32[8] parameter(0)\n ROOT c = f32[8] custom-call(p), "
      "custom_call_target=\n   \"foo\"\n}\n",
      // }, execution_thread="..." after a body
      "HloModule m\nc {\n ROOT x = f32[] parameter(0)\n}, execution_thread=\"host\"\n"
      "ENTRY e {\n ROOT p = f32[] parameter(0)\n}\n",
      // buffer shapes
      "HloModule m\nENTRY e {\n ROOT p = b(f32[16]) parameter(0)\n}\n",
      // no HloModule line; HloModule name:
      "ENTRY e {\n ROOT p = f32[4] parameter(0)\n}\n",
      "e {\n ROOT p = f32[4] parameter(0)\n}\n",
      "HloModule m:\nENTRY e {\n ROOT p = f32[4] parameter(0)\n}\n",
      // inline computation bodies as attribute values
      "HloModule m\nENTRY e {\n p = f32[8] parameter(0)\n z = f32[] constant(0)\n"
      " ROOT r = f32[] reduce(p, z), dimensions={0}, to_apply={\n"
      "   x = f32[] parameter(0)\n   y = f32[] parameter(1)\n   ROOT s = f32[] add(x, y)\n }\n}\n",
      // spaced shapes and layouts; a type apart from its dims; a result shape glued to '{'
      "HloModule m\nENTRY e (p: f32[51, 16]) -> f32[51,16]{\n"
      " ROOT p = f32[51, 16] {0, 1} parameter(0)\n}\n",
      "HloModule m\nENTRY e {\n ROOT p = s32 [5,10] parameter(0)\n}\n",
  };
  for (const char* t : texts) {
    auto m = parse_hlo_module(t);
    EXPECT_TRUE(m.ok()) << t << "\n" << (m.ok() ? "" : m.error().to_string());
  }
  auto inline_body = parse_hlo_module(texts[7]);
  ASSERT_TRUE(inline_body.ok());
  ASSERT_EQ(inline_body->computations.size(), 2u);
  EXPECT_EQ(inline_body->computations[0].name, "_");
  EXPECT_EQ(entry(*inline_body).instructions[2].called, (std::vector<int>{0}));
  auto headerless = parse_hlo_module(texts[4]);
  ASSERT_TRUE(headerless.ok());
  EXPECT_EQ(headerless->name, "module_e");
  EXPECT_FALSE(headerless->header.has_header);
  auto layout = parse_hlo_module(texts[8]);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(entry(*layout).instructions[0].shape.layout_text, "0, 1");
}

// An attribute value is one token: what follows it on its line after a space is the next
// attribute or instruction (XLA needs no newline between instructions), not part of it.
TEST(HloParser, AValueEndsAtASpaceAndTheLineGoesOn) {
  auto m = parse_hlo_module(R"(HloModule m
Sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT add = f32[] add(x, y)
}
ENTRY e {
  p = f32[2,2,3]{2,1,0} parameter(0)
  i = f32[] constant(0)
  r = f32[2,3]{1,0} reduce(p, i), dimensions={1},
  to_apply=Sum t = f32[2,3]{1,0} transpose(r),
  dimensions={0,1} ROOT b = f32[2,3]{1,0} bitcast(t)
}
)");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const Computation& e = entry(*m);
  ASSERT_EQ(e.instructions.size(), 5u);
  EXPECT_EQ(e.instructions[3].attr("dimensions"), "{0,1}");
  EXPECT_EQ(e.instructions[4].opcode, "bitcast");
  EXPECT_EQ(e.root, 4);
  auto mesh = parse_hlo_module(
      "HloModule m, num_partitions=8\nadd {\n x = f32[] parameter(0)\n y = f32[] parameter(1)\n"
      " ROOT s = f32[] add(x, y)\n}\nENTRY e {\n p = f32[8] parameter(0)\n"
      " ROOT r = f32[8] all-reduce(p), channel_id=1, replica_groups=mesh['x'=2,'y'=4] {'y'}, "
      "use_global_device_ids=true, to_apply=add\n}\n");
  ASSERT_TRUE(mesh.ok()) << mesh.error().to_string();
  EXPECT_EQ(entry(*mesh).instructions[1].attr("replica_groups"), "mesh['x'=2,'y'=4] {'y'}");
}

// And what XLA's parser refuses, with the line of the fault.
TEST(HloParser, RefusesWhatXlaRefuses) {
  const std::pair<const char*, int> texts[] = {
      {"HloModule m\nENTRY e {\n ROOT r = f32[4] call(), to_apply=c\n}\nc {\n"
       " ROOT x = f32[4] parameter(0)\n}\n", 3},  // callee after its caller
      {"HloModule m\nENTRY e {\n ROOT p = f32[4] parameter(0), foo\n}\n", 3},  // bare word
      {"HloModule m\nENTRY e {\n ROOT p = f32[4] parameter(0)\n ROOT q = f32[4] parameter(1)\n}\n",
       4},
      {"HloModule m\nENTRY e {\n}\n", 3},
      {"HloModule m\nENTRY e {\n ROOT p = f32[4]{} parameter(0)\n}\n", 3},
      {"HloModule m\nENTRY e {\n ROOT p = f32[4]{1,0} parameter(0)\n}\n", 3},  // layout rank
      {"HloModule m, num_partitions=x\nENTRY e {\n ROOT p = f32[4] parameter(0)\n}\n", 1},
      {"HloModule m\nENTRY e {\n ROOT p = f32[4] parameter(0)\n}\n}\n", 5},
      {"HloModule m\nENTRY e {\n p = f32[4] parameter(0)\n ROOT r = reshape(p)\n}\n", 4},
      {"HloModule m\nENTRY e {\n ROOT p = f32[4] parameter(0)\n}\nENTRY f {\n"
       " ROOT p = f32[4] parameter(0)\n}\n", 5},
      {"e (p: f32[4]) -> f32[4] {\n ROOT p = f32[4] parameter(0)\n}\n", 1},
  };
  for (const auto& [t, line] : texts) {
    auto m = parse_hlo_module(t);
    ASSERT_FALSE(m.ok()) << t;
    EXPECT_EQ(m.error().line, line) << t << "\n" << m.error().to_string();
  }
}

// `X-start` for an X without async opcodes of its own is XLA's syntax for an async-start
// wrapping X: XLA's parser builds a computation of one parameter per operand and X, and
// reads `X-update`/`X-done` as async-update/-done. Ours builds the same module (as many
// computations, instructions and opcodes) and keeps X's attributes on the wrapped op.
TEST(HloParser, AsyncWrappedOpcodesBecomeAsyncStartAndAComputation) {
  auto m = parse_hlo_module(R"(HloModule m
c {
  a = f32[8] parameter(0)
  ROOT n = f32[8] negate(a)
}
ENTRY e {
  p = f32[8] parameter(0)
  s = ((f32[8]), f32[4], s32[]) slice-start(p), slice={[0:4]}
  u = ((f32[8]), f32[4], s32[]) slice-update(s)
  d = f32[4] slice-done(u)
  cs = ((f32[8], f32[8]), f32[8], s32[]) call-start(p, p), to_apply=c
  cd = f32[8] async-done(cs)
  as = ((f32[8]), f32[8], s32[]) async-start(p), calls=c
  ROOT ad = f32[8] async-done(as)
}
)");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  ASSERT_EQ(m->computations.size(), 4u);  // c, slice's, call's, e
  const Computation& e = entry(*m);
  std::vector<std::string_view> ops;
  for (const Instruction& i : e.instructions) ops.push_back(i.opcode);
  EXPECT_EQ(ops, (std::vector<std::string_view>{"parameter", "async-start", "async-update",
                                                 "async-done", "async-start", "async-done",
                                                 "async-start", "async-done"}));
  for (int i : {1, 2, 3}) EXPECT_EQ(e.instructions[i].async_wrapped, "slice");
  EXPECT_EQ(e.instructions[5].async_wrapped, "call");
  EXPECT_EQ(e.instructions[7].async_wrapped, "negate");
  const Computation& sliced = m->computations[e.instructions[1].called.at(0)];
  EXPECT_EQ(sliced.name, "async_wrapped");
  ASSERT_EQ(sliced.instructions.size(), 2u);
  EXPECT_EQ(sliced.instructions[0].opcode, "parameter");
  EXPECT_EQ(sliced.instructions[0].raw_operands, "0");
  const Instruction& slice = sliced.instructions[sliced.root];
  EXPECT_EQ(slice.opcode, "slice");
  EXPECT_EQ(slice.attr("slice"), "{[0:4]}");
  EXPECT_EQ(slice.shape.dims, (std::vector<int64_t>{4}));
  const Computation& called = m->computations[e.instructions[4].called.at(0)];
  ASSERT_EQ(called.instructions.size(), 3u);  // two parameters and the call
  EXPECT_EQ(called.instructions[2].callee("to_apply"), 0);

  // What XLA refuses of them, at the line of the op.
  const std::pair<const char*, int> bad[] = {
      {"  s = ((f32[8]), f32[8], s32[]) copy-update(p)\n", 4},   // copy has its own
      {"  s = ((f32[8]), f32[8], s32[]) send-start(p)\n", 4},
      {"  s = (f32[8], f32[4], s32[]) slice-start(p), slice={[0:4]}\n", 4},  // not async form
      {"  s = ((f32[8]), f32[4], s32[]) slice-start(p), slice={[0:4]}\n"
       "  g = f32[4] get-tuple-element(s), index=1\n  d = f32[4] slice-done(g)\n", 6},
      {"  s = ((f32[8]), f32[4], s32[]) slice-start(p), slice={[0:4]}\n"
       "  d = f32[4] negate-done(s)\n", 5},                      // another wrapped opcode
      {"  s = ((f32[8]), f32[4], s32[]) slice-start(p), slice={[0:4]}\n"
       "  u = ((f32[8]), f32[2], s32[]) slice-update(s)\n", 5},  // update's shape differs
      {"  s = ((f32[8]), f32[4], s32[]) slice-start(p), slice={[0:4]}, "
       "async_execution_thread=\"x\"\n  d = f32[4] slice-done(s), async_execution_thread=\"y\"\n",
       5},
      {"  s = ((f32[8]), f32[8], s32[]) async-start(p)\n", 4},  // calls= missing
      {"  s = ((f32[8]), f32[8], s32[]) async-start(p), calls=c\n"
       "  t = ((f32[8]), f32[8], s32[]) async-start(p), calls=c\n", 5},  // wrapped twice
      {"  s = ((f32[8]), f32[8], s32[]) negate-start(p)\n  d = f32[8] negate-done(s, s)\n", 5},
  };
  for (const auto& [body, line] : bad) {
    std::string t = std::string("HloModule m\nc {\n ROOT a = f32[8] parameter(0)\n}\n") +
                    "ENTRY e {\n  p = f32[8] parameter(0)\n" + body + "  ROOT r = f32[8] negate(p)\n}\n";
    auto r = parse_hlo_module(t);
    ASSERT_FALSE(r.ok()) << t;
    EXPECT_EQ(r.error().line, line + 3) << t << "\n" << r.error().to_string();
  }
}

// What XLA's parser checks of each instruction (opcode_table.h): a known opcode, its operand
// count, the attributes it allows (each once), the one it requires, and the form of the
// values the planner reads. Each text is refused at its line; the same texts with the fault
// mended are accepted.
TEST(HloParser, RefusesWhatXlaRefusesOfAnInstruction) {
  const std::pair<const char*, const char*> cases[] = {
      {"f32[8] negat(p)", "f32[8] negate(p)"},                              // unknown opcode
      {"f32[8] add(p)", "f32[8] add(p, p)"},                                // operand count
      {"(f32[8], f32[8]) tuple(p)", "(f32[8], f32[8]) tuple(p, p)"},
      {"f32[8] negate(p), dimensions={0}", "f32[8] negate(p), metadata={op_name=\"n\"}"},
      {"f32[8] all-reduce(p), to_apply=add, channel_id=1, channel_id=2",
       "f32[8] all-reduce(p), to_apply=add, channel_id=2"},                 // given twice
      {"f32[8] all-reduce(p), to_apply=add, channel_id=x",
       "f32[8] all-reduce(p), to_apply=add, channel_id=-1"},
      {"f32[8] all-reduce(p), to_apply=add, replica_groups={{0,1},{2,x}}",
       "f32[8] all-reduce(p), to_apply=add, replica_groups={{0,1}, {2,3}}"},
      {"f32[8] all-reduce(p), to_apply=add, replica_groups={0,1}",
       "f32[8] all-reduce(p), to_apply=add, replica_groups=[2,2]<=[2,2]T(1,0)"},
      {"f32[8] all-reduce(p), to_apply=add, channel_id=1, use_global_device_ids=1",
       "f32[8] all-reduce(p), to_apply=add, channel_id=1, use_global_device_ids=true"},
      {"f32[8] collective-permute(p), source_target_pairs={{0,1,2}}",
       "f32[8] collective-permute(p), source_target_pairs={{0,1},{1,0}}"},
      {"f32[8,2] broadcast(p), dimensions=0", "f32[8,2] broadcast(p), dimensions={ 0 }"},
      {"f32[8] get-tuple-element(t), index={1}", "f32[8] get-tuple-element(t), index=1"},
      {"f32[8] get-tuple-element(t)", "f32[8] get-tuple-element(t), index=0"},  // required
      {"pred[8] compare(p, p), direction=lt", "pred[8] compare(p, p), direction=LT"},
      {"f32[8] custom-call(p), custom_call_target=foo",
       "f32[8] custom-call(p), custom_call_target=\"foo\""},
      {"f32[8] fusion(p), kind=kBogus, calls=neg", "f32[8] fusion(p), kind=kLoop, calls=neg"},
      {"f32[8] add(p, f32[8] get-tuple-element(t))", "f32[8] add(p, f32[8] negate(p))"},
      {"f32[8] all-reduce(p), to_apply=add, use_global_device_ids=true, replica_groups={{0}}",
       "f32[8] all-reduce(p), to_apply=add, use_global_device_ids=false, replica_groups={{0}}"},
      {"f32[8] conditional(p, p, p), true_computation=neg, false_computation=neg",
       "f32[8] conditional(pred[] constant(true), p, p), true_computation=neg, "
       "false_computation=neg"},
      {"f32[8] conditional(pred[] constant(true), p), branch_computations={neg}",
       "f32[8] conditional(s32[] constant(0), p), branch_computations={neg}"},
      {"f32[8] negate(p, p)", "f32[8] negate(p)"},
      // literals: nesting and element counts as the shape says, integers in range
      {"f32[8] add(p, f32[8] constant({1, 2}))",
       "f32[8] add(p, f32[8] constant({1, 2 3, 4.5, -5e-3, inf, -nan, nan(0x1),}))"},
      {"f32[8] add(p, f32[8] constant({{1, 2, 3, 4, 5, 6, 7, 8}}))",
       "f32[8] add(p, f32[8] constant({...}))"},
      {"f32[8] broadcast(s32[] constant({{LOOP_BOUND}})), dimensions={}",
       "f32[8] broadcast(s32[] constant(-2147483648)), dimensions={}"},
      {"f32[8] broadcast(u8[] constant(256)), dimensions={}",
       "f32[8] broadcast(u8[] constant(255)), dimensions={}"},
      {"f32[8] broadcast(s32[] constant(5.0)), dimensions={}",
       "f32[8] broadcast(pred[] constant(true)), dimensions={}"},
      {"f32[8] get-tuple-element((f32[8], s32[]) constant(({...}, $0))), index=0",
       "f32[8] get-tuple-element((f32[8], c64[]) constant(({...}, (1, -2)))), index=0"},
  };
  for (const auto& [bad, good] : cases) {
    auto text = [](const char* root) {
      return std::string(
                 "HloModule m\nadd {\n x = f32[] parameter(0)\n y = f32[] parameter(1)\n"
                 " ROOT s = f32[] add(x, y)\n}\nneg {\n a = f32[8] parameter(0)\n"
                 " ROOT n = f32[8] negate(a)\n}\nENTRY e {\n p = f32[8] parameter(0)\n"
                 " t = (f32[8], f32[8]) parameter(1)\n ROOT r = ") +
             root + "\n}\n";
    };
    auto refused = parse_hlo_module(text(bad));
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.error().line, 14) << bad << "\n" << refused.error().to_string();
    auto accepted = parse_hlo_module(text(good));
    EXPECT_TRUE(accepted.ok()) << good << "\n"
                               << (accepted.ok() ? "" : accepted.error().to_string());
  }
  // Names as XLA's lexer reads them; module attributes XLA knows (a misspelt num_partitions
  // would read as one partition).
  for (const char* t : {"HloModule te$st\nENTRY e {\n ROOT p = f32[8] parameter(0)\n}\n",
                        "HloModule m\nENTRY e {\n ROOT %%p = f32[8] parameter(0)\n}\n",
                        "HloModule m\nENTRY e {\n ROOT 1p = f32[8] parameter(0)\n}\n",
                        "HloModule m, num_partition=8\nENTRY e {\n ROOT p = f32[8] parameter(0)\n}\n",
                        "HloModule m, num_partitions=8, num_partitions=4\nENTRY e {\n"
                        " ROOT p = f32[8] parameter(0)\n}\n",
                        "HloModule m, is_scheduled=yes\nENTRY e {\n ROOT p = f32[8] parameter(0)\n}\n"})
    EXPECT_FALSE(parse_hlo_module(t).ok()) << t;
  EXPECT_TRUE(parse_hlo_module("HloModule m_1.b-c, is_scheduled=true, num_partitions=2\nENTRY "
                               "_e.1 {\n ROOT %p.2-x = f32[8] parameter(0)\n}\n")
                  .ok());
  auto unknown = parse_hlo_module(
      "HloModule m\nENTRY e {\n p = f32[8] parameter(0)\n ROOT r = f32[8] negate(p), foo=1\n}\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unexpected attribute 'foo' for 'negate'"),
            std::string::npos)
      << unknown.error().message;
  EXPECT_NE(unknown.error().message.find("backend_config"), std::string::npos);
}

TEST(HloParser, InfersTheResultShapesXlaInfers) {
  auto m = parse_hlo_module(R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = add(x, y)
}
ENTRY e {
  a = f32[2,3] parameter(0)
  b = bf16[3,5] parameter(1)
  t = (f32[2,3], s32[]) parameter(2)
  sum = add(a, a)
  lt = compare(a, a), direction=LT
  sel = select(lt, a, sum)
  tup = tuple(a, lt)
  g = get-tuple-element(t), index=1
  d = dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  tr = transpose(a), dimensions={1,0}
  cat = concatenate(a, a), dimensions={0}
  z = f32[] constant(0)
  r = reduce(a, z), dimensions={1}, to_apply=add
  ROOT c = call(a, a), to_apply=add
}
)");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const Computation& e = entry(*m);
  auto shape = [&](int i) { return e.instructions[i].shape; };
  EXPECT_EQ(m->computations[0].instructions[2].shape.type, PrimitiveType::kF32);
  EXPECT_EQ(shape(3).dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(shape(4).type, PrimitiveType::kPred);
  EXPECT_EQ(shape(5).type, PrimitiveType::kF32);
  ASSERT_TRUE(shape(6).is_tuple());
  EXPECT_EQ(shape(6).tuple[1].type, PrimitiveType::kPred);
  EXPECT_EQ(shape(7).type, PrimitiveType::kS32);
  EXPECT_EQ(shape(8).dims, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(shape(9).dims, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(shape(10).dims, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(shape(12).dims, (std::vector<int64_t>{2}));
  EXPECT_EQ(shape(13).dims, (std::vector<int64_t>{}));

  for (const char* op : {"convert(a)", "all-reduce(a), to_apply=add", "reshape(a)"}) {
    std::string t = std::string("HloModule m\nadd {\n x = f32[] parameter(0)\n y = f32[] "
                                "parameter(1)\n ROOT s = f32[] add(x, y)\n}\nENTRY e {\n"
                                " a = f32[4] parameter(0)\n ROOT r = ") + op + "\n}\n";
    auto bad = parse_hlo_module(t);
    ASSERT_FALSE(bad.ok()) << op;
    EXPECT_NE(bad.error().message.find("cannot be inferred"), std::string::npos)
        << bad.error().message;
    EXPECT_EQ(bad.error().line, 9);
  }
}

}  // namespace
}  // namespace aoizora::hlo
