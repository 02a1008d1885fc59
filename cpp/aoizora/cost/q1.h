// Q1: the score of Stage 1, before anything is compiled. Without a topology it does not know
// which chip a logical device sits on, so it gives every mesh axis the best bandwidth the
// slice could give it:
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
// With a topology (group_costs), the per-collective time instead comes from the same
// algorithms and routes as Q2 and the simulator, on the best group shape the slice offers
// (best_group.h); the formulas above are the fallback for a bare slice shape. With a
// placement (placed_groups), on the groups that placement gives the collective: Stage 1
// takes the least Q1 over the placements Stage 2 weighs (q1_placement.h).
// Combination, following the TPU compiler's schedule: communication that can overlap hides
// under the compute XLA runs it alongside, barrier communication adds:
//   Q1 = compute + sum over overlappable c of max(0, t(c) - window(c)) + barrier comm,
// where a prefetchable weight gather's window is one matmul (the last before its consumer
// that hides no other gather: XLA's async collective fusion), and a ring permute's window is
// the compute between its operand and its first consumer (the step's kernel; for a rolled
// loop, the rest of its loop body), each compute's time hiding permutes once.
// Compute is a roofline per op: max(flops / peak, bytes / HBM bandwidth).
// On a slice of two cores per chip, one mesh axis holds a chip's cores: collectives over it
// span them (the die-to-die link), every other one stays on one core per chip (ICI only).
// Q1 does not know which axis a placement puts there, so q1_best_core_axis takes the least
// Q1 over that choice (docs/stage1.md).
#pragma once

#include <array>
#include <map>
#include <string>

#include "aoizora/cost/best_group.h"
#include "aoizora/cost/placed_groups.h"
#include "aoizora/shlo/dag.h"
#include "aoizora/topo/catalog.h"

namespace aoizora::cost {

struct Q1Params {
  // Chip figures: peak_flops, hbm_bandwidth and the MXU (compute/mxu.h) for compute,
  // link_bandwidth per directed link,
  // hop_latency as alpha, the seconds per ring step. Default: the shipped v5e profile.
  topo::ChipSpec chip = topo::default_chip_spec();
  std::array<int, 3> slice_dims{1, 1, 1};
  std::array<bool, 3> slice_wrap{false, false, false};
  // Optional per-axis bandwidth override (bytes/s), by mesh axis name.
  std::map<std::string, double> axis_bandwidth;
  // When set (not owned), collectives are priced on the real topology (best_group.h).
  BestGroupCosts* group_costs = nullptr;
  // When set (not owned), q1() prices each collective on the groups one placement gives it
  // (placed_groups.h, placed for this DAG); one whose groups are not known, on group_costs.
  PlacedGroupCosts* placed_groups = nullptr;
  // With group_costs on a slice of two cores per chip: the mesh axis whose groups span a
  // chip's cores; a collective over other axes only stays on one core of each chip. Empty:
  // every collective may take any box (the best for each, as if each had the cores).
  std::string core_axis;
};

struct Q1Breakdown {
  double q1 = 0;
  double compute = 0;
  double comm = 0;              // all communication, serialised
  double overlappable_comm = 0;
  double exposed_comm = 0;      // the part of overlappable_comm its windows do not hide
  double barrier_comm = 0;
  std::map<std::string, double> comm_by_axis;  // seconds, a multi-axis collective split evenly
  std::string core_axis;                       // Q1Params::core_axis it was priced with
  // Priced on a placement: its name; and the collectives whose groups were not known, priced
  // on their best box instead.
  std::string placement;
  int unplaced_collectives = 0;
};

// Best bandwidth (bytes/s per device) a slice could give a mesh axis of length k.
double best_axis_bandwidth(int64_t k, const Q1Params& p);
// Seconds one execution of a communication node takes.
double collective_seconds(const shlo::DagNode& n, const shlo::MeshTable& meshes,
                          const std::string& mesh, const Q1Params& p);
// Seconds one execution of a compute node takes.
double compute_seconds(const shlo::DagNode& n, const Q1Params& p);

Q1Breakdown q1(const shlo::PredictionDag& dag, const Q1Params& p);

// q1 with the least Q1 over which mesh axis holds a chip's cores (each axis of the DAG's
// mesh whose size is a multiple of the cores per chip; ties: the first, major to minor).
// Equal to q1(dag, p) when there is no topology or one core per chip.
Q1Breakdown q1_best_core_axis(const shlo::PredictionDag& dag, Q1Params p);

}  // namespace aoizora::cost
