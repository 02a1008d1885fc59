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

namespace aoizora::shlo {

struct Stage1Options {
  // Chip figures (REFERENCE.md §2); defaults are v5e. When `topology` names a catalog
  // slice ("v5e:4x4") its chip spec, dims and wraparound replace these.
  std::string topology;
  double peak_flops = 197e12;
  double hbm_bandwidth = 819e9;
  double hbm_bytes = 16e9;
  double link_bandwidth = 45e9;      // usable one-way bytes/s per directed link
  double alpha = 1e-6;               // per ring step (about one ICI hop)
  std::array<int, 3> slice_dims{1, 1, 1};
  std::array<bool, 3> slice_wrap{false, false, false};
  // Fraction of HBM a candidate may use (XLA reserves some for itself).
  double hbm_usable_fraction = 0.95;
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
  std::map<std::string, double> comm_bytes_by_axis;
  std::vector<std::string> warnings;
  PredictionDag dag;
};

Result<Stage1Result> analyze_stablehlo(std::string_view text, const Stage1Options& options);

// Indices of the k best candidates by Q1 (ascending, stable), skipping those whose q1 is
// negative or not finite (rejected). k <= 0 keeps them all.
std::vector<int> select_top_k(const std::vector<double>& q1, int k);

// The smallest K whose Top-K contained the winner in every recorded setting: `winner_ranks`
// holds, per setting, the 0-based Q1 rank of the logical sharding that won after Stage 2.
// At least `min_k`; `slack` extra ranks added as a safety margin.
int k_from_recall(const std::vector<int>& winner_ranks, int min_k = 1, int slack = 1);

}  // namespace aoizora::shlo
