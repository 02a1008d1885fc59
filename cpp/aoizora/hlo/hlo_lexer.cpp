#include "aoizora/hlo/hlo_lexer.h"

#include <cstring>

namespace aoizora::hlo {

Status Lexer::skip_balanced() {
  const size_t start = p_;
  int depth = 0;
  while (p_ < s_.size()) {
    const char c = s_[p_];
    if (c == '"') {
      if (!skip_string()) return expected("a closing '\"'", start);
      continue;
    }
    if (c == '(' || c == '{' || c == '[') {
      ++depth;
    } else if (c == ')' || c == '}' || c == ']') {
      if (--depth == 0) {
        ++p_;
        return Status::success();
      }
    }
    ++p_;
  }
  return expected("a closing bracket for the group opened here", start);
}

int Lexer::line_of(size_t pos) {
  pos = std::min(pos, s_.size());
  if (pos < line_pos_) {
    line_pos_ = 0;
    line_ = 1;
  }
  // memchr skips from newline to newline (a byte-wise count cost a sixth of the parse).
  const char* p = s_.data() + line_pos_;
  const char* const end = s_.data() + pos;
  while (p < end) {
    p = static_cast<const char*>(memchr(p, '\n', static_cast<size_t>(end - p)));
    if (p == nullptr) break;
    ++line_;
    ++p;
  }
  line_pos_ = pos;
  return line_;
}

Error Lexer::error_at(std::string message, size_t pos) {
  pos = std::min(pos, s_.size());
  const int line = line_of(pos);
  size_t bol = pos == 0 ? std::string_view::npos : s_.rfind('\n', pos - 1);
  bol = bol == std::string_view::npos ? 0 : bol + 1;
  return Error::parse(std::move(message), filename_, line, static_cast<int>(pos - bol) + 1);
}

Error Lexer::expected(const std::string& what, size_t pos) {
  pos = std::min(pos, s_.size());
  std::string found;
  if (pos >= s_.size()) {
    found = "end of input";
  } else {
    size_t end = pos;
    while (end < s_.size() && end - pos < 20 && s_[end] != '\n') ++end;
    found = "'" + std::string(s_.substr(pos, end - pos)) + "'";
  }
  return error_at("expected " + what + ", found " + found, pos);
}

}  // namespace aoizora::hlo
