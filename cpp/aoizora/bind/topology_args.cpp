#include "aoizora/bind/topology_args.h"

#include <nanobind/stl/string.h>

#include <string>

#include "aoizora/bind/bind.h"
#include "aoizora/topo/catalog.h"

namespace nb = nanobind;

namespace aoizora::bind {

TopoArg topo_arg(nb::handle h) {
  TopoArg a;
  if (nb::isinstance<topo::Topology>(h)) {
    a.ptr = nb::inst_ptr<topo::Topology>(h);
  } else if (nb::isinstance<nb::str>(h)) {
    a.owned = std::make_unique<topo::Topology>(unwrap(topo::make_topology(nb::cast<std::string>(h))));
    a.ptr = a.owned.get();
  } else {
    throw CoreError("expected a Topology or a topology name / JSON path");
  }
  return a;
}

place::Placement placement_of(const std::vector<int>& device_of, const topo::Topology& t) {
  place::Placement p{"given", device_of};
  unwrap(place::validate(p, t));
  return p;
}

void check_devices(const std::vector<int>& device_of, const topo::Topology& t) {
  for (int c : device_of)
    if (c < 0 || c >= t.num_devices())
      throw CoreError("device id " + std::to_string(c) + " outside 0.." + std::to_string(t.num_devices() - 1));
}

nb::tuple device_key(const topo::Topology& t, int device) {
  const topo::DeviceCoords c = t.device_coords(device);
  if (t.cores_per_chip() == 1) return nb::make_tuple(c[0], c[1], c[2]);
  return nb::make_tuple(c[0], c[1], c[2], c[3]);
}

topo::DeviceCoords device_coords_arg(const std::vector<int>& v) {
  if (v.size() != 3 && v.size() != 4)
    throw CoreError("device coordinates are (x, y, z) or (x, y, z, core), got " +
                    std::to_string(v.size()) + " numbers");
  return {v[0], v[1], v[2], v.size() == 4 ? v[3] : 0};
}

void check_partitions(const std::vector<int>& device_of, const hlo::CollectiveGraph& g) {
  if (static_cast<int>(device_of.size()) < g.num_partitions)
    throw CoreError("device_of has " + std::to_string(device_of.size()) + " entries but the program has " +
                    std::to_string(g.num_partitions) + " partitions");
}

}  // namespace aoizora::bind
