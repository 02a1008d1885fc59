// Stage 1 of the planner on one candidate: StableHLO text in, a placement-oblivious score
// (Q1), a per-device memory check and the predicted communication out. Cheap enough to run
// on every candidate before anything is compiled.
#pragma once

#include <array>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "aoizora/base/status.h"
#include "aoizora/shlo/dag.h"
#include "aoizora/topo/catalog.h"

namespace aoizora::stage1 {

struct Stage1Options {
  // Chip figures (topo::ChipSpec; hop_latency is Q1's alpha per ring step); default: the
  // shipped v5e profile. When `topology` names a catalog slice ("v5e:4x4") or a topology
  // file, its chip spec, dims and wraparound replace these; `hardware`, a hardware profile
  // file (topo/profile.h), then replaces the chip spec (topo::make_topology).
  std::string topology;
  std::string hardware;
  topo::ChipSpec chip = topo::default_chip_spec();
  std::array<int, 3> slice_dims{1, 1, 1};
  std::array<bool, 3> slice_wrap{false, false, false};
  // Fraction of HBM a candidate may use (XLA reserves some for itself).
  double hbm_usable_fraction = 0.95;
  // With a topology: price Q1 on the best of the placement pool (cost/q1_placement.h), or,
  // when false, every collective on its own best box (the placement-oblivious rule, kept to
  // measure what the placements change: bench/q1_vs_simulated.py).
  bool q1_on_placements = true;
};

// One collective the program is predicted to run, as a per-collective cost model (the
// Alpa-style baseline, python/aoizora/baselines.py) needs it. Identical collectives (same
// kind, origin, axes, group size and bytes) are one record with their executions summed,
// in order of first occurrence in the DAG.
struct PredictedCollective {
  std::string kind;               // HLO spelling: "all-gather", "all-reduce", ...
  std::string origin;             // explicit / reshard / contraction / reduction / custom-call
  std::vector<std::string> axes;  // mesh axes the group spans; a sub-axis as "x:(1)2"
  int64_t group_size = 1;         // devices in one group: the real size (a sub-axis counts
                                  // its own size, several axes their product); 2 for a permute
  // V, bytes per device: the whole buffer the collective works on (the alpha-beta
  // convention of XLA's auto-sharding cost model). All-gather: its gathered result;
  // reduce-scatter: its unscattered operand; all-reduce, all-to-all, collective-permute,
  // collective-broadcast: the operand. One execution's bytes.
  double bytes = 0;
  double executions = 0;          // per program run (loop trip counts multiplied)
};

struct Stage1Result {
  double q1_seconds = 0;
  double compute_seconds = 0;
  double comm_seconds = 0;
  double overlappable_comm_seconds = 0;
  double barrier_comm_seconds = 0;
  double flops = 0;                   // per device, per program run
  double param_bytes = 0;             // per device
  double peak_activation_bytes = 0;   // per device
  bool fits = true;
  std::string reject_reason;          // why it does not fit, with the numbers
  int64_t num_devices = 1;
  // Predicted communication, per device, summed over executions (operand bytes x repeat,
  // the hlo::CollectiveGraph::collective_bytes convention), by HLO kind name.
  std::map<std::string, double> comm_bytes_by_kind;
  std::map<std::string, double> comm_count_by_kind;   // executions
  std::map<std::string, double> comm_bytes_by_origin; // explicit / reshard / contraction ...
  std::map<std::string, double> comm_seconds_by_axis;
  // The placement Q1 was priced on (cost/q1_placement.h), e.g. "axis-order x|y"; empty when
  // every collective was priced on its own best box (no topology, or a mesh that cannot be
  // placed on it).
  std::string q1_placement;
  // Operand bytes x repeat, split evenly over the axes a collective spans.
  std::map<std::string, double> comm_bytes_by_axis;
  std::vector<PredictedCollective> collectives;
  std::vector<std::string> warnings;
  shlo::PredictionDag dag;
};

// The DAG's communication nodes as PredictedCollective records (see there for the bytes
// convention); deterministic: records in order of first occurrence.
std::vector<PredictedCollective> predicted_collectives(const shlo::PredictionDag& dag);

Result<Stage1Result> analyze_stablehlo(std::string_view text, const Stage1Options& options);

}  // namespace aoizora::stage1
