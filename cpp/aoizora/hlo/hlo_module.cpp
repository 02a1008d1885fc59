#include "aoizora/hlo/hlo_module.h"

#include <algorithm>
#include <charconv>
#include <string>

namespace aoizora::hlo {

std::optional<int64_t> backend_config_int(std::string_view config, std::string_view key,
                                          size_t from) {
  const std::string quoted = "\"" + std::string(key) + "\"";
  const size_t at = config.find(quoted, from);
  if (at == std::string_view::npos) return std::nullopt;
  const size_t b = config.find_first_of("0123456789-", at + quoted.size());
  if (b == std::string_view::npos) return std::nullopt;
  const size_t e = std::min(config.find_first_not_of("0123456789-", b), config.size());
  int64_t v;
  auto [ptr, ec] = std::from_chars(config.data() + b, config.data() + e, v);
  if (ec != std::errc() || ptr != config.data() + e) return std::nullopt;
  return v;
}

size_t mesh_value_continues(std::string_view text, size_t value_begin, size_t comma) {
  if (text.compare(value_begin, 5, "mesh[") != 0) return std::string_view::npos;
  size_t q = comma + 1;
  while (q < text.size() && text[q] == ' ') ++q;
  return text.compare(q, 11, "device_ids=") == 0 ? q + 11 : std::string_view::npos;
}
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// The next ", key=value" of text the parser already validated; false at the end. Values end
// at a top-level ',' or newline (strings and brackets skipped), except that the mesh form of
// replica_groups keeps its ", device_ids=(...)".
bool next_attribute(std::string_view t, size_t* pos, Attribute* out) {
  size_t p = *pos;
  while (p < t.size() && is_blank(t[p])) ++p;
  if (p >= t.size() || t[p] != ',') return false;
  ++p;
  while (p < t.size() && is_blank(t[p])) ++p;
  size_t kb = p;
  while (p < t.size() && t[p] != '=' && t[p] != ',' && !is_blank(t[p])) ++p;
  out->key = t.substr(kb, p - kb);
  out->value = {};
  while (p < t.size() && (t[p] == ' ' || t[p] == '\t')) ++p;
  if (p < t.size() && t[p] == '=') {
    ++p;
    while (p < t.size() && (t[p] == ' ' || t[p] == '\t')) ++p;
    size_t vb = p;
    int depth = 0;
    while (p < t.size()) {
      char c = t[p];
      if (c == '"') {
        ++p;
        while (p < t.size() && t[p] != '"') p += (t[p] == '\\') ? 2 : 1;
        ++p;
        continue;
      }
      if (c == '(' || c == '{' || c == '[') {
        ++depth;
      } else if (c == ')' || c == '}' || c == ']') {
        if (depth == 0) break;
        --depth;
      } else if (depth == 0 && (c == '\n' || c == ',')) {
        if (c == ',') {
          if (size_t resume = mesh_value_continues(t, vb, p); resume != std::string_view::npos) {
            p = resume;
            continue;
          }
        }
        break;
      }
      ++p;
    }
    p = std::min(p, t.size());
    size_t ve = p;
    while (ve > vb && is_blank(t[ve - 1])) --ve;
    out->value = t.substr(vb, ve - vb);
  }
  *pos = p;
  return true;
}

}  // namespace

std::string_view Instruction::attr(std::string_view key) const {
  size_t pos = 0;
  Attribute a;
  while (next_attribute(attribute_text, &pos, &a))
    if (a.key == key) return a.value;
  return {};
}

bool Instruction::has_attr(std::string_view key) const {
  size_t pos = 0;
  Attribute a;
  while (next_attribute(attribute_text, &pos, &a))
    if (a.key == key) return true;
  return false;
}

std::vector<Attribute> Instruction::attributes() const {
  std::vector<Attribute> out;
  size_t pos = 0;
  Attribute a;
  while (next_attribute(attribute_text, &pos, &a)) out.push_back(a);
  return out;
}

int HloModule::find_computation(std::string_view name) const {
  if (!name.empty() && name.front() == '%') name.remove_prefix(1);
  for (size_t i = 0; i < computations.size(); ++i)
    if (computations[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace aoizora::hlo
