#include "aoizora/hlo/attribute_text.h"

#include <charconv>
#include <cstring>

namespace aoizora::hlo {
namespace {

// Characters that end a run of ordinary value text.
struct SpecialTable {
  bool special[256] = {};
  constexpr explicit SpecialTable(std::string_view chars) {
    for (unsigned char c : chars) special[c] = true;
  }
};
// Inside brackets; at the top level, where a space also ends the value (a value is one token).
constexpr SpecialTable kSpecial("\"(){}[],\n/");
constexpr SpecialTable kSpecialTop("\"(){}[],\n/ \t\r");

// Past the string whose quote is at `p`; npos when unterminated.
size_t past_string(std::string_view t, size_t p) {
  const char q = t[p++];
  while (p < t.size()) {
    const void* hit = memchr(t.data() + p, q, t.size() - p);
    if (hit == nullptr) break;
    size_t at = static_cast<size_t>(static_cast<const char*>(hit) - t.data());
    size_t bs = 0;
    while (at - bs > p && t[at - bs - 1] == '\\') ++bs;
    p = at + 1;
    if (bs % 2 == 0) return p;
  }
  return std::string_view::npos;
}

}  // namespace

size_t mesh_value_continues(std::string_view text, size_t value_begin, size_t comma) {
  if (text.compare(value_begin, 5, "mesh[") != 0) return std::string_view::npos;
  size_t q = comma + 1;
  while (q < text.size() && text[q] == ' ') ++q;
  return text.compare(q, 11, "device_ids=") == 0 ? q + 11 : std::string_view::npos;
}

ValueEnd attribute_value_end(std::string_view t, size_t vb, std::string_view key) {
  size_t p = vb;
  int depth = 0;
  size_t open = vb;  // the outermost open bracket, for errors
  // The mesh form of replica_groups, `mesh['x'=2] {'x'}`, has a space between its parts, and
  // so has a literal, `literal=s32[2]{0} {1, 2}`.
  const bool mesh = t.compare(vb, 5, "mesh[") == 0 || key == "literal";
  while (p < t.size()) {
    const bool* special = depth == 0 && !mesh ? kSpecialTop.special : kSpecial.special;
    while (p < t.size() && !special[static_cast<unsigned char>(t[p])]) ++p;
    if (p >= t.size()) break;
    const char c = t[p];
    if (c == '"') {
      size_t after = past_string(t, p);
      if (after == std::string_view::npos) return {t.size(), false, p};
      p = after;
      continue;
    }
    if (c == '(' || c == '{' || c == '[') {
      if (depth++ == 0) open = p;
    } else if (c == ')' || c == '}' || c == ']') {
      if (depth == 0) break;
      --depth;
    } else if (depth == 0) {
      if (c == ' ' || c == '\t' || c == '\r') break;  // the token ends
      if (c == '/' && !(p + 1 < t.size() && (t[p + 1] == '/' || t[p + 1] == '*'))) {
        ++p;  // a slash that starts no comment is value text
        continue;
      }
      if (c == ',') {
        if (size_t resume = mesh_value_continues(t, vb, p); resume != std::string_view::npos) {
          p = resume;
          continue;
        }
      }
      break;  // ',', newline or a comment
    }
    ++p;
  }
  if (depth != 0) return {t.size(), false, open};
  size_t e = p;
  while (e > vb && (t[e - 1] == ' ' || t[e - 1] == '\t' || t[e - 1] == '\r')) --e;
  return {e, true, 0};
}

std::vector<int64_t> attribute_ints(std::string_view v) {
  std::vector<int64_t> out;
  size_t i = 0;
  while (i < v.size()) {
    while (i < v.size() && !(v[i] >= '0' && v[i] <= '9')) ++i;
    size_t b = i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
    int64_t x;
    if (b < i && std::from_chars(v.data() + b, v.data() + i, x).ec == std::errc())
      out.push_back(x);
  }
  return out;
}

std::optional<int64_t> attribute_int(std::string_view s) {
  int64_t v;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace aoizora::hlo
