// Python view of stage2/: the placements of a compiled program ranked by Q2.
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "aoizora/bind/bind.h"
#include "aoizora/bind/topology_args.h"
#include "aoizora/stage2/placement_search.h"

namespace nb = nanobind;

namespace aoizora::bind {

void bind_stage2(nb::module_& m) {
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
