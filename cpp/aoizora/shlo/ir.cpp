#include "aoizora/shlo/ir.h"

#include <cctype>
#include <cstdlib>

namespace aoizora::shlo {

int64_t TensorType::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

// Bytes of one element of an MLIR element type; negative when unknown.
double element_bytes_of(std::string_view t) {
  if (t.starts_with("complex<")) {
    double inner = element_bytes_of(t.substr(8, t.size() - 9));
    return inner < 0 ? inner : 2 * inner;
  }
  if (t == "index") return 8;
  // Narrow floats are spelled with their format: f8E4M3FN, f6E2M3FN, f4E2M1FN.
  if (t.starts_with("f8E")) return 1;
  if (t.starts_with("f6E")) return 0.75;
  if (t.starts_with("f4E")) return 0.5;
  if (t == "bf16" || t == "f16") return 2;
  if (t == "tf32") return 4;
  size_t k = 0;
  if (t.starts_with("ui")) k = 2;
  else if (t.starts_with("si")) k = 2;
  else if (t.starts_with("i") || t.starts_with("f")) k = 1;
  else return -1;
  if (k >= t.size()) return -1;
  int bits = 0;
  for (size_t j = k; j < t.size(); ++j) {
    if (!std::isdigit(static_cast<unsigned char>(t[j]))) return -1;
    bits = bits * 10 + (t[j] - '0');
  }
  const bool is_float = t[0] == 'f';
  if (is_float ? (bits != 16 && bits != 32 && bits != 64)
               : (bits != 1 && bits != 2 && bits != 4 && bits != 8 && bits != 16 && bits != 32 && bits != 64))
    return -1;
  if (bits == 1) return 1;  // i1 is stored as a byte
  return bits / 8.0;
}

}  // namespace

Result<TensorType> parse_tensor_type(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  TensorType t;
  if (text.starts_with("!stablehlo.token") || text == "!mhlo.token") {
    t.dtype = "token";
    return t;
  }
  if (text.starts_with("tuple<")) {
    t.dtype = "tuple";
    return t;
  }
  if (!text.starts_with("tensor<") || !text.ends_with(">"))
    return Error::parse("expected a tensor type, found '" + std::string(text) + "'");
  std::string_view body = text.substr(7, text.size() - 8);
  // Drop an encoding: tensor<4xf32, #enc>.
  int depth = 0;
  for (size_t j = 0; j < body.size(); ++j) {
    if (body[j] == '<') ++depth;
    if (body[j] == '>') --depth;
    if (body[j] == ',' && depth == 0) {
      body = body.substr(0, j);
      break;
    }
  }
  while (true) {
    size_t j = 0;
    while (j < body.size() && (std::isdigit(static_cast<unsigned char>(body[j])) || body[j] == '?')) ++j;
    if (j > 0 && j < body.size() && body[j] == 'x') {
      std::string_view dim = body.substr(0, j);
      t.shape.push_back(dim == "?" ? 1 : std::strtoll(std::string(dim).c_str(), nullptr, 10));
      body.remove_prefix(j + 1);
    } else {
      break;
    }
  }
  t.dtype = std::string(body);
  double eb = element_bytes_of(body);
  if (eb < 0) return Error::parse("unknown element type '" + std::string(body) + "' in '" + std::string(text) + "'");
  t.element_bytes = eb;
  return t;
}

const Func* Module::find_func(std::string_view name) const {
  for (const Func& f : funcs)
    if (f.name == name) return &f;
  return nullptr;
}

const Func* Module::entry() const {
  if (const Func* f = find_func("main")) return f;
  for (const Func& f : funcs)
    if (f.is_public) return &f;
  return funcs.empty() ? nullptr : &funcs.front();
}

namespace {

// Position just after "key" followed by optional spaces and '=' in attrs, or npos.
size_t after_key(std::string_view attrs, std::string_view key) {
  size_t pos = 0;
  while ((pos = attrs.find(key, pos)) != std::string_view::npos) {
    bool left_ok = pos == 0 || !(std::isalnum(static_cast<unsigned char>(attrs[pos - 1])) ||
                                 attrs[pos - 1] == '_');
    size_t j = pos + key.size();
    while (j < attrs.size() && attrs[j] == ' ') ++j;
    if (left_ok && j < attrs.size() && attrs[j] == '=') {
      ++j;
      while (j < attrs.size() && attrs[j] == ' ') ++j;
      return j;
    }
    pos += key.size();
  }
  return std::string_view::npos;
}

std::vector<int64_t> ints_in(std::string_view s) {
  std::vector<int64_t> out;
  size_t j = 0;
  while (j < s.size()) {
    if (std::isdigit(static_cast<unsigned char>(s[j])) || (s[j] == '-' && j + 1 < s.size() &&
                                                          std::isdigit(static_cast<unsigned char>(s[j + 1])))) {
      char* end = nullptr;
      std::string tmp(s.substr(j, 24));
      out.push_back(std::strtoll(tmp.c_str(), &end, 10));
      j += static_cast<size_t>(end - tmp.c_str());
    } else {
      ++j;
    }
  }
  return out;
}

// The integers of MLIR's hex form of a dense attribute, `"0x..."`: each element's bytes
// little-endian, `width` bytes wide; nullopt when the digits are not whole elements.
std::optional<std::vector<int64_t>> hex_elements(std::string_view body, int width) {
  if (!body.starts_with("\"0x") || !body.ends_with('"') || width <= 0) return std::nullopt;
  const std::string_view hex = body.substr(3, body.size() - 4);
  if (hex.size() % (2 * static_cast<size_t>(width)) != 0) return std::nullopt;
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  std::vector<int64_t> out;
  for (size_t e = 0; e < hex.size(); e += 2 * static_cast<size_t>(width)) {
    uint64_t v = 0;
    for (int b = width - 1; b >= 0; --b) {
      const int hi = nibble(hex[e + 2 * static_cast<size_t>(b)]);
      const int lo = nibble(hex[e + 2 * static_cast<size_t>(b) + 1]);
      if (hi < 0 || lo < 0) return std::nullopt;
      v = (v << 8) | static_cast<uint64_t>(hi * 16 + lo);
    }
    if (width < 8 && (v >> (8 * width - 1)) & 1) v |= ~uint64_t{0} << (8 * width);  // sign
    out.push_back(static_cast<int64_t>(v));
  }
  return out;
}

}  // namespace

std::optional<std::vector<int64_t>> attr_int_list(std::string_view attrs, std::string_view key,
                                                  int which) {
  size_t j = after_key(attrs, key);
  if (j == std::string_view::npos) return std::nullopt;
  std::string_view rest = attrs.substr(j);
  if (rest.starts_with("array<")) {
    size_t colon = rest.find(':');
    size_t close = rest.find('>');
    if (close == std::string_view::npos) return std::nullopt;
    if (colon == std::string_view::npos || colon > close) return std::vector<int64_t>{};
    return ints_in(rest.substr(colon + 1, close - colon - 1));
  }
  for (int k = 0; k <= which; ++k) {
    size_t open = rest.find('[');
    size_t close = rest.find(']');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open)
      return std::nullopt;
    if (k == which) return ints_in(rest.substr(open + 1, close - open - 1));
    rest = rest.substr(close + 1);
    size_t x = rest.find_first_not_of(' ');
    if (x == std::string_view::npos || rest[x] != 'x') return std::nullopt;
    rest = rest.substr(x + 1);
  }
  return std::nullopt;
}

std::optional<int64_t> attr_int(std::string_view attrs, std::string_view key) {
  size_t j = after_key(attrs, key);
  if (j == std::string_view::npos) return std::nullopt;
  std::vector<int64_t> v = ints_in(attrs.substr(j, 24));
  if (v.empty()) return std::nullopt;
  return v.front();
}

std::optional<std::vector<std::vector<int64_t>>> attr_dense_2d(std::string_view attrs,
                                                               std::string_view key) {
  size_t j = after_key(attrs, key);
  if (j == std::string_view::npos) return std::nullopt;
  std::string_view rest = attrs.substr(j);
  if (!rest.starts_with("dense<")) return std::nullopt;
  size_t close = rest.find('>');
  std::string_view body = rest.substr(6, close - 6);
  std::vector<std::vector<int64_t>> rows;
  // Shape from the trailing tensor<RxCxi64> tells the row length (covers dense<0> splats).
  size_t tt = rest.find("tensor<", close);
  std::vector<int64_t> shape = tt == std::string_view::npos
                                   ? std::vector<int64_t>{}
                                   : ints_in(rest.substr(tt + 7, rest.find('>', tt) - tt - 7));
  const int64_t bits = shape.empty() ? 64 : shape.back();  // the "64" of i64
  if (shape.size() >= 1) shape.pop_back();
  std::vector<int64_t> flat;
  if (body.starts_with("\"0x")) {  // large attributes print as hex
    std::optional<std::vector<int64_t>> h = hex_elements(body, static_cast<int>(bits / 8));
    if (!h) return std::nullopt;
    flat = std::move(*h);
  } else {
    flat = ints_in(body);
  }
  int64_t cols = shape.size() == 2 ? shape[1] : static_cast<int64_t>(flat.size());
  int64_t nrows = shape.size() == 2 ? shape[0] : 1;
  if (flat.size() == 1 && nrows * cols > 1) flat.assign(static_cast<size_t>(nrows * cols), flat[0]);
  if (cols <= 0) return rows;
  for (size_t r = 0; r + static_cast<size_t>(cols) <= flat.size(); r += static_cast<size_t>(cols))
    rows.emplace_back(flat.begin() + static_cast<long>(r), flat.begin() + static_cast<long>(r) + cols);
  return rows;
}

}  // namespace aoizora::shlo
