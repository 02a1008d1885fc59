// The cursor the StableHLO parser (parser.cpp) reads MLIR text with: a position in the text,
// the lexical pieces (names, `%` references, types, digits, `//` comments) and errors with
// 1-based line and column. Every bracket search in shlo/ goes through one scanner,
// `piece_at`: a quoted string (with `\` escapes) is one piece and `->` is no bracket, so a
// comma, bracket or arrow inside a string, or the `>` of an arrow, never changes the depth.
// `<([{` open and `>)]}` close. Internal to shlo/; never reads out of bounds.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aoizora/base/status.h"

namespace aoizora::shlo {

// Letters, digits, `_ . $ -`: the characters of an MLIR name after its sigil.
bool is_mlir_name_char(char c);
// `s` without leading and trailing whitespace.
std::string_view trim(std::string_view s);

// What a bracket-depth scan sees at one position.
enum class PieceKind { kOther, kString, kUnterminatedString, kArrow, kOpen, kClose };
struct Piece {
  PieceKind kind;
  size_t end;  // one past the piece: after the closing quote, the `->`, or the character
};
// The piece starting at s[p] (p < s.size()). An unterminated string runs to the end of s.
Piece piece_at(std::string_view s, size_t p);

// The bracket group opened at s[pos] (`<([{`), through the bracket of its own kind that closes
// it, counting only that kind; the rest of s when it never closes.
std::string_view group_at(std::string_view s, size_t pos);
// `s` split at its commas outside brackets and strings; no item after a trailing comma.
std::vector<std::string_view> split_top_level(std::string_view s);
// Position of the last `needle` that starts outside brackets and strings; npos when none.
size_t rfind_top_level(std::string_view s, std::string_view needle);

class Cursor {
 public:
  explicit Cursor(std::string_view text);

  std::string_view text() const { return s_; }
  size_t pos() const { return p_; }
  void set_pos(size_t p) { p_ = p; }
  bool eof() const { return p_ >= s_.size(); }
  char peek() const { return p_ < s_.size() ? s_[p_] : '\0'; }
  void advance(size_t n = 1) { p_ = std::min(p_ + n, s_.size()); }
  bool starts_with(std::string_view w) const { return s_.substr(std::min(p_, s_.size())).starts_with(w); }

  bool eat(char c);
  // The word `w` at the cursor, not followed by a name character.
  bool eat_word(std::string_view w);
  // Whitespace and `//` comments.
  void skip_ws();
  // Spaces and tabs only (stays on the line).
  void skip_blanks();
  void skip_line();
  // One unknown top-level item: up to a newline outside `{([` (strings skipped whole). Angle
  // brackets do not count: the rest of an `sdy.mesh` starts inside its `<`.
  void skip_item();

  // A name after its sigil (`main`, `0`, `iterArg_3`), or a quoted one without its quotes.
  std::string read_name();
  // A value reference after its `%`: name characters and `#` (`0#1`).
  std::string_view read_ref();
  // A type token: `tensor<...>`, `!stablehlo.token`, `tuple<...>`.
  std::string_view read_type();
  // A run of decimal digits (empty when none).
  std::string_view read_digits();
  // The bracket group at the cursor (group_at), the cursor moved past it.
  std::string_view read_group();

  // True when the '{' at `pos` is followed only by characters of `blanks` up to a newline or
  // the end of the text: the brace opens a region or body, not an attribute dictionary.
  bool brace_ends_line(size_t pos, std::string_view blanks) const;

  // `message` at `pos`, with its line and column.
  Error error_at(size_t pos, std::string message) const;
  std::pair<int, int> line_col(size_t pos) const;

 private:
  std::string_view s_;
  size_t p_ = 0;
  std::vector<size_t> line_starts_;
};

}  // namespace aoizora::shlo
