// A placement maps each logical device (partition id, i.e. index into mesh.devices.flat)
// to a physical chip. In JAX the device order of the Mesh *is* the placement.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "aoizora/base/status.h"
#include "aoizora/topo/topology.h"

namespace aoizora::place {

struct Placement {
  std::string name;               // "default", "axis-order y,x", "snake", "search#12", ...
  std::vector<int> chip_of;       // chip_of[partition id] = chip id
};

// A logical mesh shape, major axis first, as numpy orders mesh.devices: partition p sits at
// the row-major (last axis fastest) unravelling of p.
using MeshShape = std::vector<int>;

// Checks that chip_of is a permutation of the topology's chips of the mesh's size.
Result<bool> validate(const Placement& p, const topo::Topology& t);

// The placement whose partition p is the device at coords[p] (a JAX Mesh's
// [d.coords for d in mesh.devices.flat]); an error names an unknown or repeated coordinate.
Result<Placement> placement_from_coords(const topo::Topology& t,
                                        const std::vector<std::array<int, 3>>& coords,
                                        std::string name = "mesh");
// coords[p] of each partition: what to look up compile-only devices by to build the Mesh.
std::vector<std::array<int, 3>> coords_of(const topo::Topology& t, const Placement& p);

// Row-major: partition p on chip p (x fastest). The order of compile-only devices sorted by
// reversed coords.
Placement row_major(const topo::Topology& t);

}  // namespace aoizora::place
