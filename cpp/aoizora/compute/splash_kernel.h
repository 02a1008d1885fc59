// The cost of one call of the Pallas splash-attention forward kernel, from its shapes and
// blocks: one formula for Stage 1 (StableHLO, shlo/kernel_call.h) and the compiled-HLO cost
// model (hlo/kernel_cost.h), so Q1, the simulator and the block search price the kernel
// alike. The kernel's grid visits every (batch x head, q block, kv block); each grid step
// DMAs its K/V block into VMEM (the next step's DMA overlaps this step's compute), runs
// Q K^T and P V on the MXU over block_kv_compute sub-tiles, and the online softmax on the
// VPU/EUP, then pays a fixed per-step cost (docs/simulator.md, "Pallas kernels"):
//   flops = 2 B H Sq Skv (D + Dv)                   (QK^T and PV; multiply-add = 2)
//   bytes = operands + results + (ceil(Sq / block_q) - 1) (K + V bytes)
//   step  = max(dma, mxu, vector) + grid_step_seconds;  call = steps x step + dma
// (the trailing dma: the first block's, which nothing overlaps).
#pragma once

#include <algorithm>
#include <charconv>
#include <iterator>
#include <utility>
#include <cmath>
#include <cstdint>
#include <string_view>
#include <vector>

#include "aoizora/compute/mxu.h"
#include "aoizora/topo/chip_spec.h"

namespace aoizora::compute {

struct SplashCall {
  double batch_heads = 0;  // B x H of one call
  double q_len = 0, kv_len = 0, head_dim = 0, head_dim_v = 0;
  double block_q = 0;      // <= 0 or > q_len: one q block
  double block_kv = 0;     // <= 0 or > kv_len: one kv block
  double block_kv_compute = 0;  // <= 0 or > block_kv: the whole kv block at once
  double kv_bytes = 0;     // K + V bytes
  double io_bytes = 0;     // every operand and result once
};

inline double splash_flops(const SplashCall& c) {
  return 2 * c.batch_heads * c.q_len * c.kv_len * (c.head_dim + c.head_dim_v);
}

// The kernel's two matmuls per (batch, head) as the MXU runs them (compute/mxu.h): scores
// Q K^T ([Sq, D] x [D, Skv]) and P V ([Sq, Skv] x [Skv, Dv]).
inline std::vector<Matmul> splash_matmuls(const SplashCall& c) {
  return {Matmul{c.q_len, c.kv_len, c.head_dim, c.batch_heads},
          Matmul{c.q_len, c.head_dim_v, c.kv_len, c.batch_heads}};
}

inline double splash_bytes(const SplashCall& c) {
  const double block = c.block_q > 0 && c.block_q <= c.q_len ? c.block_q : c.q_len;
  const double q_blocks = block > 0 ? std::ceil(c.q_len / block) : 1;
  return c.io_bytes + (q_blocks - 1) * c.kv_bytes;
}

// The online softmax's vector work per score element (one query x one key of a sub-tile):
// on the VPU the segment-id mask (compare, select), the running max, the subtraction of the
// max, the scale to base 2, the row sum and the cast of P to bf16; on the EUP one exp. Per
// query row and sub-tile the f32 accumulator is rescaled and the P V result added: 2 VPU
// ops per accumulator element (Dv of them), which is where block_kv_compute enters.
inline constexpr double kVpuOpsPerScore = 7;
inline constexpr double kEupOpsPerScore = 1;
inline constexpr double kVpuOpsPerAccumulator = 2;

// What bounds a kernel call: the resource of the largest per-step time.
enum class KernelBound { kMxu, kVector, kHbmDma, kStepOverhead };

inline const char* kernel_bound_name(KernelBound b) {
  switch (b) {
    case KernelBound::kMxu: return "mxu";
    case KernelBound::kVector: return "vpu/eup";
    case KernelBound::kHbmDma: return "hbm-dma";
    case KernelBound::kStepOverhead: return "step-overhead";
  }
  return "";
}

// One call's time on one device (one TensorCore of `chip`), and each resource's time per
// grid step (seconds).
struct SplashTime {
  double seconds = 0;
  double steps = 0;          // grid steps: B H x q blocks x kv blocks
  double dma = 0;            // one step's HBM bytes (K/V block, q/o amortised) at HBM bandwidth
  double mxu = 0;            // one step's two matmuls, MXU-padded, at peak x mxu_efficiency
  double vector = 0;         // one step's softmax: max(VPU ops / VPU rate, exps / EUP rate)
  double overhead = 0;       // the fixed cost of one grid step
  KernelBound bound = KernelBound::kMxu;
};

inline double blocks_or_whole(double block, double len) {
  return block > 0 && block <= len ? block : len;
}

inline SplashTime splash_time(const SplashCall& c, const topo::ChipSpec& chip) {
  SplashTime t;
  const double bq = blocks_or_whole(c.block_q, c.q_len);
  const double bkv = blocks_or_whole(c.block_kv, c.kv_len);
  const double bkc = blocks_or_whole(c.block_kv_compute, bkv);
  if (bq <= 0 || bkv <= 0) return t;
  t.steps = c.batch_heads * std::ceil(c.q_len / bq) * std::ceil(c.kv_len / bkv);
  if (t.steps <= 0) return t;
  const auto rate = [](double r) { return r > 0 ? 1 / r : 0.0; };
  t.dma = splash_bytes(c) / t.steps * rate(chip.core_hbm_bandwidth());
  const double efficiency = chip.mxu_efficiency > 0 ? chip.mxu_efficiency : 1;
  const double mxu = mxu_flops(Matmul{bq, bkv, c.head_dim, 1}, chip.mxu_size) +
                     mxu_flops(Matmul{bq, c.head_dim_v, bkv, 1}, chip.mxu_size);
  t.mxu = mxu / efficiency * rate(chip.core_peak_flops());
  const double scores = bq * bkv;
  const double vpu = scores * kVpuOpsPerScore +
                     std::ceil(bkv / bkc) * bq * c.head_dim_v * kVpuOpsPerAccumulator;
  t.vector = std::max(vpu * rate(chip.core_vector_ops_per_second()),
                      scores * kEupOpsPerScore * rate(chip.core_transcendentals_per_second()));
  t.overhead = chip.grid_step_seconds;
  const double overlapped = std::max({t.dma, t.mxu, t.vector});
  t.seconds = t.steps * (overlapped + t.overhead) + t.dma;
  const std::pair<double, KernelBound> by[] = {{t.mxu, KernelBound::kMxu},
                                               {t.vector, KernelBound::kVector},
                                               {t.dma, KernelBound::kHbmDma},
                                               {t.overhead, KernelBound::kStepOverhead}};
  t.bound = std::max_element(std::begin(by), std::end(by), [](const auto& a, const auto& b) {
              return a.first < b.first;
            })->second;
  return t;
}

// The integer after `key` in the kernel's block-size JSON as either text form prints it:
// HLO's \"block_q\": 512 or StableHLO's \\\22block_q\\\22: 512. The key must stand alone, so
// block_q does not match block_q_dkv. 0 when absent or null.
inline int64_t kernel_block_size(std::string_view text, std::string_view key) {
  const auto ident = [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
  };
  for (size_t at = text.find(key); at != std::string_view::npos; at = text.find(key, at + 1)) {
    size_t i = at + key.size();
    if ((at > 0 && ident(text[at - 1]) && text[at - 1] != '2') || (i < text.size() && ident(text[i])))
      continue;  // part of a longer name (a "\22" quote ends in '2')
    while (i < text.size()) {
      if (text.substr(i, 3) == "\\22") i += 3;
      else if (text[i] == '\\' || text[i] == '"' || text[i] == ':' || text[i] == ' ') ++i;
      else break;
    }
    int64_t v = 0;
    if (std::from_chars(text.data() + i, text.data() + text.size(), v).ec == std::errc()) return v;
    return 0;
  }
  return 0;
}

}  // namespace aoizora::compute
