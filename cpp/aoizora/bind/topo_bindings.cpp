// Python view of topo/, place/, cost/ (flows and Q2) and stage2/ (the placement search).
// Every function that takes a topology accepts a bound Topology or a catalog name / JSON path.
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>

#include "aoizora/bind/bind.h"
#include "aoizora/cost/flow.h"
#include "aoizora/cost/q2.h"
#include "aoizora/place/axis_order.h"
#include "aoizora/place/jax_default.h"
#include "aoizora/place/ring_orders.h"
#include "aoizora/stage2/placement_search.h"
#include "aoizora/topo/catalog.h"

namespace nb = nanobind;

namespace aoizora::bind {
namespace {

// A topology argument: the bound object itself, or one made from a name or path.
struct TopoArg {
  std::unique_ptr<topo::Topology> owned;
  const topo::Topology* ptr = nullptr;
  const topo::Topology& get() const { return *ptr; }
};

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

// A device as Python sees it: (x, y, z) on one-core chips, (x, y, z, core) on two-core chips,
// so that it matches (*d.coords, d.core_on_chip) of a JAX device where a chip has two.
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
  d["dma_fixed_seconds"] = s.dma_fixed_seconds;
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

}  // namespace

void bind_topo(nb::module_& m) {
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

  m.def("expand", [](const hlo::Collective& c, const std::vector<int>& device_of, nb::handle t) {
    TopoArg a = topo_arg(t);
    cost::CollectiveFlows f = cost::expand(c, place::Placement{"given", device_of}, a.get());
    nb::list flows;
    for (const cost::Flow& fl : f.flows) flows.append(nb::make_tuple(fl.src, fl.dst, fl.bytes, fl.step));
    return nb::make_tuple(flows, f.num_steps);
  }, nb::arg("collective"), nb::arg("device_of"), nb::arg("topology"),
        "([(src_device, dst_device, bytes, step)], num_steps) of one collective.");

  nb::class_<cost::Q2Result>(m, "Q2Result", "Q2 of one program under one placement (seconds).")
      .def_ro("seconds", &cost::Q2Result::seconds)
      .def_ro("compute_seconds", &cost::Q2Result::compute_seconds)
      .def_ro("exposed_comm_seconds", &cost::Q2Result::exposed_comm_seconds)
      .def_ro("comm_seconds", &cost::Q2Result::comm_seconds)
      .def_ro("link_bytes", &cost::Q2Result::link_bytes)
      .def_ro("collective_seconds", &cost::Q2Result::collective_seconds)
      .def("__repr__", [](const cost::Q2Result& r) {
        return "<Q2Result seconds=" + std::to_string(r.seconds) + " compute=" +
               std::to_string(r.compute_seconds) + " exposed_comm=" +
               std::to_string(r.exposed_comm_seconds) + ">";
      });
  m.def("evaluate_q2", [](const hlo::CollectiveGraph& g, nb::handle t, const std::vector<int>& device_of) {
    TopoArg a = topo_arg(t);
    place::Placement p = placement_of(device_of, a.get());
    check_partitions(device_of, g);
    nb::gil_scoped_release release;
    return cost::evaluate_q2(g, a.get(), p);
  }, nb::arg("graph"), nb::arg("topology"), nb::arg("device_of"));

  nb::class_<cost::Q2Evaluator>(m, "Q2Evaluator",
                                "Q2 of many placements of one graph on one topology (the graph "
                                "and topology must outlive it; one per thread).")
      .def("__init__", [](cost::Q2Evaluator* e, const hlo::CollectiveGraph& g, const topo::Topology& t) {
        new (e) cost::Q2Evaluator(g, t);
      }, nb::arg("graph"), nb::arg("topology"), nb::keep_alive<1, 2>(), nb::keep_alive<1, 3>())
      .def("seconds", [](cost::Q2Evaluator& e, const std::vector<int>& device_of) {
        check_devices(device_of, e.topology());
        check_partitions(device_of, e.graph());
        return e.seconds(device_of);
      }, nb::arg("device_of"))
      .def("seconds_many", [](cost::Q2Evaluator& e, const std::vector<std::vector<int>>& placements) {
        std::vector<double> out(placements.size());
        for (const auto& p : placements) {
          check_devices(p, e.topology());
          check_partitions(p, e.graph());
        }
        nb::gil_scoped_release release;
        for (size_t i = 0; i < placements.size(); ++i) out[i] = e.seconds(placements[i]);
        return out;
      }, nb::arg("placements"), "Q2 seconds of each device_of list, evaluated in C++.")
      .def_prop_ro("num_patterns", &cost::Q2Evaluator::num_patterns);

  nb::class_<stage2::RankedPlacement>(m, "RankedPlacement")
      .def_ro("placement", &stage2::RankedPlacement::placement)
      .def_ro("q2", &stage2::RankedPlacement::q2)
      .def_prop_ro("name", [](const stage2::RankedPlacement& r) { return r.placement.name; })
      .def_prop_ro("device_of", [](const stage2::RankedPlacement& r) { return r.placement.device_of; })
      .def("__repr__", [](const stage2::RankedPlacement& r) {
        return "<RankedPlacement '" + r.placement.name + "' q2=" + std::to_string(r.q2) + ">";
      });
  nb::class_<stage2::Ranking>(m, "Ranking")
      .def_ro("ranked", &stage2::Ranking::ranked, "best first")
      .def_ro("default", &stage2::Ranking::jax_default, "JAX's own order, or None")
      .def_ro("default_error", &stage2::Ranking::default_error)
      .def_ro("evaluated", &stage2::Ranking::evaluated);
  m.def("rank_placements", [](const hlo::CollectiveGraph& g, nb::handle t, std::vector<int> mesh,
                              bool axis_orders, int max_axis_orders, bool ring_orders,
                              int search_starts, int search_iterations, uint64_t seed,
                              bool remove_symmetric) {
    TopoArg a = topo_arg(t);
    stage2::RankOptions o;
    o.axis_orders = axis_orders;
    o.max_axis_orders = max_axis_orders;
    o.ring_orders = ring_orders;
    o.search_starts = search_starts;
    o.search.iterations = search_iterations;
    o.search.seed = seed;
    o.remove_symmetric = remove_symmetric;
    Result<stage2::Ranking> r = Error{};
    {
      nb::gil_scoped_release release;
      r = stage2::rank_placements(g, a.get(), mesh, o);
    }
    return unwrap(std::move(r));
  }, nb::arg("graph"), nb::arg("topology"), nb::arg("mesh_shape"), nb::arg("axis_orders") = true,
        nb::arg("max_axis_orders") = 2000, nb::arg("ring_orders") = true,
        nb::arg("search_starts") = 3, nb::arg("search_iterations") = 2000, nb::arg("seed") = 0,
        nb::arg("remove_symmetric") = true,
        "Placements of a compiled program best first by Q2, plus JAX's default placement.");
}

}  // namespace aoizora::bind
