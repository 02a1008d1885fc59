// Python view of topo/: topologies, their chips, devices, links and routes, and the
// hardware profiles. Every function that takes a topology accepts a bound Topology or a
// catalog name / JSON path (topology_args.h).
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "aoizora/bind/bind.h"
#include "aoizora/bind/topology_args.h"
#include "aoizora/topo/catalog.h"

namespace nb = nanobind;

namespace aoizora::bind {
namespace {

nb::dict spec_dict(const topo::ChipSpec& s) {
  nb::dict d;
  d["generation"] = s.generation;
  d["device_kind"] = s.device_kind;
  d["peak_flops"] = s.peak_flops;
  d["hbm_bytes"] = s.hbm_bytes;
  d["hbm_bandwidth"] = s.hbm_bandwidth;
  d["link_bandwidth"] = s.link_bandwidth;
  d["hop_latency"] = s.hop_latency;
  d["mxu_size"] = s.mxu_size;
  d["mxu_efficiency"] = s.mxu_efficiency;
  d["vector_ops_per_second"] = s.vector_ops_per_second;
  d["transcendentals_per_second"] = s.transcendentals_per_second;
  d["grid_step_seconds"] = s.grid_step_seconds;
  d["cores_per_chip"] = s.cores_per_chip;
  const topo::CollectiveLatency& c = s.collective_latency;
  nb::dict lat;
  lat["all-gather"] = c.all_gather;
  lat["all-reduce"] = c.all_reduce;
  lat["reduce-scatter"] = c.reduce_scatter;
  lat["all-to-all"] = c.all_to_all;
  lat["collective-permute"] = c.collective_permute;
  lat["collective-broadcast"] = c.collective_broadcast;
  d["collective_latency"] = lat;
  nb::dict alg;
  alg["line"] = s.algorithms.line;
  alg["wrapped-axis"] = s.algorithms.wrapped_axis;
  alg["grid"] = s.algorithms.grid;
  alg["other"] = s.algorithms.other;
  d["algorithms"] = alg;
  if (s.intra_chip_link) {
    nb::dict l;
    l["bandwidth"] = s.intra_chip_link->bandwidth;
    l["latency"] = s.intra_chip_link->latency;
    d["intra_chip_link"] = l;
  } else {
    d["intra_chip_link"] = nb::none();
  }
  return d;
}

nb::dict link_dict(const topo::Link& l) {
  nb::dict d;
  d["id"] = l.id;
  d["src"] = l.src;
  d["dst"] = l.dst;
  d["dim"] = l.dim;
  d["dir"] = l.dir;
  d["wraparound"] = l.wraparound;
  d["bandwidth"] = l.bandwidth;
  d["latency"] = l.latency;
  return d;
}

nb::dict topology_dict(const topo::Topology& t) {
  nb::dict d;
  d["name"] = t.name;
  d["dims"] = nb::cast(t.dims);
  d["wrap"] = nb::cast(t.wrap);
  d["num_chips"] = t.num_chips();
  d["cores_per_chip"] = t.cores_per_chip();
  d["num_devices"] = t.num_devices();
  d["num_links"] = t.num_links();
  d["spec"] = spec_dict(t.spec);
  nb::list chips;
  for (const topo::Chip& c : t.chips) chips.append(nb::cast(c.coords));
  d["chips"] = chips;
  nb::list links;
  for (const topo::Link& l : t.links) links.append(link_dict(l));
  d["links"] = links;
  return d;
}

// The Topology class: chips, links, routes, the chip figures.
void bind_topology_class(nb::module_& m) {
  using topo::Topology;

  nb::class_<Topology>(m, "Topology",
                       "Chips at (x, y, z) and directed full-duplex links; devices (TensorCores) "
                       "on them, two per chip on TPU7x. Chip ids are x-fastest, device ids "
                       "core-fastest; match JAX devices by coords (and core_on_chip), never by id.")
      .def_prop_ro("name", [](const Topology& t) { return t.name; })
      .def_prop_ro("dims", [](const Topology& t) { return t.dims; })
      .def_prop_ro("wrap", [](const Topology& t) { return t.wrap; })
      .def_prop_ro("num_chips", &Topology::num_chips)
      .def_prop_ro("cores_per_chip", &Topology::cores_per_chip)
      .def_prop_ro("num_devices", &Topology::num_devices)
      .def_prop_ro("devices", [](const Topology& t) {
        nb::list out;
        for (int d = 0; d < t.num_devices(); ++d) out.append(device_key(t, d));
        return out;
      }, "device_key of device id i at index i: (x, y, z), or (x, y, z, core) on two-core chips")
      .def("chip_of_device", [](const Topology& t, int d) {
        check_devices({d}, t);
        return t.chip_of_device(d);
      }, nb::arg("device"))
      .def_prop_ro("num_links", &Topology::num_links)
      .def_prop_ro("is_grid", &Topology::is_grid)
      .def_prop_ro("chips", [](const Topology& t) {
        std::vector<std::array<int, 3>> out;
        for (const topo::Chip& c : t.chips) out.push_back(c.coords);
        return out;
      }, "coords of chip id i at index i")
      .def_prop_ro("links", [](const Topology& t) {
        nb::list out;
        for (const topo::Link& l : t.links) out.append(link_dict(l));
        return out;
      })
      .def_prop_ro("spec", [](const Topology& t) { return spec_dict(t.spec); })
      .def_prop_ro("peak_flops", [](const Topology& t) { return t.spec.peak_flops; })
      .def_prop_ro("hbm_bytes", [](const Topology& t) { return t.spec.hbm_bytes; })
      .def_prop_ro("hbm_bandwidth", [](const Topology& t) { return t.spec.hbm_bandwidth; })
      .def_prop_ro("link_bandwidth", [](const Topology& t) { return t.spec.link_bandwidth; })
      .def_prop_ro("hop_latency", [](const Topology& t) { return t.spec.hop_latency; })
      .def_prop_ro("device_kind", [](const Topology& t) { return t.spec.device_kind; })
      .def("chip_at", [](const Topology& t, std::array<int, 3> c) { return t.chip_at(c); },
           nb::arg("coords"), "Chip id at (x, y, z), or -1.")
      .def("link_between", &Topology::link_between, nb::arg("a"), nb::arg("b"))
      .def("route", [](const Topology& t, int a, int b) {
        check_devices({a, b}, t);
        auto r = t.route(a, b);
        return std::vector<int>(r.begin(), r.end());
      }, nb::arg("src"), nb::arg("dst"), "Link ids of the route between two devices.")
      .def("hops", [](const Topology& t, int a, int b) {
        check_devices({a, b}, t);
        return t.hops(a, b);
      }, nb::arg("src"), nb::arg("dst"))
      .def("coords_of", [](const Topology& t, const std::vector<int>& device_of) {
        placement_of(device_of, t);
        nb::list out;
        for (int d : device_of) out.append(device_key(t, d));
        return out;
      }, nb::arg("device_of"),
           "device_key of each partition's device (to look up JAX devices and build a Mesh).")
      .def("to_dict", &topology_dict)
      .def("__repr__", [](const Topology& t) {
        return "<Topology " + t.name + " chips=" + std::to_string(t.num_chips()) +
               (t.cores_per_chip() > 1 ? " devices=" + std::to_string(t.num_devices()) : "") +
               " links=" + std::to_string(t.num_links()) + ">";
      });
}

// The catalog and the hardware profiles: names to topologies and figures.
void bind_catalog(nb::module_& m) {
  using topo::Topology;

  m.def("make_topology",
        [](const std::string& s, const std::string& hardware) {
          return unwrap(topo::make_topology(s, hardware));
        },
        nb::arg("name_or_path"), nb::arg("hardware") = "",
        "A catalog topology ('v5e:2x4', 'v5p:4x4x4', ...) or one from a JSON file; `hardware`,\n"
        "a hardware profile file, replaces its chip figures.");
  m.def("hardware_profile",
        [](const std::string& generation) {
          return topo::profile_to_json(unwrap(topo::hardware_profile(generation)));
        },
        nb::arg("generation"), "The shipped hardware profile of a generation, as JSON text.");
  m.def("check_hardware_profile",
        [](const std::string& path) {
          return topo::profile_to_json(unwrap(topo::read_profile_file(path)));
        },
        nb::arg("path"),
        "Reads and validates a hardware profile file; returns it as JSON text, raises CoreError.");
  m.def("catalog_names", &topo::catalog_names, "Every topology name the catalog knows.");
}

}  // namespace

void bind_topo(nb::module_& m) {
  bind_topology_class(m);
  bind_catalog(m);
}

}  // namespace aoizora::bind
