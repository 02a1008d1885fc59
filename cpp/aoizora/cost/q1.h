// Q1: the placement-oblivious score of Stage 1. It does not know which chip a logical
// device sits on, so it gives every mesh axis the best bandwidth the slice could give it:
//   - an axis as long as a physical axis with wraparound, or one that fits a 2D sub-grid
//     with an even number of chips (which has a Hamiltonian cycle), runs a bidirectional
//     ring: 2 x link bandwidth per device;
//   - any other axis (length 2, odd, or only a line fits) runs a ring whose return path
//     crosses the reverse links of a line: 1 x link bandwidth;
//   - a collective over several axes uses all of their links (bandwidths add).
// Per collective (per device, ring algorithms, k = group size, B = bandwidth):
//   all-gather result*(k-1)/k/B, reduce-scatter operand*(k-1)/k/B, all-reduce twice that,
//   all-to-all operand*k/(4B) (bisection-bound on a ring), permute operand/link,
// plus alpha per ring step ((k-1) steps, 2(k-1) for all-reduce, 1 for a permute).
// Combination (a max-structure): communication that can overlap (prefetchable weight
// gathers, ring permutes) hides under compute; barrier communication adds:
//   Q1 = max(compute, overlappable comm) + barrier comm.
// Compute is a roofline per op: max(flops / peak, bytes / HBM bandwidth).
#pragma once

#include <array>
#include <map>
#include <string>

#include "aoizora/shlo/dag.h"

namespace aoizora::cost {

struct Q1Params {
  double peak_flops = 197e12;       // bf16 FLOP/s per chip
  double hbm_bandwidth = 819e9;     // bytes/s
  double link_bandwidth = 45e9;     // usable one-way bytes/s per directed link
  double alpha = 1e-6;              // seconds per ring step
  std::array<int, 3> slice_dims{1, 1, 1};
  std::array<bool, 3> slice_wrap{false, false, false};
  // Optional per-axis bandwidth override (bytes/s), by mesh axis name.
  std::map<std::string, double> axis_bandwidth;
};

struct Q1Breakdown {
  double q1 = 0;
  double compute = 0;
  double comm = 0;              // all communication, serialised
  double overlappable_comm = 0;
  double barrier_comm = 0;
  std::map<std::string, double> comm_by_axis;  // seconds, a multi-axis collective split evenly
};

// Best bandwidth (bytes/s per device) a slice could give a mesh axis of length k.
double best_axis_bandwidth(int64_t k, const Q1Params& p);
// Seconds one execution of a communication node takes.
double collective_seconds(const shlo::DagNode& n, const shlo::MeshTable& meshes,
                          const std::string& mesh, const Q1Params& p);
// Seconds one execution of a compute node takes.
double compute_seconds(const shlo::DagNode& n, const Q1Params& p);

Q1Breakdown q1(const shlo::PredictionDag& dag, const Q1Params& p);

}  // namespace aoizora::cost
