#include "aoizora/shlo/kernel_call.h"

#include <string_view>
#include <vector>

namespace aoizora::shlo {

std::optional<compute::SplashCall> splash_call(const Op& op,
                                            const std::function<const TensorType&(int)>& type) {
  if (op.name != "stablehlo.custom_call" || op.callee != "tpu_custom_call" ||
      op.attrs.find("kernel_name = \"splash_mha_fwd") == std::string::npos)
    return std::nullopt;
  std::vector<const TensorType*> qkv;
  compute::SplashCall c;
  for (int v : op.operands) {
    const TensorType& t = type(v);
    c.io_bytes += t.bytes();
    const bool is_float = !t.dtype.empty() && (t.dtype[0] == 'f' || t.dtype == "bf16");
    if (qkv.size() < 3 && is_float && t.shape.size() >= 3) qkv.push_back(&t);
  }
  for (int r : op.results) c.io_bytes += type(r).bytes();
  if (qkv.size() < 3) return std::nullopt;
  const std::vector<int64_t>&q = qkv[0]->shape, &k = qkv[1]->shape, &v = qkv[2]->shape;
  const size_t n = q.size();
  if (k.size() != n || v.size() != n) return std::nullopt;
  c.batch_heads = 1;
  for (size_t i = 0; i + 2 < n; ++i) c.batch_heads *= static_cast<double>(q[i]);
  c.q_len = static_cast<double>(q[n - 2]);
  c.head_dim = static_cast<double>(q[n - 1]);
  c.kv_len = static_cast<double>(k[n - 2]);
  c.head_dim_v = static_cast<double>(v[n - 1]);
  c.block_q = static_cast<double>(compute::kernel_block_size(op.attrs, "block_q"));
  c.block_kv = static_cast<double>(compute::kernel_block_size(op.attrs, "block_kv"));
  c.block_kv_compute = static_cast<double>(compute::kernel_block_size(op.attrs, "block_kv_compute"));
  c.kv_bytes = qkv[1]->bytes() + qkv[2]->bytes();
  return c;
}

}  // namespace aoizora::shlo
