#include "aoizora/hlo/kernel_cost.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

#include "aoizora/compute/splash_kernel.h"

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
  k.block_q = compute::kernel_block_size(meta, "block_q");
  k.block_kv = compute::kernel_block_size(meta, "block_kv");
  k.block_kv_compute = compute::kernel_block_size(meta, "block_kv_compute");
  if (k.block_q <= 0 && ins.shape.is_tuple() && !ins.shape.tuple.empty()) {
    const Shape& m_scratch = ins.shape.tuple[0];  // [.., block_q, 128]
    if (m_scratch.dims.size() >= 2) k.block_q = m_scratch.dims[m_scratch.dims.size() - 2];
  }
  if (k.block_q <= 0 || k.block_q > k.q_len) k.block_q = k.q_len;

  compute::SplashCall call;
  call.batch_heads = static_cast<double>(k.batch_heads);
  call.q_len = static_cast<double>(k.q_len);
  call.kv_len = static_cast<double>(k.kv_len);
  call.head_dim = static_cast<double>(k.head_dim);
  call.head_dim_v = static_cast<double>(k.head_dim_v);
  call.block_q = static_cast<double>(k.block_q);
  call.block_kv = static_cast<double>(k.block_kv);
  call.block_kv_compute = static_cast<double>(k.block_kv_compute);
  call.kv_bytes = static_cast<double>(kk.byte_size() + v.byte_size());
  call.io_bytes = operand_bytes + static_cast<double>(ins.shape.byte_size());
  k.flops = compute::splash_flops(call);
  k.matmuls = compute::splash_matmuls(call);
  k.bytes = compute::splash_bytes(call);
  k.call = call;
  return k;
}

}  // namespace aoizora::hlo
