// Python view of place/: placements, physical axis orders, snakes and tile cycles, and
// JAX's default device order.
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "aoizora/bind/bind.h"
#include "aoizora/bind/topology_args.h"
#include "aoizora/place/axis_order.h"
#include "aoizora/place/jax_default.h"
#include "aoizora/place/ring_orders.h"

namespace nb = nanobind;

namespace aoizora::bind {

void bind_place(nb::module_& m) {
  nb::class_<place::Placement>(m, "Placement", "device_of[partition id] = device id, with a name.")
      .def(nb::init<>())
      .def("__init__", [](place::Placement* p, std::string name, std::vector<int> device_of) {
        new (p) place::Placement{std::move(name), std::move(device_of)};
      }, nb::arg("name"), nb::arg("device_of"))
      .def_rw("name", &place::Placement::name)
      .def_rw("device_of", &place::Placement::device_of)
      .def("__repr__", [](const place::Placement& p) {
        return "<Placement '" + p.name + "' of " + std::to_string(p.device_of.size()) + ">";
      });

  m.def("enumerate_axis_orders", [](nb::handle t, std::vector<int> mesh, int max_candidates,
                                    bool remove_symmetric) {
    TopoArg a = topo_arg(t);
    place::AxisOrderOptions o;
    o.max_candidates = max_candidates;
    o.remove_symmetric = remove_symmetric;
    return unwrap(place::enumerate_axis_orders(a.get(), mesh, o));
  }, nb::arg("topology"), nb::arg("mesh_shape"), nb::arg("max_candidates") = 5000,
        nb::arg("remove_symmetric") = true,
        "Physical axis orders of the mesh (the paper's search space), symmetric duplicates removed.");
  m.def("snake_orders", [](nb::handle t) { return place::snake_orders(topo_arg(t).get()); },
        nb::arg("topology"));
  m.def("tile_cycle_orders", [](nb::handle t, std::vector<int> mesh) {
    return place::tile_cycle_orders(topo_arg(t).get(), mesh);
  }, nb::arg("topology"), nb::arg("mesh_shape"));
  m.def("default_placement", [](nb::handle t, std::vector<int> mesh) {
    return unwrap(place::default_placement(topo_arg(t).get(), mesh));
  }, nb::arg("topology"), nb::arg("mesh_shape"),
        "What jax.make_mesh picks (C++ port of mesh_utils.create_device_mesh).");
  m.def("create_device_mesh", [](nb::handle t, std::vector<int> mesh, bool split) {
    return unwrap(place::create_device_mesh(topo_arg(t).get(), mesh, split));
  }, nb::arg("topology"), nb::arg("mesh_shape"), nb::arg("allow_split_physical_axes") = false);
  m.def("placement_from_coords", [](nb::handle t, std::vector<std::vector<int>> coords,
                                    std::string name) {
    std::vector<topo::DeviceCoords> c;
    for (const auto& v : coords) c.push_back(device_coords_arg(v));
    return unwrap(place::placement_from_coords(topo_arg(t).get(), c, std::move(name)));
  }, nb::arg("topology"), nb::arg("coords"), nb::arg("name") = "mesh",
        "The placement of a JAX Mesh from each device's (x, y, z) or (x, y, z, core) in\n"
        "mesh.devices.flat order (Topology.coords_of's form).");
}

}  // namespace aoizora::bind
