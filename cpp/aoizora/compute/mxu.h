// The compute time of an op on a TensorCore: a roofline whose FLOP side knows the MXU.
// Q1 (Stage 1 DAG nodes), Q2 and the simulator (compiled-HLO ops) all price compute here.
//
// The MXU is a weight-stationary systolic array of tile x tile cells (128 on v4/v5e/v5p, 256
// on v6e/TPU7x; the profile's mxu_size). A matmul C[M,N] = A[M,K] B[K,N] keeps one operand in
// the array and streams the other through it, so the contraction K and the stationary
// operand's free dimension are padded to the tile, and the streamed one is not (it pads to 8
// sublanes: nothing at these sizes). The compiler keeps whichever operand pads less:
//   mxu flops = 2 count ceil_tile(K) min(M ceil_tile(N), ceil_tile(M) N)
// Attention with head_dim 128 on a 256-wide MXU: Q K^T contracts over 128 (half the array
// idle), P V streams V^T through the stationary P (no padding). Other flops (elementwise,
// reductions) run at peak, and the whole op at least takes its HBM bytes' time:
//   seconds = max((mxu flops / mxu_efficiency + other flops) / peak, bytes / hbm bandwidth)
// mxu_efficiency is the fitted fraction of the padded peak a matmul reaches (1 = roofline).
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "aoizora/topo/chip_spec.h"

namespace aoizora::compute {

// `count` independent matmuls [m,k] x [k,n] (a batch, or heads), per device.
struct Matmul {
  double m = 0, n = 0, k = 0, count = 1;
  bool operator==(const Matmul&) const = default;
};

inline double matmul_flops(const Matmul& mm) { return 2 * mm.count * mm.m * mm.n * mm.k; }

inline double mxu_flops(const Matmul& mm, int tile) {
  if (tile <= 1) return matmul_flops(mm);
  const auto pad = [tile](double d) { return std::ceil(d / tile) * tile; };
  return 2 * mm.count * pad(mm.k) * std::min(mm.m * pad(mm.n), pad(mm.m) * mm.n);
}

// The seconds of one execution of an op of `flops` (all of them, matmuls included) and HBM
// `bytes`, whose matmuls are `matmuls`, on one device of `chip`.
inline double compute_seconds(double flops, double bytes, const std::vector<Matmul>& matmuls,
                              const topo::ChipSpec& chip) {
  double dense = 0, padded = 0;
  for (const Matmul& mm : matmuls) {
    dense += matmul_flops(mm);
    padded += mxu_flops(mm, chip.mxu_size);
  }
  const double efficiency = chip.mxu_efficiency > 0 ? chip.mxu_efficiency : 1;
  const double work = padded / efficiency + std::max(flops - dense, 0.0);
  const double t_flops = chip.peak_flops > 0 ? work / chip.core_peak_flops() : 0;
  const double t_bytes = chip.hbm_bandwidth > 0 ? bytes / chip.core_hbm_bandwidth() : 0;
  return std::max(t_flops, t_bytes);
}

}  // namespace aoizora::compute
