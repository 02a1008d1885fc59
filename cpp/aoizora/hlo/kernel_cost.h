// The cost model of Pallas attention kernels in compiled HLO: recognizes the splash-attention
// forward kernel (jax.experimental.pallas.ops.tpu.splash_attention) among custom-calls and
// prices it from its operand shapes and block sizes, per device.
//
// Recognition: a custom-call with custom_call_target="tpu_custom_call" whose metadata op_name
// (or instruction name) holds "splash_mha_fwd" (the Pallas kernel's name,
// splash_mha_fwd[_segmented]_{no_,}residuals). Block sizes come from the kernel's
// frontend_attributes (kernel_metadata -> xprof_metadata: "block_q", "block_kv",
// "block_kv_compute"); without them block_q is read from the kernel's m scratch output
// [.., block_q, 128].
//
// Operands: the first three floating-point operands of rank >= 3 are q [.., H, Sq, D],
// k [.., H, Skv, D], v [.., H, Skv, Dv] (leading dims: a vmapped batch). The kernel visits
// every (q block, kv block) pair (a full mask: padding is masked inside blocks by segment
// ids, no block is skipped), keeps scores and the online-softmax state on chip, and streams
// K/V once per q block:
//   flops = 2 B H Sq Skv (D + Dv)                       (QK^T and PV; multiply-add = 2)
//   bytes = every operand once + (Sq / block_q - 1) (K + V bytes) + every result once
// and its time per grid step (K/V DMA, MXU, VPU/EUP, fixed cost) by compute/splash_kernel.h.
// The derivation and its limits are in docs/simulator.md ("Pallas kernels").
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "aoizora/compute/mxu.h"
#include "aoizora/compute/splash_kernel.h"

#include "aoizora/hlo/hlo_module.h"

namespace aoizora::hlo {

struct KernelCost {
  std::string_view kernel;      // "splash_mha_fwd"
  int64_t batch_heads = 0;      // B x H of one call
  int64_t q_len = 0, kv_len = 0, head_dim = 0, head_dim_v = 0;
  int64_t block_q = 0, block_kv = 0, block_kv_compute = 0;  // 0 when not recorded
  double flops = 0;             // per device, one execution
  std::vector<compute::Matmul> matmuls;  // its two matmuls, as the MXU runs them (compute/mxu.h)
  double bytes = 0;             // HBM bytes read + written, per device, one execution
  compute::SplashCall call;     // its shapes and blocks: compute::splash_time prices it
};

// The splash kernel's name when `ins` is one ("splash_mha_fwd"), else an empty view.
std::string_view attention_kernel_name(const Instruction& ins);

// The cost of `ins` (an instruction of `comp`) when it is a recognized attention kernel whose
// q, k, v operands were found; nullopt otherwise (the caller keeps its generic estimate).
std::optional<KernelCost> attention_kernel_cost(const Computation& comp, const Instruction& ins);

}  // namespace aoizora::hlo
