// The matmul an HLO instruction runs on the MXU, read from its shapes (compute/mxu.h prices it).
//   dot:         count = the batch dims, k = the contracting dims, n = rhs's other dims,
//                m = lhs's other dims.
//   convolution: n = the output feature dim, m = the other output elements, k = what the
//                counted flops leave (XLA's count: kernel positions that land on real input,
//                so a batched matmul written as a dilated convolution gets k = its
//                contraction, not the window).
//   custom-call: [.., M, K] x [.., K, N] -> [.., M, N] when its shapes read so.
// nullopt for anything else, or shapes that do not fit.
#pragma once

#include <optional>

#include "aoizora/compute/mxu.h"
#include "aoizora/hlo/hlo_module.h"

namespace aoizora::hlo {

std::optional<compute::Matmul> dot_matmul(const Instruction& ins, const Shape& lhs, const Shape& rhs);
std::optional<compute::Matmul> convolution_matmul(const Instruction& ins, double flops);
std::optional<compute::Matmul> custom_call_matmul(const Instruction& ins, const Shape& a,
                                               const Shape& b);

}  // namespace aoizora::hlo
