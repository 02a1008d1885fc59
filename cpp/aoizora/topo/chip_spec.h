// The per-chip figures of a TPU generation: the hardware model that Q1, Q2 and the simulator
// all read. The catalog fills it from the shipped hardware profile of the generation
// (profiles/<generation>.json, read by topo/profile.h); `--hardware FILE` replaces it. Plain
// data: compare with ==, copy freely. Units are SI (seconds, bytes, bytes/s, FLOP/s).
#pragma once

#include <optional>
#include <string>

namespace aoizora::topo {

// Fixed seconds per execution of a collective, by kind (launch and synchronisation), paid
// before its first byte moves. The simulator charges it (sim/simulator.h); ragged all-to-all
// counts as all-to-all.
struct CollectiveLatency {
  double all_gather = 1e-6;
  double all_reduce = 1e-6;
  double reduce_scatter = 1e-6;
  double all_to_all = 1e-6;
  double collective_permute = 1e-6;
  double collective_broadcast = 1e-6;
  bool operator==(const CollectiveLatency&) const = default;
};

// The algorithm the ring-like collectives use on each shape of group (cost/algorithm.h).
// Data, so a profile can say what XLA does. `grid` is "bidirectional-ring" (a ring through
// the sub-grid's chips over neighbour links, both ways) or "dimension-order" (axis by axis);
// the other shapes have one implemented value each, and a profile naming another is an error.
struct GroupAlgorithms {
  std::string line = "bidirectional-line";       // a contiguous line without wraparound
  std::string wrapped_axis = "bidirectional-ring";  // a whole wrapped axis
  std::string grid = "bidirectional-ring";       // a full sub-grid of chips
  std::string other = "unidirectional-ring";     // anything else: a ring in group order
  bool grid_is_ring() const { return grid == "bidirectional-ring"; }
  bool operator==(const GroupAlgorithms&) const = default;
};
inline constexpr const char* kGridAlgorithms[] = {"bidirectional-ring", "dimension-order"};

// A link between the cores of one chip (TPU7x's die-to-die link); absent elsewhere.
struct IntraChipLink {
  double bandwidth = 0;  // bytes/s, one way
  double latency = 0;    // seconds
  bool operator==(const IntraChipLink&) const = default;
};

struct ChipSpec {
  std::string generation;        // "v5e", "v4", ...
  std::string device_kind;       // what JAX reports, e.g. "TPU v5 lite"
  double peak_flops = 0;         // bf16 FLOP/s
  double hbm_bytes = 0;
  double hbm_bandwidth = 0;      // bytes/s
  double link_bandwidth = 0;     // usable one-way bytes/s per directed link
  double hop_latency = 1e-6;     // seconds per hop
  int mxu_size = 128;            // MXU tile edge: matmul dims pad to it (compute/mxu.h)
  double mxu_efficiency = 1.0;   // fraction of the padded peak a matmul reaches (compute/mxu.h)
  // The Pallas kernel's structure (compute/splash_kernel.h). Per chip like peak_flops (its
  // TensorCores together), shared out by the core_* accessors; 0 = that work costs nothing.
  double vector_ops_per_second = 0;       // f32 VPU element-ops/s
  double transcendentals_per_second = 0;  // EUP results/s (exp, reciprocal, ...)
  double grid_step_seconds = 0;           // fixed cost of one Pallas grid step, one core
  CollectiveLatency collective_latency;
  GroupAlgorithms algorithms;
  // TensorCores per chip, each a JAX device: 1, or 2 on TPU7x. The per-chip figures above
  // (peak_flops, hbm_bytes, hbm_bandwidth) are shared out evenly; the core_* accessors give
  // one device's share, which is what a partition of the program runs on.
  int cores_per_chip = 1;
  std::optional<IntraChipLink> intra_chip_link;  // between the cores: only when cores_per_chip 2
  double core_peak_flops() const { return peak_flops / cores_per_chip; }
  double core_hbm_bytes() const { return hbm_bytes / cores_per_chip; }
  double core_hbm_bandwidth() const { return hbm_bandwidth / cores_per_chip; }
  double core_vector_ops_per_second() const { return vector_ops_per_second / cores_per_chip; }
  double core_transcendentals_per_second() const {
    return transcendentals_per_second / cores_per_chip;
  }
  bool operator==(const ChipSpec&) const = default;
};

}  // namespace aoizora::topo
