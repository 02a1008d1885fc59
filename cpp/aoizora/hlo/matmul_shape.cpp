#include "aoizora/hlo/matmul_shape.h"

#include <algorithm>
#include <string_view>
#include <vector>

#include "aoizora/hlo/attribute_text.h"

namespace aoizora::hlo {
namespace {

// "{1,2}" -> [1,2] (attribute_ints gives whole numbers only: never negative).
std::vector<size_t> dim_list(std::string_view v) {
  const std::vector<int64_t> ints = attribute_ints(v);
  return {ints.begin(), ints.end()};
}

bool listed(const std::vector<size_t>& dims, size_t d) {
  return std::find(dims.begin(), dims.end(), d) != dims.end();
}

double product_of(const Shape& s, const std::vector<size_t>& dims) {
  double p = 1;
  for (size_t d : dims) p *= static_cast<double>(s.dims[d]);
  return p;
}

// The product of `s`'s dims in neither list: a matmul side's free dims.
double product_outside(const Shape& s, const std::vector<size_t>& a, const std::vector<size_t>& b) {
  double p = 1;
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (!listed(a, d) && !listed(b, d)) p *= static_cast<double>(s.dims[d]);
  return p;
}

bool within(const Shape& s, const std::vector<size_t>& dims) {
  return std::all_of(dims.begin(), dims.end(), [&](size_t d) { return d < s.dims.size(); });
}

}  // namespace

std::optional<compute::Matmul> dot_matmul(const Instruction& ins, const Shape& lhs, const Shape& rhs) {
  if (!lhs.is_array() || !rhs.is_array()) return std::nullopt;
  const auto lb = dim_list(ins.attr("lhs_batch_dims")), lc = dim_list(ins.attr("lhs_contracting_dims"));
  const auto rb = dim_list(ins.attr("rhs_batch_dims")), rc = dim_list(ins.attr("rhs_contracting_dims"));
  if (!within(lhs, lb) || !within(lhs, lc) || !within(rhs, rb) || !within(rhs, rc)) return std::nullopt;
  compute::Matmul mm;
  mm.count = product_of(lhs, lb);
  mm.k = product_of(lhs, lc);
  mm.m = product_outside(lhs, lb, lc);
  mm.n = product_outside(rhs, rb, rc);
  return mm;
}

std::optional<compute::Matmul> convolution_matmul(const Instruction& ins, double flops) {
  const std::string_view labels = ins.attr("dim_labels");
  const size_t arrow = labels.find("->");
  const Shape& out = ins.shape.is_tuple() && !ins.shape.tuple.empty() ? ins.shape.tuple[0] : ins.shape;
  if (arrow == std::string_view::npos || !out.is_array() || flops <= 0) return std::nullopt;
  const size_t f = labels.substr(arrow + 2).find('f');
  if (f == std::string_view::npos || f >= out.dims.size() || out.dims[f] <= 0) return std::nullopt;
  compute::Matmul mm;
  mm.n = static_cast<double>(out.dims[f]);
  mm.m = static_cast<double>(out.num_elements()) / mm.n;
  if (mm.m <= 0) return std::nullopt;
  mm.k = flops / (2 * mm.m * mm.n);
  return mm;
}

std::optional<compute::Matmul> custom_call_matmul(const Instruction& ins, const Shape& a,
                                               const Shape& b) {
  const auto& r = ins.shape.dims;
  const size_t n = r.size();
  if (!ins.shape.is_array() || n < 2 || a.dims.size() != n || b.dims.size() != n) return std::nullopt;
  if (a.dims[n - 2] != r[n - 2] || b.dims[n - 1] != r[n - 1] || a.dims[n - 1] != b.dims[n - 2])
    return std::nullopt;
  compute::Matmul mm;
  for (size_t d = 0; d + 2 < n; ++d) mm.count *= static_cast<double>(r[d]);
  mm.m = static_cast<double>(r[n - 2]);
  mm.n = static_cast<double>(r[n - 1]);
  mm.k = static_cast<double>(a.dims[n - 1]);
  return mm;
}

}  // namespace aoizora::hlo
