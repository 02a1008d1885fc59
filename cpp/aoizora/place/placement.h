// A placement maps each logical device (partition id, i.e. index into mesh.devices.flat)
// to a physical device: a chip, and on TPU7x one of its two cores (topo/topology.h). In JAX
// the device order of the Mesh *is* the placement.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "aoizora/base/status.h"
#include "aoizora/topo/topology.h"

namespace aoizora::place {

struct Placement {
  std::string name;               // "default", "axis-order y,x", "snake", "search#12", ...
  std::vector<int> device_of;     // device_of[partition id] = device id
};

// A logical mesh shape, major axis first, as numpy orders mesh.devices: partition p sits at
// the row-major (last axis fastest) unravelling of p.
using MeshShape = std::vector<int>;

// Checks that device_of holds distinct device ids of the topology.
Status validate(const Placement& p, const topo::Topology& t);

// The placement whose partition p is the device at coords[p] ((x, y, z, core): a JAX Mesh's
// [(*d.coords, d.core_on_chip) for d in mesh.devices.flat]); an error names an unknown or
// repeated device.
Result<Placement> placement_from_coords(const topo::Topology& t,
                                        const std::vector<topo::DeviceCoords>& coords,
                                        std::string name = "mesh");
// coords[p] of each partition: what to look up compile-only devices by to build the Mesh.
std::vector<topo::DeviceCoords> coords_of(const topo::Topology& t, const Placement& p);

// Row-major: partition p on device p (core fastest, then x, y, z). The order of compile-only
// devices sorted by reversed coords, then core.
Placement row_major(const topo::Topology& t);

}  // namespace aoizora::place
