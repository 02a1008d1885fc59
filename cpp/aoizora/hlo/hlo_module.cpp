#include "aoizora/hlo/hlo_module.h"

#include <algorithm>
#include <charconv>
#include <string>

#include "aoizora/hlo/attribute_text.h"
#include "aoizora/hlo/hlo_lexer.h"

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

namespace {

// The next ", key=value" of text the parser already validated; false at the end.
bool next_attribute(std::string_view t, size_t* pos, Attribute* out) {
  size_t p = skip_space_and_comments(t, *pos);
  if (p >= t.size() || t[p] != ',') return false;
  p = skip_space_and_comments(t, p + 1);
  size_t kb = p;
  while (p < t.size() && t[p] != '=' && t[p] != ',' && is_name_char(t[p])) ++p;
  out->key = t.substr(kb, p - kb);
  out->value = {};
  if (p < t.size() && t[p] == '=') {
    size_t vb = skip_space_and_comments(t, p + 1);
    ValueEnd ve = attribute_value_end(t, vb, out->key);
    out->value = t.substr(vb, ve.end - vb);
    p = ve.ok ? ve.end : t.size();
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

int Instruction::callee(std::string_view key) const {
  for (size_t i = 0; i < called_keys.size(); ++i)
    if (called_keys[i] == key) return called[i];
  return -1;
}

int HloModule::find_computation(std::string_view name) const {
  if (!name.empty() && name.front() == '%') name.remove_prefix(1);
  for (size_t i = 0; i < computations.size(); ++i)
    if (computations[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace aoizora::hlo
