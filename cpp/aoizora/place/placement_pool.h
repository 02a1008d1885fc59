// The structured placements of a mesh on a slice, the ones both stages weigh: JAX's default
// device order, row-major, the paper's axis orders, and the ring-friendly orders (snakes and
// tile cycles, ring_orders.h), one per class of route symmetries. Stage 2 ranks them by Q2 and
// searches from the best; Stage 1 prices each candidate's collectives on each of them and
// keeps the least Q1 (cost/q1_placement.h), so that no two mesh axes are both given a
// box of links that no one placement gives them together.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "aoizora/base/status.h"
#include "aoizora/place/placement.h"
#include "aoizora/topo/topology.h"

namespace aoizora::place {

struct PoolOptions {
  bool axis_orders = true;
  int max_axis_orders = 2000;
  bool ring_orders = true;
  bool remove_symmetric = true;  // keep one placement per class of route_symmetries()
};

struct PlacementPool {
  std::vector<Placement> placements;     // distinct; JAX's default first when it exists
  std::optional<Placement> jax_default;  // absent when JAX itself would refuse the mesh
  std::string default_error;             // why, then
};

// An error when the mesh's size is not the slice's.
Result<PlacementPool> placement_pool(const topo::Topology& t, const MeshShape& mesh,
                                     const PoolOptions& options = {});

// Keeps one placement per class of route_symmetries() (or each distinct one).
class DistinctPlacements {
 public:
  DistinctPlacements(const topo::Topology& t, bool remove_symmetric);
  // True the first time a placement of this class is offered.
  bool is_new(const Placement& p);

 private:
  std::vector<std::vector<int>> symmetries_;
  int cores_per_chip_;
  std::set<std::vector<int>> seen_;  // canonical forms
};

}  // namespace aoizora::place
