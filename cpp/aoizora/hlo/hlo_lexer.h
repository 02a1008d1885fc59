// The cursor the HLO text parsers share (hlo_parser.cpp, shape_parser.cpp): a position in
// the text, XLA's lexical rules (spaces, newlines, `//` and `/* */` comments are all
// whitespace between tokens), names, integers, strings, balanced groups, and errors that
// carry file, 1-based line and column. Internal to hlo/; never reads out of bounds.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "aoizora/base/status.h"

namespace aoizora::hlo {

inline bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-' || c == '$' || c == '%';
}
inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

inline std::string_view strip_percent(std::string_view s) {
  if (!s.empty() && s.front() == '%') s.remove_prefix(1);
  return s;
}

// Position of the first character at or after `p` that is not a space, a newline or inside a
// comment. An unterminated `/*` runs to the end of the text.
inline size_t skip_space_and_comments(std::string_view s, size_t p) {
  while (p < s.size()) {
    char c = s[p];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++p;
    } else if (c == '/' && p + 1 < s.size() && s[p + 1] == '*') {
      size_t end = s.find("*/", p + 2);
      p = end == std::string_view::npos ? s.size() : end + 2;
    } else if (c == '/' && p + 1 < s.size() && s[p + 1] == '/') {
      size_t end = s.find('\n', p);
      p = end == std::string_view::npos ? s.size() : end;
    } else {
      break;
    }
  }
  return p;
}

class Lexer {
 public:
  Lexer(std::string_view text, std::string filename) : s_(text), filename_(std::move(filename)) {}

  std::string_view text() const { return s_; }
  const std::string& filename() const { return filename_; }
  size_t pos() const { return p_; }
  void set_pos(size_t p) { p_ = p; }

  bool eof() const { return p_ >= s_.size(); }
  char peek() const { return p_ < s_.size() ? s_[p_] : '\0'; }
  char peek_at(size_t k) const { return p_ + k < s_.size() ? s_[p_ + k] : '\0'; }
  void advance(size_t n = 1) { p_ = std::min(p_ + n, s_.size()); }

  void skip_ws() { p_ = skip_space_and_comments(s_, p_); }
  bool consume(char c) {
    skip_ws();
    if (peek() != c) return false;
    ++p_;
    return true;
  }
  // The word `w` at the cursor, not followed by a name character.
  bool consume_word(std::string_view w) {
    if (s_.compare(p_, w.size(), w) != 0) return false;
    size_t after = p_ + w.size();
    if (after < s_.size() && is_name_char(s_[after])) return false;
    p_ = after;
    return true;
  }
  std::string_view name() {
    size_t b = p_;
    while (p_ < s_.size() && is_name_char(s_[p_])) ++p_;
    return s_.substr(b, p_ - b);
  }
  bool integer(int64_t* out) {
    skip_ws();
    size_t b = p_;
    if (peek() == '-') ++p_;
    while (p_ < s_.size() && is_digit(s_[p_])) ++p_;
    auto [ptr, ec] = std::from_chars(s_.data() + b, s_.data() + p_, *out);
    if (ec != std::errc() || ptr != s_.data() + p_) {
      p_ = b;
      return false;
    }
    return true;
  }
  // Skips a string starting at the cursor (which holds the quote); false when unterminated.
  bool skip_string() {
    char q = s_[p_++];
    while (p_ < s_.size()) {
      const void* hit = memchr(s_.data() + p_, q, s_.size() - p_);
      if (hit == nullptr) break;
      size_t at = static_cast<size_t>(static_cast<const char*>(hit) - s_.data());
      size_t bs = 0;  // backslashes right before the quote
      while (at - bs > p_ && s_[at - bs - 1] == '\\') ++bs;
      p_ = at + 1;
      if (bs % 2 == 0) return true;
    }
    p_ = s_.size();
    return false;
  }
  // Skips a balanced group starting at the cursor ('(', '{' or '['), strings included.
  Status skip_balanced();

  // "expected <what>, found '<text>'" at `pos`.
  Error expected(const std::string& what, size_t pos);
  // `message` as is, at `pos`.
  Error error_at(std::string message, size_t pos);
  int line_of(size_t pos);

 private:
  std::string_view s_;
  std::string filename_;
  size_t p_ = 0;
  size_t line_pos_ = 0;  // line_of's memo: line_ is the line of line_pos_
  int line_ = 1;
};

}  // namespace aoizora::hlo
