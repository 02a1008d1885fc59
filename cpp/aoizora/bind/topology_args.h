// What the bindings that take a topology share: a topology given as a bound Topology or a
// catalog name / JSON path, device ids and placements checked before they reach C++ (a bad
// id is a CoreError, never undefined behaviour), and devices as Python names them.
#pragma once

#include <nanobind/nanobind.h>

#include <memory>
#include <vector>

#include "aoizora/hlo/collective_graph.h"
#include "aoizora/place/placement.h"
#include "aoizora/topo/topology.h"

namespace aoizora::bind {

// A topology argument: the bound object itself, or one made from a name or path.
struct TopoArg {
  std::unique_ptr<topo::Topology> owned;
  const topo::Topology* ptr = nullptr;
  const topo::Topology& get() const { return *ptr; }
};
TopoArg topo_arg(nanobind::handle h);

// A validated placement of device_of on t (CoreError otherwise).
place::Placement placement_of(const std::vector<int>& device_of, const topo::Topology& t);
// CoreError unless every id is a device of t.
void check_devices(const std::vector<int>& device_of, const topo::Topology& t);
// CoreError unless device_of covers every partition of g.
void check_partitions(const std::vector<int>& device_of, const hlo::CollectiveGraph& g);
// A device as Python sees it: (x, y, z) on one-core chips, (x, y, z, core) on two-core chips,
// so that it matches (*d.coords, d.core_on_chip) of a JAX device where a chip has two.
nanobind::tuple device_key(const topo::Topology& t, int device);
// (x, y, z) or (x, y, z, core) from Python; CoreError for any other length.
topo::DeviceCoords device_coords_arg(const std::vector<int>& v);

}  // namespace aoizora::bind
