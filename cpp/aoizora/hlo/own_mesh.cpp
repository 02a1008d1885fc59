#include "aoizora/hlo/own_mesh.h"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>
#include <set>

namespace aoizora::hlo {
namespace {

// `[a,b,...]` at `*at` (digits and commas only): the sizes, with *at past the ']'.
std::optional<std::vector<int64_t>> sizes_at(std::string_view s, size_t* at) {
  if (*at >= s.size() || s[*at] != '[') return std::nullopt;
  std::vector<int64_t> out;
  size_t k = *at + 1;
  while (true) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data() + k, s.data() + s.size(), v);
    if (ec != std::errc() || v < 1) return std::nullopt;
    out.push_back(v);
    k = static_cast<size_t>(end - s.data());
    if (k < s.size() && s[k] == ',') {
      ++k;
      continue;
    }
    if (k < s.size() && s[k] == ']') break;
    return std::nullopt;
  }
  *at = k + 1;
  return out;
}

// `T(0,1,...)` at `at`: a transposed iota.
bool transpose_at(std::string_view s, size_t at) {
  if (s.substr(at, 2) != "T(") return false;
  size_t k = at + 2;
  while (k < s.size() && (std::isdigit(static_cast<unsigned char>(s[k])) || s[k] == ',')) ++k;
  return k > at + 2 && k < s.size() && s[k] == ')';
}

// The prefix products of `sizes` strictly inside (1, partitions), when they multiply to it.
void add_splits(const std::vector<int64_t>& sizes, int64_t partitions, std::set<int64_t>* splits) {
  std::vector<int64_t> prefix;
  int64_t p = 1;
  for (int64_t v : sizes) {
    if (p > partitions / v) return;  // more than the program's devices
    p *= v;
    prefix.push_back(p);
  }
  if (p != partitions) return;
  for (int64_t q : prefix)
    if (q > 1 && q < partitions) splits->insert(q);
}

}  // namespace

std::vector<int> own_mesh(std::string_view text, int partitions) {
  if (partitions < 1) return {partitions};
  std::set<int64_t> splits;
  constexpr std::string_view kDevices = "devices=";
  for (size_t at = text.find(kDevices); at != std::string_view::npos; at = text.find(kDevices, at + 1)) {
    size_t k = at + kDevices.size();
    std::optional<std::vector<int64_t>> tile = sizes_at(text, &k);
    if (!tile || text.substr(k, 2) != "<=") continue;
    k += 2;
    std::optional<std::vector<int64_t>> reshape = sizes_at(text, &k);
    if (!reshape) continue;
    add_splits(transpose_at(text, k) ? *reshape : *tile, partitions, &splits);
  }
  std::vector<int> mesh;
  int64_t below = 1;
  splits.insert(partitions);
  for (int64_t b : splits) {
    if (b % below != 0) return {partitions};  // not one chain of divisors
    mesh.push_back(static_cast<int>(b / below));
    below = b;
  }
  return mesh;
}

}  // namespace aoizora::hlo
