// Pallas kernels in lowered StableHLO, for Stage 1: the splash-attention forward kernel is a
// `stablehlo.custom_call @tpu_custom_call` with `kernel_name = "splash_mha_fwd..."` inside the
// shard_map body (per-device shapes). Priced with the same formula as the compiled-HLO cost
// model (compute/splash_kernel.h), so Q1 sees the attention FLOPs the simulator sees.
#pragma once

#include <functional>
#include <optional>

#include "aoizora/compute/splash_kernel.h"
#include "aoizora/shlo/ir.h"

namespace aoizora::shlo {

// The call's shapes when `op` is a splash kernel whose q, k, v operands (the first three
// floating-point operands of rank >= 3: [.., H, S, D]) were found; nullopt otherwise.
std::optional<compute::SplashCall> splash_call(const Op& op,
                                            const std::function<const TensorType&(int)>& type);

}  // namespace aoizora::shlo
