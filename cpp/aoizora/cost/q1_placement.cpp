#include "aoizora/cost/q1_placement.h"

#include <set>
#include <utility>
#include <vector>

#include "aoizora/place/placement_pool.h"

namespace aoizora::cost {

namespace {

// Axis orders Stage 1 prices on, fewest splits first (enumerate_axis_orders' order): every one
// on slices up to 64 devices; on a pod slice the first ones, so that Stage 1 stays a fraction
// of a second per candidate (Stage 2 ranks up to 2000).
constexpr int kStage1AxisOrders = 200;

std::pair<double, double> key_of(const GroupCost& g) { return {g.seconds_per_byte, g.latency}; }

}  // namespace

Q1Breakdown q1_best_placement(const shlo::PredictionDag& dag, Q1Params p, const topo::Topology& t) {
  const shlo::Mesh* mesh = dag.meshes.find(dag.mesh);
  if (!mesh || !placeable(*mesh, t) || !t.is_grid()) return q1_best_core_axis(dag, p);
  place::MeshShape shape;
  for (const shlo::MeshAxis& a : mesh->axes) shape.push_back(static_cast<int>(a.size));
  place::PoolOptions options;
  options.max_axis_orders = kStage1AxisOrders;
  Result<place::PlacementPool> pool = place::placement_pool(t, shape, options);
  if (!pool.ok() || pool->placements.empty()) return q1_best_core_axis(dag, p);
  p.core_axis.clear();
  PlacedGroupCosts placed(t, dag, *mesh);
  p.placed_groups = &placed;
  Q1Breakdown best;
  bool any = false;
  // Q1 depends on the placement only through the collectives' costs: one pass per distinct set.
  std::set<std::vector<std::pair<double, double>>> seen;
  for (const place::Placement& placement : pool->placements) {
    placed.place(placement.device_of);
    std::vector<std::pair<double, double>> key;
    for (const GroupCost& g : placed.costs()) key.push_back(key_of(g));
    if (!seen.insert(std::move(key)).second) continue;
    Q1Breakdown b = q1(dag, p);
    if (!any || b.q1 < best.q1) {
      best = std::move(b);
      best.placement = placement.name;
    }
    any = true;
  }
  return best;
}

}  // namespace aoizora::cost
