#include "aoizora/shlo/mlir_cursor.h"

#include <algorithm>
#include <cctype>

namespace aoizora::shlo {

bool is_mlir_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$' || c == '-';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

Piece piece_at(std::string_view s, size_t p) {
  const char c = s[p];
  if (c == '"') {
    size_t k = p + 1;
    while (k < s.size() && s[k] != '"') k += s[k] == '\\' ? 2 : 1;
    if (k >= s.size()) return {PieceKind::kUnterminatedString, s.size()};
    return {PieceKind::kString, k + 1};
  }
  if (c == '-' && p + 1 < s.size() && s[p + 1] == '>') return {PieceKind::kArrow, p + 2};
  if (c == '<' || c == '(' || c == '[' || c == '{') return {PieceKind::kOpen, p + 1};
  if (c == '>' || c == ')' || c == ']' || c == '}') return {PieceKind::kClose, p + 1};
  return {PieceKind::kOther, p + 1};
}

std::string_view group_at(std::string_view s, size_t pos) {
  if (pos >= s.size()) return {};
  const char open = s[pos];
  const char close = open == '<' ? '>' : open == '(' ? ')' : open == '[' ? ']' : '}';
  int depth = 0;
  for (size_t p = pos; p < s.size();) {
    const Piece piece = piece_at(s, p);
    if (piece.kind == PieceKind::kOpen && s[p] == open) ++depth;
    if (piece.kind == PieceKind::kClose && s[p] == close && --depth == 0) return s.substr(pos, piece.end - pos);
    p = piece.end;
  }
  return s.substr(pos);
}

std::vector<std::string_view> split_top_level(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t p = 0; p < s.size();) {
    const Piece piece = piece_at(s, p);
    if (piece.kind == PieceKind::kOpen) ++depth;
    if (piece.kind == PieceKind::kClose) --depth;
    if (piece.kind == PieceKind::kOther && s[p] == ',' && depth == 0) {
      out.push_back(s.substr(start, p - start));
      start = p + 1;
    }
    p = piece.end;
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

size_t rfind_top_level(std::string_view s, std::string_view needle) {
  size_t found = std::string_view::npos;
  int depth = 0;
  for (size_t p = 0; p < s.size();) {
    const Piece piece = piece_at(s, p);
    if (piece.kind == PieceKind::kOpen) ++depth;
    if (piece.kind == PieceKind::kClose) --depth;
    const bool outside = piece.kind == PieceKind::kOther || piece.kind == PieceKind::kArrow;
    if (outside && depth == 0 && s.substr(p).starts_with(needle)) found = p;
    p = piece.end;
  }
  return found;
}

Cursor::Cursor(std::string_view text) : s_(text) {
  line_starts_.push_back(0);
  for (size_t j = 0; j < s_.size(); ++j)
    if (s_[j] == '\n') line_starts_.push_back(j + 1);
}

bool Cursor::eat(char c) {
  if (peek() != c) return false;
  ++p_;
  return true;
}

bool Cursor::eat_word(std::string_view w) {
  if (!starts_with(w)) return false;
  const size_t after = p_ + w.size();
  if (after < s_.size() && is_mlir_name_char(s_[after])) return false;
  p_ = after;
  return true;
}

void Cursor::skip_ws() {
  while (p_ < s_.size()) {
    if (std::isspace(static_cast<unsigned char>(s_[p_]))) {
      ++p_;
    } else if (starts_with("//")) {
      skip_line();
    } else {
      break;
    }
  }
}

void Cursor::skip_blanks() {
  while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\t')) ++p_;
}

void Cursor::skip_line() {
  while (p_ < s_.size() && s_[p_] != '\n') ++p_;
}

void Cursor::skip_item() {
  int depth = 0;
  while (p_ < s_.size()) {
    const Piece piece = piece_at(s_, p_);
    const char c = s_[p_];
    if (piece.kind == PieceKind::kOpen && c != '<') ++depth;
    if (piece.kind == PieceKind::kClose && c != '>') --depth;
    if (c == '\n' && depth <= 0) break;
    p_ = piece.end;
  }
}

std::string Cursor::read_name() {
  if (peek() == '"') {
    size_t k = s_.find('"', p_ + 1);
    if (k == std::string_view::npos) k = s_.size() - 1;
    std::string out(s_.substr(p_ + 1, k - p_ - 1));
    p_ = k + 1;
    return out;
  }
  const size_t b = p_;
  while (p_ < s_.size() && is_mlir_name_char(s_[p_])) ++p_;
  return std::string(s_.substr(b, p_ - b));
}

std::string_view Cursor::read_ref() {
  const size_t b = p_;
  while (p_ < s_.size() && (is_mlir_name_char(s_[p_]) || s_[p_] == '#')) ++p_;
  return s_.substr(b, p_ - b);
}

std::string_view Cursor::read_type() {
  const size_t b = p_;
  while (p_ < s_.size() && (is_mlir_name_char(s_[p_]) || s_[p_] == '!')) ++p_;
  if (peek() == '<') p_ += group_at(s_, p_).size();
  return s_.substr(b, p_ - b);
}

std::string_view Cursor::read_digits() {
  const size_t b = p_;
  while (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) ++p_;
  return s_.substr(b, p_ - b);
}

std::string_view Cursor::read_group() {
  std::string_view g = group_at(s_, p_);
  p_ += g.size();
  return g;
}

bool Cursor::brace_ends_line(size_t pos, std::string_view blanks) const {
  size_t k = pos + 1;
  while (k < s_.size() && blanks.find(s_[k]) != std::string_view::npos) ++k;
  return k >= s_.size() || s_[k] == '\n';
}

Error Cursor::error_at(size_t pos, std::string message) const {
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
  const size_t line = static_cast<size_t>(it - line_starts_.begin());
  const size_t column = pos - line_starts_[line - 1] + 1;
  return Error::parse(std::move(message), "", static_cast<int>(line), static_cast<int>(column));
}

std::pair<int, int> Cursor::line_col(size_t pos) const {
  const Error e = error_at(pos, "");
  return {e.line, e.column};
}

}  // namespace aoizora::shlo
