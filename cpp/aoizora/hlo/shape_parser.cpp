#include "aoizora/hlo/shape_parser.h"

#include <utility>

namespace aoizora::hlo {
namespace {

std::string_view type_word(const Lexer& lx, size_t* end) {
  const std::string_view s = lx.text();
  size_t p = lx.pos();
  while (p < s.size() && (is_alpha(s[p]) || is_digit(s[p]))) ++p;
  *end = p;
  return s.substr(lx.pos(), p - lx.pos());
}

bool next_is(const Lexer& lx, size_t from, char c) {
  const size_t p = skip_space_and_comments(lx.text(), from);
  return p < lx.text().size() && lx.text()[p] == c;
}

// Tiles `T(8,128)(2,1)`, with the cursor at the first '('. A tile dim may be '*' (-1).
Status read_tiles(Lexer& lx, Layout* out) {
  while (lx.peek() == '(') {
    lx.advance();
    std::vector<int64_t> tile;
    lx.skip_ws();
    while (lx.peek() != ')') {
      int64_t v = -1;
      if (lx.peek() == '*') lx.advance();
      else if (!lx.integer(&v)) return lx.expected("a tile dimension", lx.pos());
      tile.push_back(v);
      lx.skip_ws();
      if (lx.peek() == ',') lx.advance();
      else if (lx.peek() != ')') return lx.expected("',' or ')' in a tile", lx.pos());
      lx.skip_ws();
    }
    lx.advance();
    if (out != nullptr) out->tiles.push_back(std::move(tile));
  }
  return Status::success();
}

// The part of a layout after ':' (tiles, memory space, other attributes), through the '}'.
Status read_layout_attributes(Lexer& lx, Layout* out) {
  for (;;) {
    lx.skip_ws();
    const char c = lx.peek();
    if (c == '}') return Status::success();
    if (c == 'T' && lx.peek_at(1) == '(') {
      lx.advance();
      RETURN_IF_ERROR(read_tiles(lx, out));
      continue;
    }
    if (c == 'S' && lx.peek_at(1) == '(') {
      lx.advance(2);
      int64_t v;
      if (!lx.integer(&v)) return lx.expected("a memory space", lx.pos());
      if (out != nullptr) out->memory_space = v;
      if (!lx.consume(')')) return lx.expected("')'", lx.pos());
      continue;
    }
    // Other layout attributes (E(..), D(..), L(..), #(..), *(..), P(..), SC(..), M(..)): a
    // word or a symbol followed by parenthesised groups.
    const size_t b = lx.pos();
    while (is_alpha(lx.peek()) || lx.peek() == '#' || lx.peek() == '*') lx.advance();
    if (lx.pos() == b) return lx.expected("a layout attribute or '}'", b);
    while (lx.peek() == '(') {
      RETURN_IF_ERROR(lx.skip_balanced());
    }
  }
}

Status read_dims(Lexer& lx, Shape* out, int* rank) {
  lx.advance();  // '['
  lx.skip_ws();
  *rank = 0;
  while (lx.peek() != ']') {
    int64_t v = 0;
    if (lx.peek() == '?') {
      lx.advance();
    } else {
      if (lx.peek() == '<' && lx.peek_at(1) == '=') lx.advance(2);
      if (!lx.integer(&v) || v < 0) return lx.expected("a dimension size", lx.pos());
    }
    if (out != nullptr) out->dims.push_back(v);
    ++*rank;
    lx.skip_ws();
    if (lx.peek() == ',') {
      lx.advance();
      lx.skip_ws();
    } else if (lx.peek() != ']') {
      return lx.expected("',' or ']' in the dimensions", lx.pos());
    }
  }
  lx.advance();
  return Status::success();
}

Status read_tuple(Lexer& lx, Shape* out, int depth) {
  lx.advance();  // '('
  if (out != nullptr) out->type = PrimitiveType::kTuple;
  if (lx.consume(')')) return Status::success();
  for (;;) {
    Shape* element = nullptr;
    if (out != nullptr) element = &out->tuple.emplace_back();
    RETURN_IF_ERROR(read_shape(lx, element, depth + 1));
    if (lx.consume(',')) continue;
    if (lx.consume(')')) return Status::success();
    return lx.expected("',' or ')' in a tuple shape", lx.pos());
  }
}

}  // namespace

bool can_be_shape(const Lexer& lx) {
  const char c = lx.peek();
  if (c == '(') return true;
  if (c == 'b' && !is_name_char(lx.peek_at(1)) && next_is(lx, lx.pos() + 1, '(')) return true;
  if (!is_alpha(c)) return false;
  // An element type is followed by its dimensions; only token and opaque may stand alone.
  // (Checking the '[' first keeps the type-name lookup off the path of every opcode.)
  size_t end;
  const std::string_view word = type_word(lx, &end);
  if (end < lx.text().size() && is_name_char(lx.text()[end])) return false;
  if (next_is(lx, end, '[')) {
    const PrimitiveType t = primitive_type_from_name(word);
    return t != PrimitiveType::kInvalid && t != PrimitiveType::kTuple;
  }
  return word == "token" || word == "opaque";
}

Status read_shape(Lexer& lx, Shape* out, int depth) {
  if (depth > kMaxNesting) return lx.expected("a shape nested less deeply", lx.pos());
  lx.skip_ws();
  if (lx.peek() == '(') return read_tuple(lx, out, depth);
  if (lx.peek() == 'b' && !is_name_char(lx.peek_at(1)) && next_is(lx, lx.pos() + 1, '(')) {
    lx.advance();  // a buffer shape `b(...)`: the shape it holds
    lx.consume('(');
    RETURN_IF_ERROR(read_shape(lx, out, depth + 1));
    if (!lx.consume(')')) return lx.expected("')' closing the buffer shape", lx.pos());
    return Status::success();
  }
  const size_t b = lx.pos();
  size_t end;
  const PrimitiveType type = primitive_type_from_name(type_word(lx, &end));
  if (type == PrimitiveType::kInvalid || type == PrimitiveType::kTuple)
    return lx.expected("an element type such as f32 or bf16", b);
  lx.set_pos(end);
  if (out != nullptr) out->type = type;
  if (!next_is(lx, end, '[')) {
    if (type == PrimitiveType::kToken || type == PrimitiveType::kOpaque) return Status::success();
    return lx.expected("'[' after the element type", lx.pos());
  }
  lx.skip_ws();
  int rank = 0;
  RETURN_IF_ERROR(read_dims(lx, out, &rank));
  // A '{' opens a layout only when an integer or ':' follows (else it opens a body).
  const size_t after = lx.pos();
  const size_t brace = skip_space_and_comments(lx.text(), after);
  if (brace >= lx.text().size() || lx.text()[brace] != '{') return Status::success();
  const size_t inner = skip_space_and_comments(lx.text(), brace + 1);
  const char f = inner < lx.text().size() ? lx.text()[inner] : '\0';
  if (!is_digit(f) && f != ':' && f != '-') return Status::success();
  lx.set_pos(brace + 1);
  const size_t lb = lx.pos();
  RETURN_IF_ERROR(read_layout(lx, nullptr, rank));
  if (out != nullptr) {
    out->has_layout = true;
    out->layout_text = lx.text().substr(lb, lx.pos() - 1 - lb);
  }
  return Status::success();
}

Status read_layout(Lexer& lx, Layout* out, int rank) {
  lx.skip_ws();
  int entries = 0;
  const size_t b = lx.pos();
  while (lx.peek() != ':' && lx.peek() != '}') {
    int64_t v;
    if (!lx.integer(&v)) return lx.expected("a layout dimension", lx.pos());
    if (out != nullptr) out->minor_to_major.push_back(v);
    ++entries;
    lx.skip_ws();
    if (lx.peek() == ',') lx.advance();
    else if (lx.peek() != ':' && lx.peek() != '}')
      return lx.expected("',', ':' or '}' in the layout", lx.pos());
    lx.skip_ws();
  }
  if (rank >= 0 && entries != rank)
    return lx.error_at("a layout lists " + std::to_string(entries) + " dimensions for a shape of rank " +
                           std::to_string(rank), b);
  if (lx.peek() == ':') {
    lx.advance();
    RETURN_IF_ERROR(read_layout_attributes(lx, out));
  }
  if (lx.peek() != '}') return lx.expected("'}' closing the layout", lx.pos());
  lx.advance();
  return Status::success();
}

}  // namespace aoizora::hlo
