// Physical axis orders: the paper's search space. Each physical axis is split into factors
// (major first: x = 4 may stay whole or become x2@2 * x2@1, i.e. sizes with their strides),
// and every logical mesh axis takes an ordered list of those sub-axes whose sizes multiply to
// its length. Partition p's logical index (row-major over the mesh) is read digit by digit
// into the sub-axes, which add up to physical coordinates. jax.experimental.mesh_utils builds
// its meshes the same way, so its default order is one of these.
#pragma once

#include <string>
#include <vector>

#include "aoizora/base/status.h"
#include "aoizora/place/placement.h"
#include "aoizora/topo/topology.h"

namespace aoizora::place {

struct SubAxis {
  int dim = 0;     // device axis 0=x, 1=y, 2=z, 3=core on the chip (topo::kCoreAxis)
  int size = 1;
  int stride = 1;  // coordinate step of one unit of this sub-axis
};

// For each logical axis, its sub-axes major first.
struct AxisOrder {
  std::vector<std::vector<SubAxis>> axes;
};

// "x|y", "y2@2|x,y2@1", "x,y|c": logical axes separated by '|', a whole physical axis by its
// letter (c: the two cores of a chip).
std::string axis_order_name(const AxisOrder& order, const topo::Topology& t);

// The placement of an axis order (mesh shape = the product of each axis's sub-axes).
Placement axis_order_placement(const AxisOrder& order, const topo::Topology& t);

struct AxisOrderOptions {
  int max_candidates = 5000;      // stop after this many distinct placements
  bool remove_symmetric = true;   // keep one placement per class of route_symmetries()
};

// Every distinct axis order of the mesh on the topology's grid (mesh size = devices), fewest
// splits first, deduplicated by resulting placement and, optionally, by route_symmetries().
Result<std::vector<Placement>> enumerate_axis_orders(const topo::Topology& t,
                                                     const MeshShape& mesh,
                                                     const AxisOrderOptions& options = {});

}  // namespace aoizora::place
