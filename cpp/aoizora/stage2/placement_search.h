// Placement search with Q2 as the objective: a seeded local search over arbitrary
// permutations, and the ranking of every candidate family (JAX default, axis orders, snakes,
// tile cycles, search results) for one compiled program.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "aoizora/base/status.h"
#include "aoizora/cost/q2.h"
#include "aoizora/hlo/collective_graph.h"
#include "aoizora/place/placement.h"
#include "aoizora/topo/topology.h"

namespace aoizora::stage2 {

struct SearchOptions {
  uint64_t seed = 0;
  int iterations = 2000;   // swap proposals
  double start_temperature = 0.02;  // fraction of the start's Q2 accepted uphill at first
};

// Swaps two partitions' chips at random (simulated annealing cooling to greedy); returns the
// best placement seen, named "search(<start name>)". Deterministic for a seed.
place::Placement local_search(cost::Q2Evaluator& q2, const place::Placement& start,
                              const SearchOptions& options, double* best_seconds = nullptr);

struct RankOptions {
  bool axis_orders = true;
  int max_axis_orders = 2000;
  bool ring_orders = true;
  int search_starts = 3;        // local searches from the best few candidates (0: none)
  SearchOptions search;
  bool remove_symmetric = true;  // keep one placement per class of route_symmetries()
};

struct RankedPlacement {
  place::Placement placement;
  double q2 = 0;  // seconds
};

struct Ranking {
  std::vector<RankedPlacement> ranked;            // best first, symmetric duplicates removed
  std::optional<RankedPlacement> jax_default;     // absent when JAX itself would refuse
  std::string default_error;                      // why, then
  int evaluated = 0;                              // Q2 evaluations spent
};

// Ranks placements of `graph` on `t` for the logical mesh (product = chips).
Result<Ranking> rank_placements(const hlo::CollectiveGraph& graph, const topo::Topology& t,
                                const place::MeshShape& mesh, const RankOptions& options = {});

}  // namespace aoizora::stage2
