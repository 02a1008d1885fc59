#include "aoizora/hlo/kernel_cost.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

namespace aoizora::hlo {
namespace {

constexpr std::string_view kSplash = "splash_mha_fwd";

bool is_float(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF16:
    case PrimitiveType::kBF16:
    case PrimitiveType::kF32:
    case PrimitiveType::kF64:
    case PrimitiveType::kF8E4M3FN:
    case PrimitiveType::kF8E5M2:
      return true;
    default:
      return false;
  }
}

// The integer after `key` in the kernel's block-size JSON, printed escaped inside a string:
// \"block_q\": 512. The key must be followed by a closing quote, so block_q does not match
// block_q_dkv. 0 when absent or null.
int64_t block_size(std::string_view text, std::string_view key) {
  size_t at = 0;
  while ((at = text.find(key, at)) != std::string_view::npos) {
    const size_t start = at;
    size_t i = at + key.size();
    at = i;
    if (start == 0 || text[start - 1] != '"') continue;  // part of a longer key
    if (i < text.size() && text[i] == '\\') ++i;
    if (i >= text.size() || text[i] != '"') continue;
    ++i;
    while (i < text.size() && (text[i] == ':' || text[i] == ' ')) ++i;
    int64_t v = 0;
    if (std::from_chars(text.data() + i, text.data() + text.size(), v).ec == std::errc())
      return v;
    return 0;
  }
  return 0;
}

}  // namespace

std::string_view attention_kernel_name(const Instruction& ins) {
  if (ins.opcode != "custom-call" || ins.attr("custom_call_target") != "\"tpu_custom_call\"")
    return {};
  if (ins.attr("metadata").find(kSplash) != std::string_view::npos ||
      ins.name.substr(0, kSplash.size()) == kSplash)
    return kSplash;
  return {};
}

std::optional<KernelCost> attention_kernel_cost(const Computation& comp, const Instruction& ins) {
  KernelCost k;
  k.kernel = attention_kernel_name(ins);
  if (k.kernel.empty()) return std::nullopt;
  std::vector<const Shape*> qkv;
  double operand_bytes = 0;
  for (int o : ins.operands) {
    if (o < 0) continue;
    const Shape& s = comp.instructions[o].shape;
    operand_bytes += static_cast<double>(s.byte_size());
    if (qkv.size() < 3 && s.is_array() && s.dims.size() >= 3 && is_float(s.type))
      qkv.push_back(&s);
  }
  if (qkv.size() < 3) return std::nullopt;
  const Shape &q = *qkv[0], &kk = *qkv[1], &v = *qkv[2];
  const size_t n = q.dims.size();
  if (kk.dims.size() != n || v.dims.size() != n) return std::nullopt;
  k.batch_heads = 1;
  for (size_t i = 0; i + 2 < n; ++i) k.batch_heads *= q.dims[i];
  k.q_len = q.dims[n - 2];
  k.head_dim = q.dims[n - 1];
  k.kv_len = kk.dims[n - 2];
  k.head_dim_v = v.dims[n - 1];

  const std::string_view meta = ins.attr("frontend_attributes");
  k.block_q = block_size(meta, "block_q");
  k.block_kv = block_size(meta, "block_kv");
  k.block_kv_compute = block_size(meta, "block_kv_compute");
  if (k.block_q <= 0 && ins.shape.is_tuple() && !ins.shape.tuple.empty()) {
    const Shape& m_scratch = ins.shape.tuple[0];  // [.., block_q, 128]
    if (m_scratch.dims.size() >= 2) k.block_q = m_scratch.dims[m_scratch.dims.size() - 2];
  }
  if (k.block_q <= 0 || k.block_q > k.q_len) k.block_q = k.q_len;

  const double bh = static_cast<double>(k.batch_heads);
  const double sq = static_cast<double>(k.q_len), skv = static_cast<double>(k.kv_len);
  k.flops = 2 * bh * sq * skv * static_cast<double>(k.head_dim + k.head_dim_v);
  const double q_blocks = std::ceil(sq / static_cast<double>(k.block_q));
  const double kv_bytes = static_cast<double>(kk.byte_size() + v.byte_size());
  k.bytes = operand_bytes + (q_blocks - 1) * kv_bytes + static_cast<double>(ins.shape.byte_size());
  return k;
}

}  // namespace aoizora::hlo
