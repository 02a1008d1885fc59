#include "aoizora/place/placement_pool.h"

#include "aoizora/place/axis_order.h"
#include "aoizora/place/jax_default.h"
#include "aoizora/place/ring_orders.h"
#include "aoizora/place/symmetry.h"

namespace aoizora::place {

DistinctPlacements::DistinctPlacements(const topo::Topology& t, bool remove_symmetric)
    : symmetries_(remove_symmetric ? route_symmetries(t) : std::vector<std::vector<int>>{}),
      cores_per_chip_(t.cores_per_chip()) {}

bool DistinctPlacements::is_new(const Placement& p) {
  return seen_.insert(symmetries_.empty() ? p.device_of
                                          : canonical(p.device_of, symmetries_, cores_per_chip_))
      .second;
}

Result<PlacementPool> placement_pool(const topo::Topology& t, const MeshShape& mesh,
                                     const PoolOptions& options) {
  int64_t size = 1;
  for (int m : mesh) size *= m;
  if (size != t.num_devices())
    return Error::invalid("mesh of " + std::to_string(size) + " devices on " + t.name + " with " +
                          std::to_string(t.num_devices()) + " devices: sizes must match");
  PlacementPool pool;
  DistinctPlacements distinct(t, options.remove_symmetric);
  auto add = [&](Placement p) {
    if (distinct.is_new(p)) pool.placements.push_back(std::move(p));
  };
  Result<Placement> d = default_placement(t, mesh);
  if (d.ok()) {
    pool.jax_default = *d;
    add(*d);
  } else {
    pool.default_error = d.error().message;
  }
  add(row_major(t));
  if (options.axis_orders && t.is_grid()) {
    AxisOrderOptions ao;
    ao.max_candidates = options.max_axis_orders;
    ao.remove_symmetric = options.remove_symmetric;
    ASSIGN_OR_RETURN(std::vector<Placement> orders, enumerate_axis_orders(t, mesh, ao));
    for (Placement& p : orders) add(std::move(p));
  }
  if (options.ring_orders && t.is_grid()) {
    for (Placement& p : snake_orders(t)) add(std::move(p));
    for (Placement& p : tile_cycle_orders(t, mesh)) add(std::move(p));
  }
  return pool;
}

}  // namespace aoizora::place
