#include <gtest/gtest.h>

#include "aoizora/shlo/parser.h"
#include "aoizora/stage1/candidate_analysis.h"
#include "shlo_testdata.h"

namespace aoizora::shlo {
namespace {

const Op* find_op(const Block& b, std::string_view name) {
  for (const Op& op : b.ops) {
    if (op.name == name) return &op;
    for (const Block& r : op.regions)
      if (const Op* o = find_op(r, name)) return o;
  }
  return nullptr;
}

TEST(ShloParser, RealShardyMatmul) {
  Result<Module> m = parse_module(testdata::kMatmul);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->num_partitions, 8);
  EXPECT_TRUE(m->shardy);
  ASSERT_EQ(m->meshes.meshes.size(), 1u);
  const Mesh& mesh = m->meshes.meshes[0];
  EXPECT_EQ(mesh.name, "mesh");
  ASSERT_EQ(mesh.axes.size(), 2u);
  EXPECT_EQ(mesh.axes[0].name, "data");
  EXPECT_EQ(mesh.axes[1].size, 4);
  const Func* f = m->entry();
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->args.size(), 3u);
  const Value& a0 = m->values[f->args[0]];
  EXPECT_EQ(a0.type.shape, (std::vector<int64_t>{1024, 2048}));
  EXPECT_EQ(a0.type.dtype, "bf16");
  ASSERT_TRUE(a0.sharding.has_value());
  EXPECT_EQ(to_string(*a0.sharding), R"([{"data"}, {"model"}])");
  ASSERT_EQ(f->result_shardings.size(), 1u);
  EXPECT_EQ(to_string(*f->result_shardings[0]), R"([{"data"}, {}])");
  ASSERT_EQ(f->body.ops.size(), 4u);
  EXPECT_EQ(f->body.ops[0].name, "stablehlo.dot_general");
  EXPECT_EQ(f->body.ops[0].operands, (std::vector<int>{f->args[0], f->args[1]}));
  EXPECT_EQ(attr_int_list(f->body.ops[0].attrs, "contracting_dims", 0), (std::vector<int64_t>{1}));
  EXPECT_EQ(attr_int_list(f->body.ops[0].attrs, "contracting_dims", 1), (std::vector<int64_t>{0}));
  // The constraint's sharding lands on its result.
  const Op& c = f->body.ops[1];
  EXPECT_EQ(c.name, "sdy.sharding_constraint");
  EXPECT_EQ(to_string(*m->values[c.results[0]].sharding), R"([{"data"}, {"model"}])");
  EXPECT_EQ(f->body.ops[3].name, "func.return");
  EXPECT_EQ(f->body.ops[0].line, 4);
  EXPECT_EQ(f->body.ops[0].column, 5);
}

TEST(ShloParser, ManualComputationWithGenericCollectives) {
  Result<Module> m = parse_module(testdata::kRingAllToAll);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const Func* f = m->entry();
  const Op& mc = f->body.ops[0];
  ASSERT_EQ(mc.name, "sdy.manual_computation");
  ASSERT_EQ(mc.regions.size(), 1u);
  const Block& body = mc.regions[0];
  ASSERT_EQ(body.args.size(), 1u);
  EXPECT_EQ(m->values[body.args[0]].type.shape, (std::vector<int64_t>{128, 512}));
  ASSERT_EQ(body.ops.size(), 4u);
  EXPECT_EQ(body.ops[0].name, "stablehlo.collective_permute");
  auto pairs = attr_dense_2d(body.ops[0].attrs, "source_target_pairs");
  ASSERT_TRUE(pairs);
  ASSERT_EQ(pairs->size(), 8u);
  EXPECT_EQ((*pairs)[3], (std::vector<int64_t>{3, 0}));
  auto groups = attr_dense_2d(body.ops[2].attrs, "replica_groups");
  ASSERT_TRUE(groups);
  EXPECT_EQ(*groups, (std::vector<std::vector<int64_t>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(attr_int(body.ops[1].attrs, "split_count"), 4);
  // The all_reduce reducer region with its ^bb0 arguments.
  ASSERT_EQ(body.ops[2].regions.size(), 1u);
  EXPECT_EQ(body.ops[2].regions[0].args.size(), 2u);
  EXPECT_EQ(to_string(*m->values[mc.results[0]].sharding), R"([{}, {"model"}])");
}

// MLIR prints a large dense attribute in hex, each element's bytes little-endian (a ring over
// 256 devices: 512 pairs). The digits were read as decimal numbers, so a pod-scale ring's
// permutes had nonsense groups (and Stage 1 their axes wrong).
TEST(ShloParser, DenseAttributesInHex) {
  const std::string attrs =
      R"(source_target_pairs = dense<"0x0000000000000000080000000000000008000000000000001000000000000000"> : tensor<2x2xi64>)";
  auto pairs = attr_dense_2d(attrs, "source_target_pairs");
  ASSERT_TRUE(pairs);
  EXPECT_EQ(*pairs, (std::vector<std::vector<int64_t>>{{0, 8}, {8, 16}}));
  // Narrower elements, and digits that are not whole elements.
  auto narrow = attr_dense_2d(R"(replica_groups = dense<"0x0100020003000400"> : tensor<2x2xi16>)",
                              "replica_groups");
  ASSERT_TRUE(narrow);
  EXPECT_EQ(*narrow, (std::vector<std::vector<int64_t>>{{1, 2}, {3, 4}}));
  EXPECT_FALSE(attr_dense_2d(R"(replica_groups = dense<"0x01000200030004"> : tensor<2x2xi16>)",
                             "replica_groups"));
}

TEST(ShloParser, WhileWithMultiResultsAndPrivateCalls) {
  Result<Module> m = parse_module(testdata::kLayersScan);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_EQ(m->funcs.size(), 4u);
  const Func* f = m->entry();
  const Op* w = find_op(f->body, "stablehlo.while");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->results.size(), 4u);
  EXPECT_EQ(m->values[w->results[3]].name, "%0#3");
  ASSERT_EQ(w->regions.size(), 2u);
  EXPECT_EQ(w->regions[0].args.size(), 4u);   // cond
  EXPECT_EQ(w->regions[1].args.size(), 4u);   // do
  EXPECT_EQ(m->values[w->regions[1].args[2]].type.dtype, "i32");
  // return %0#3 refers to the fourth result.
  EXPECT_EQ(f->body.ops.back().operands, (std::vector<int>{w->results[3]}));
  const Op* call = find_op(w->regions[1], "func.call");
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->callee, "dynamic_index_in_dim");
  ASSERT_NE(m->find_func("closed_call"), nullptr);
  EXPECT_FALSE(m->find_func("closed_call")->is_public);
}

TEST(ShloParser, GspmdShardingsAndCustomCalls) {
  Result<Module> m = parse_module(testdata::kRingGspmd);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_FALSE(m->shardy);
  const Func* f = m->entry();
  EXPECT_EQ(f->body.ops[0].callee, "Sharding");
  EXPECT_EQ(f->body.ops[1].callee, "SPMDFullToShardShape");
  EXPECT_TRUE(m->values[f->body.ops[1].results[0]].sharding->manual);
  EXPECT_EQ(f->body.ops[2].name, "func.call");
  EXPECT_EQ(f->body.ops[2].callee, "shmap_body");
  // {devices=[2,4]<=[8]}: dim 0 steps device ids by 4 (size 2), dim 1 by 1 (size 4).
  EXPECT_EQ(to_string(*m->values[f->args[0]].sharding), R"([{"s4x2"}, {"s1x4"}])");
  // {devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}: dim 1 steps by 1 over 4 devices.
  EXPECT_EQ(to_string(*m->values[f->body.ops[4].results[0]].sharding), R"([{}, {"s1x4"}])");
}

TEST(ShloParser, GspmdTileAssignmentForms) {
  Mesh mesh;
  auto a = parse_gspmd_sharding("{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}", 8, &mesh);
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  EXPECT_EQ(to_string(*a), R"([{"s1x4"}, {}])");
  auto b = parse_gspmd_sharding("{devices=[2,2]0,2,1,3}", 4, &mesh);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(to_string(*b), R"([{"s1x2"}, {"s2x2"}])");
  EXPECT_TRUE(parse_gspmd_sharding("{replicated}", 8, &mesh)->dims.empty());
  EXPECT_TRUE(parse_gspmd_sharding("{maximal device=0}", 8, &mesh)->maximal);
  EXPECT_FALSE(parse_gspmd_sharding("{devices=[2,x]<=[8]}", 8, &mesh).ok());
}

TEST(ShloParser, SdyShardingForms) {
  auto s = parse_sdy_sharding(R"(#sdy.sharding<@mesh, [{"x":(1)2, "y"}, {?}, {"z", ?}p1], replicated={"w"}>)");
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  ASSERT_EQ(s->dims.size(), 3u);
  EXPECT_EQ(s->dims[0].axes[0].name, "x");
  EXPECT_EQ(s->dims[0].axes[0].pre, 1);
  EXPECT_EQ(s->dims[0].axes[0].size, 2);
  EXPECT_EQ(s->dims[0].axes[1].name, "y");
  EXPECT_TRUE(s->dims[1].open);
  EXPECT_TRUE(s->dims[1].axes.empty());
  EXPECT_TRUE(s->dims[2].open);
  ASSERT_EQ(s->replicated.size(), 1u);
  EXPECT_EQ(s->replicated[0].name, "w");
  MeshTable t{{Mesh{"mesh", {{"x", 4}, {"y", 2}, {"z", 2}, {"w", 1}}}}};
  EXPECT_EQ(shard_factor(t, *s, 0), 4);  // sub-axis x:(1)2 (2) times y (2)
  EXPECT_FALSE(parse_sdy_sharding(R"(<@mesh, [{x}]>)").ok());
  EXPECT_TRUE(parse_sdy_sharding(R"(<@empty_mesh, []>)").ok());
}

TEST(ShloParser, EveryElementType) {
  struct Case {
    const char* text;
    double bytes;
  };
  for (Case c : {Case{"tensor<4xf8E4M3FN>", 4}, Case{"tensor<4xf8E5M2>", 4}, Case{"tensor<4xi4>", 2},
                 Case{"tensor<4xi1>", 4}, Case{"tensor<4xui8>", 4}, Case{"tensor<4xbf16>", 8},
                 Case{"tensor<4xf16>", 8}, Case{"tensor<4xf32>", 16}, Case{"tensor<4xf64>", 32}, Case{"tensor<4xf6E2M3FN>", 3},
                 Case{"tensor<4xi64>", 32}, Case{"tensor<4xcomplex<f32>>", 32}, Case{"tensor<i32>", 4},
                 Case{"tensor<2x3xsi16>", 12}}) {
    auto t = parse_tensor_type(c.text);
    ASSERT_TRUE(t.ok()) << c.text << ": " << t.error().to_string();
    EXPECT_DOUBLE_EQ(t->bytes(), c.bytes) << c.text;
  }
  EXPECT_EQ(parse_tensor_type("!stablehlo.token")->dtype, "token");
  EXPECT_FALSE(parse_tensor_type("tensor<4xf33>").ok());
  EXPECT_FALSE(parse_tensor_type("memref<4xf32>").ok());
}

TEST(ShloParser, CaseRegionsPrettyReduceAndChloSignature) {
  const char* text = R"(module @m attributes {mhlo.num_partitions = 2 : i32} {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<8x4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<i32>) -> tensor<8xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = "stablehlo.case"(%arg1) ({
      %1 = stablehlo.multiply %arg0, %arg0 : tensor<8x4xf32>
      stablehlo.return %1 : tensor<8x4xf32>
    }, {
      %1 = chlo.square %arg0 : tensor<8x4xf32> -> tensor<8x4xf32>
      stablehlo.return %1 : tensor<8x4xf32>
    }) : (tensor<i32>) -> tensor<8x4xf32>
    %2 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<8x4xf32>, tensor<f32>) -> tensor<8xf32>
    %3 = stablehlo.compare  LT, %2, %2,  FLOAT : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xi1>
    %4 = stablehlo.select %3, %2, %2 : tensor<8xi1>, tensor<8xf32>
    return %4 : tensor<8xf32>
  }
})";
  Result<Module> m = parse_module(text);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const Func* f = m->entry();
  EXPECT_EQ(f->result_types.size(), 1u);
  const Op* cs = find_op(f->body, "stablehlo.case");
  ASSERT_NE(cs, nullptr);
  EXPECT_EQ(cs->regions.size(), 2u);
  EXPECT_EQ(cs->regions[1].ops[0].name, "chlo.square");
  const Op* red = find_op(f->body, "stablehlo.reduce");
  ASSERT_NE(red, nullptr);
  EXPECT_EQ(red->operands.size(), 2u);
  EXPECT_EQ(attr_int_list(red->attrs, "dimensions"), (std::vector<int64_t>{1}));
  const Op* sel = find_op(f->body, "stablehlo.select");
  EXPECT_EQ(m->values[sel->results[0]].type.dtype, "f32");
}

// The pretty form MLIR prints for a reduce whose body is more than one op: the signature
// first, then `reducer(...)` with the region's arguments on the next line.
constexpr const char* kReducerForm = R"(module {
  func.func @main(%arg0: tensor<8x4xf32>) -> tensor<8xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) across dimensions = [1] : (tensor<8x4xf32>, tensor<f32>) -> tensor<8xf32>
     reducer(%arg1: tensor<f32>, %arg2: tensor<f32>)  {
      %1 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %1 : tensor<f32>
    }
    return %0 : tensor<8xf32>
  }
})";

TEST(ShloParser, PrettyReduceWithReducerRegion) {
  Result<Module> m = parse_module(kReducerForm);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const Op* red = find_op(m->entry()->body, "stablehlo.reduce");
  ASSERT_NE(red, nullptr);
  EXPECT_EQ(red->operands.size(), 2u);
  ASSERT_EQ(red->results.size(), 1u);
  EXPECT_EQ(m->values[red->results[0]].type.shape, (std::vector<int64_t>{8}));
  EXPECT_EQ(attr_int_list(red->attrs, "dimensions"), (std::vector<int64_t>{1}));
  ASSERT_EQ(red->regions.size(), 1u);
  EXPECT_EQ(red->regions[0].args.size(), 2u);
  EXPECT_EQ(red->regions[0].ops[0].name, "stablehlo.add");
  EXPECT_EQ(m->entry()->body.ops.back().name, "func.return");
}

// Text saved on Windows: every line ends in "\r\n". It reads as the same module, regions
// (a while's cond and do, a reducer) included.
TEST(ShloParser, CrlfTextReadsAsItsLfText) {
  for (const std::string lf : {std::string(testdata::kLayersScan), std::string(kReducerForm)}) {
    std::string crlf;
    for (char c : lf) crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    Result<Module> a = parse_module(lf);
    Result<Module> b = parse_module(crlf);
    ASSERT_TRUE(a.ok()) << a.error().to_string();
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    ASSERT_EQ(a->values.size(), b->values.size());
    for (size_t i = 0; i < a->values.size(); ++i) {
      EXPECT_EQ(a->values[i].name, b->values[i].name);
      EXPECT_EQ(a->values[i].type.shape, b->values[i].type.shape);
    }
    EXPECT_EQ(a->entry()->body.ops.size(), b->entry()->body.ops.size());
  }
  // Errors keep their line and column.
  Result<Module> e = parse_module("module {\r\n  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\r\n"
                                  "    %0 = stablehlo.add %a, %b : tensor<2xf32>\r\n  }\r\n}\r\n");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().line, 3);
  EXPECT_EQ(e.error().column, 28);
}

TEST(ShloParser, OversizedCountsAreErrorsWithTheirPlace) {
  Result<Module> count = parse_module(
      "module {\n  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
      "    %0:99999999999999999999 = stablehlo.add %a, %a : tensor<2xf32>\n    return %a : tensor<2xf32>\n  }\n}\n");
  ASSERT_FALSE(count.ok());
  EXPECT_EQ(count.error().line, 3);
  EXPECT_NE(count.error().message.find("result count 99999999999999999999"), std::string::npos)
      << count.error().message;
  Result<Module> axis = parse_module(
      "module {\n  sdy.mesh @mesh = <[\"x\"=99999999999999999999]>\n"
      "  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n    return %a : tensor<2xf32>\n  }\n}\n");
  ASSERT_FALSE(axis.ok());
  EXPECT_EQ(axis.error().line, 2);
  EXPECT_NE(axis.error().message.find("mesh axis 'x'"), std::string::npos) << axis.error().message;
}

TEST(ShloParser, QuotedAttributeWithColonArrowAndCommaKeepsTheSignature) {
  // The string holds " : ", "->", ',' and unbalanced brackets; none of them may be read as
  // the signature, an operand list or the end of the op.
  const char* text = R"(module {
  func.func @main(%a: tensor<2xf32>) -> tensor<4xf32> {
    %0 = stablehlo.custom_call @foo(%a) {backend_config = "x : (y -> [z, \"w\" : tensor<9xf32>"} : (tensor<2xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
})";
  Result<Module> m = parse_module(text);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  const Op& call = m->entry()->body.ops[0];
  EXPECT_EQ(call.callee, "foo");
  EXPECT_EQ(call.operands.size(), 1u);
  ASSERT_EQ(call.results.size(), 1u);
  EXPECT_EQ(m->values[call.results[0]].type.shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(m->entry()->body.ops[1].name, "func.return");
}

TEST(ShloParser, ErrorsCarryLineAndColumn) {
  // Use of an undefined value on line 3, column 28.
  const char* undefined = "module {\n  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n    %0 = stablehlo.add %a, %b : tensor<2xf32>\n    return %0 : tensor<2xf32>\n  }\n}\n";
  Result<Module> m = parse_module(undefined);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().line, 3);
  EXPECT_EQ(m.error().column, 28);
  EXPECT_NE(m.error().message.find("%b"), std::string::npos);

  Result<Module> bad_type = parse_module("module {\n  func.func @main(%a: tensor<2xq7>) {\n  }\n}\n");
  ASSERT_FALSE(bad_type.ok());
  EXPECT_EQ(bad_type.error().line, 2);
  EXPECT_EQ(bad_type.error().column, 23);

  Result<Module> unclosed = parse_module("module {\n  func.func @main() {\n");
  ASSERT_FALSE(unclosed.ok());
  EXPECT_EQ(unclosed.error().line, 3);

  Result<Module> bad_sharding = parse_module(
      "module {\n  func.func @main(%a: tensor<2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{x}]>}) {\n  }\n}\n");
  ASSERT_FALSE(bad_sharding.ok());
  EXPECT_EQ(bad_sharding.error().line, 2);
  EXPECT_FALSE(parse_module("").ok());
  EXPECT_FALSE(parse_module("module {\n}\n").ok());  // no function
}

}  // namespace
}  // namespace aoizora::shlo

namespace aoizora::shlo {
namespace {

// Every prefix of real text (and a few corruptions) gives a module or an Error, never an
// exception or a crash: the core never throws across its API.
TEST(ShloParser, TruncatedAndCorruptedTextNeverThrows) {
  std::string full = testdata::kLayersScan;
  int errors = 0;
  for (size_t n = 0; n < full.size(); n += 7) {
    std::string cut = full.substr(0, n);
    Result<Module> m = Error{};
    EXPECT_NO_THROW(m = parse_module(cut)) << n;
    if (!m.ok()) {
      ++errors;
      EXPECT_GE(m.error().line, 1) << n;
    }
  }
  EXPECT_GT(errors, 0);
  for (const char* bad : {"%", "<", "\"", "{", ")", "99999999999999999999", "#sdy.sharding<"}) {
    for (size_t at : {size_t{200}, size_t{900}, size_t{2000}}) {
      std::string s = full;
      s.insert(std::min(at, s.size()), bad);
      Result<Module> m = Error{};
      EXPECT_NO_THROW(m = parse_module(s)) << bad << " at " << at;
      stage1::Stage1Options o;
      if (m.ok()) EXPECT_NO_THROW((void)stage1::analyze_stablehlo(s, o)) << bad << " at " << at;
    }
  }
}

}  // namespace
}  // namespace aoizora::shlo
