#include <gtest/gtest.h>

#include "aoizora/shlo/mlir_cursor.h"

namespace aoizora::shlo {
namespace {

TEST(ShloMlirCursor, ScannerSkipsBracketsInsideQuotedStrings) {
  std::string_view s = R"({a = "} ]) >", b = 1} tail)";
  EXPECT_EQ(group_at(s, 0), R"({a = "} ]) >", b = 1})");
}

TEST(ShloMlirCursor, CommaInsideAQuotedStringDoesNotSplit) {
  std::vector<std::string_view> items = split_top_level(R"("a, b", <c, d>, [e, f], g)");
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0], R"("a, b")");
  EXPECT_EQ(items[1], " <c, d>");
  EXPECT_EQ(items[3], " g");
}

TEST(ShloMlirCursor, ArrowIsNotAClosingBracket) {
  EXPECT_EQ(group_at("<(a) -> b> c", 0), "<(a) -> b>");
  std::vector<std::string_view> items = split_top_level("(a) -> b, c");
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0], "(a) -> b");
}

TEST(ShloMlirCursor, EscapedQuoteDoesNotEndAString) {
  std::string_view s = R"("a\"b" x)";
  Piece p = piece_at(s, 0);
  EXPECT_EQ(p.kind, PieceKind::kString);
  EXPECT_EQ(p.end, 6u);
  // An escaped backslash before the quote does end it.
  EXPECT_EQ(piece_at(R"("a\\" x)", 0).end, 5u);
  EXPECT_EQ(piece_at(R"("open)", 0).kind, PieceKind::kUnterminatedString);
}

TEST(ShloMlirCursor, RfindTopLevelSkipsNestedAndQuotedMatches) {
  std::string_view sig = R"(x : (y : z) "w : v" {u : t})";
  EXPECT_EQ(rfind_top_level(sig, " : "), 1u);
  // The last arrow outside brackets, not the one inside the result tuple.
  std::string_view fn = "(tensor<2xf32>) -> (tensor<f32>, (a) -> b)";
  EXPECT_EQ(rfind_top_level(fn, "->"), 16u);
  EXPECT_EQ(rfind_top_level("tensor<f32>", "->"), std::string_view::npos);
}

TEST(ShloMlirCursor, GroupCountsOnlyItsOwnBracketKind) {
  EXPECT_EQ(group_at("<a, [b> c", 0), "<a, [b>");
  EXPECT_EQ(group_at("{x = (1} y)", 0), "{x = (1}");
  EXPECT_EQ(group_at("x <a<b>> c", 2), "<a<b>>");
}

TEST(ShloMlirCursor, UnclosedGroupRunsToTheEnd) {
  EXPECT_EQ(group_at("<<a> b", 0), "<<a> b");
  EXPECT_EQ(group_at(R"({a = "}})", 0), R"({a = "}})");
}

TEST(ShloMlirCursor, EatWordNeedsAWordBoundary) {
  Cursor c("modules module");
  EXPECT_FALSE(c.eat_word("module"));
  c.set_pos(8);
  EXPECT_TRUE(c.eat_word("module"));
  EXPECT_TRUE(c.eof());
}

TEST(ShloMlirCursor, SkipItemStopsAtTheFirstNewlineOutsideBrackets) {
  Cursor c("x = {a,\n b} \"q\n\" y\nnext");
  c.skip_item();
  EXPECT_EQ(c.text().substr(c.pos()), "\nnext");
  Cursor mesh(", device_ids=[1, 0]> {a = {b}}\nnext");  // the tail of an sdy.mesh
  mesh.skip_item();
  EXPECT_EQ(mesh.text().substr(mesh.pos()), "\nnext");
}

TEST(ShloMlirCursor, ReadTypeTakesTheWholeAngleGroup) {
  Cursor c("tensor<4x!quant.uniform<i8:f32, 0.5>> rest");
  EXPECT_EQ(c.read_type(), "tensor<4x!quant.uniform<i8:f32, 0.5>>");
  EXPECT_EQ(c.peek(), ' ');
}

TEST(ShloMlirCursor, ErrorsCarryLineAndColumn) {
  Cursor c("ab\ncd\n\nef");
  Error e = c.error_at(4, "here");
  EXPECT_EQ(e.line, 2);
  EXPECT_EQ(e.column, 2);
  EXPECT_EQ(e.message, "here");
  EXPECT_EQ(c.line_col(7), (std::pair<int, int>{4, 1}));
  EXPECT_EQ(c.line_col(9), (std::pair<int, int>{4, 3}));  // the end of the text
}

TEST(ShloMlirCursor, BraceEndsLineOnlyBeforeANewline) {
  Cursor c("{ \t\n{a}\n{ \r\n");
  EXPECT_TRUE(c.brace_ends_line(0, " \t"));
  EXPECT_FALSE(c.brace_ends_line(4, " \t"));
  EXPECT_FALSE(c.brace_ends_line(8, " \t"));
  EXPECT_TRUE(c.brace_ends_line(8, " \t\r"));
}

}  // namespace
}  // namespace aoizora::shlo
