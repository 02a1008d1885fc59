// Python view of cost/: a collective's flows and Q2 of a program under a placement.
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "aoizora/bind/bind.h"
#include "aoizora/bind/topology_args.h"
#include "aoizora/cost/flow.h"
#include "aoizora/cost/q2.h"

namespace nb = nanobind;

namespace aoizora::bind {

void bind_cost(nb::module_& m) {
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
}

}  // namespace aoizora::bind
