// Python view of sim/: simulate() over a bound CollectiveGraph and a Topology (the bound
// class or a catalog name / JSON path), the result as a read-only class, and the trace.
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "aoizora/bind/bind.h"
#include "aoizora/sim/simulator.h"
#include "aoizora/sim/trace.h"
#include "aoizora/topo/catalog.h"

namespace nb = nanobind;

namespace aoizora::bind {
namespace {

sim::SimOptions options_from(const nb::kwargs& kw, std::string& trace_path) {
  sim::SimOptions o;
  for (auto [key, value] : kw) {
    const std::string k = nb::cast<std::string>(key);
    if (k == "hop_latency") o.hop_latency = nb::cast<double>(value);
    else if (k == "collective_overhead") o.collective_overhead = nb::cast<double>(value);
    else if (k == "max_iterations") o.max_iterations = nb::cast<int>(value);
    else if (k == "top_contributors") o.top_contributors = nb::cast<int>(value);
    else if (k == "record_timeline") o.record_timeline = nb::cast<bool>(value);
    else if (k == "steps_wait_for_sends") o.steps_wait_for_sends = nb::cast<bool>(value);
    else if (k == "trace") {
      if (!value.is_none()) trace_path = nb::cast<std::string>(value);
    } else {
      throw CoreError("simulate: unknown option '" + k +
                      "' (expected hop_latency, collective_overhead, max_iterations, "
                      "top_contributors, steps_wait_for_sends, record_timeline, trace)");
    }
  }
  if (!trace_path.empty()) o.record_timeline = true;
  return o;
}

sim::SimResult run(const hlo::CollectiveGraph& g, const topo::Topology& t,
                   const std::vector<int>& device_of, const nb::kwargs& kw) {
  std::string trace;
  const sim::SimOptions o = options_from(kw, trace);
  place::Placement p;
  p.name = "given";
  p.device_of = device_of;
  sim::SimResult r;
  {
    nb::gil_scoped_release release;
    r = unwrap(sim::simulate_checked(g, t, p, o));
  }
  if (!trace.empty()) unwrap(sim::write_trace(r, t, trace));
  return r;
}

nb::dict to_dict(const sim::SimResult& r) {
  nb::dict d;
  d["step_seconds"] = r.step_seconds;
  d["compute_bound_seconds"] = r.compute_bound_seconds;
  nb::list chips;
  for (size_t c = 0; c < r.chips.size(); ++c) {
    nb::dict x;
    x["chip"] = c;
    x["compute"] = r.chips[c].compute;
    x["comm"] = r.chips[c].comm;
    x["idle"] = r.chips[c].idle;
    x["finish"] = r.chips[c].finish;
    chips.append(x);
  }
  d["chips"] = chips;
  d["link_bytes"] = nb::cast(r.link_bytes);
  d["link_utilization"] = nb::cast(r.link_utilization);
  nb::list cp;
  for (const sim::Contributor& c : r.critical_path) {
    nb::dict x;
    x["name"] = c.name;
    x["kind"] = c.kind;
    x["seconds"] = c.seconds;
    cp.append(x);
  }
  d["critical_path"] = cp;
  d["critical_path_seconds"] = r.critical_path_seconds;
  d["events"] = r.events;
  d["flows"] = r.flows;
  d["collectives"] = r.collectives;
  d["extrapolated"] = r.extrapolated;
  return d;
}

// What a simulation gives back.
void bind_sim_results(nb::module_& m) {
  using namespace aoizora::sim;

  nb::class_<ChipTime>(m, "ChipTime",
                      "Where one chip's step went: compute + comm + idle; and when it ended.")
      .def_ro("compute", &ChipTime::compute)
      .def_ro("comm", &ChipTime::comm)
      .def_ro("idle", &ChipTime::idle)
      .def_ro("finish", &ChipTime::finish,
              "seconds from the start until the chip's last op ended (0: no partition)")
      .def("__repr__", [](const ChipTime& c) {
        return "<ChipTime compute=" + std::to_string(c.compute) +
               " comm=" + std::to_string(c.comm) + " idle=" + std::to_string(c.idle) +
               " finish=" + std::to_string(c.finish) + ">";
      });

  nb::class_<Contributor>(m, "Contributor", "Time the critical path spent in one op.")
      .def_ro("name", &Contributor::name)
      .def_ro("kind", &Contributor::kind)
      .def_ro("seconds", &Contributor::seconds)
      .def("__repr__", [](const Contributor& c) {
        return "<Contributor " + c.kind + " " + c.name + " " + std::to_string(c.seconds) + "s>";
      });

  nb::class_<SimResult>(m, "SimResult", "A flow-level simulation of one program run.")
      .def_ro("step_seconds", &SimResult::step_seconds)
      .def_ro("compute_bound_seconds", &SimResult::compute_bound_seconds)
      .def_ro("chips", &SimResult::chips)
      .def_ro("link_bytes", &SimResult::link_bytes)
      .def_ro("link_utilization", &SimResult::link_utilization)
      .def_ro("critical_path", &SimResult::critical_path)
      .def_ro("critical_path_seconds", &SimResult::critical_path_seconds)
      .def_ro("events", &SimResult::events)
      .def_ro("flows", &SimResult::flows)
      .def_ro("collectives", &SimResult::collectives)
      .def_ro("extrapolated", &SimResult::extrapolated)
      .def_prop_ro("has_timeline", [](const SimResult& r) { return !r.timeline.slices.empty(); })
      .def("to_dict", &to_dict, "A JSON-ready dict of every figure (not the timeline).")
      .def("__repr__", [](const SimResult& r) {
        return "<SimResult step=" + std::to_string(r.step_seconds) + "s compute_bound=" +
               std::to_string(r.compute_bound_seconds) + "s>";
      });
}

// Simulating a program, and writing its trace.
void bind_simulate(nb::module_& m) {
  using namespace aoizora::sim;

  const char* doc =
      "simulate(graph, topology, device_of, **options) -> SimResult\n\n"
      "Flow-level simulation of a CollectiveGraph on a Topology (or a catalog name / JSON "
      "path) with device_of[partition] = chip id. Options: hop_latency (s, default: the "
      "links'), collective_overhead (s, default: the profile's latency per kind), max_iterations (simulated iterations "
      "of a repeated region before steady-state extrapolation, default 3, 0 = all), "
      "top_contributors (default 10), steps_wait_for_sends (default True: a chip's next "
      "step also waits for its own sends), record_timeline (bool), trace (path: record the "
      "timeline and write a Chrome/Perfetto trace there atomically).";

  m.def(
      "simulate",
      [](const hlo::CollectiveGraph& g, const topo::Topology& t, const std::vector<int>& device_of,
         const nb::kwargs& kw) { return run(g, t, device_of, kw); },
      nb::arg("graph"), nb::arg("topology"), nb::arg("device_of"), nb::arg("options"), doc);
  m.def(
      "simulate",
      [](const hlo::CollectiveGraph& g, const std::string& topology,
         const std::vector<int>& device_of, const nb::kwargs& kw) {
        topo::Topology t = unwrap(topo::make_topology(topology));
        return run(g, t, device_of, kw);
      },
      nb::arg("graph"), nb::arg("topology"), nb::arg("device_of"), nb::arg("options"), doc);

  m.def(
      "write_sim_trace",
      [](const SimResult& r, const topo::Topology& t, const std::string& path) {
        if (r.timeline.slices.empty())
          throw CoreError("write_sim_trace: the result has no timeline; simulate with "
                          "record_timeline=True or trace=PATH");
        unwrap(write_trace(r, t, path));
      },
      nb::arg("result"), nb::arg("topology"), nb::arg("path"),
      "Writes the Chrome/Perfetto trace of a result simulated with record_timeline=True.");
  m.def(
      "write_sim_trace",
      [](const SimResult& r, const std::string& topology, const std::string& path) {
        if (r.timeline.slices.empty())
          throw CoreError("write_sim_trace: the result has no timeline; simulate with "
                          "record_timeline=True or trace=PATH");
        topo::Topology t = unwrap(topo::make_topology(topology));
        unwrap(write_trace(r, t, path));
      },
      nb::arg("result"), nb::arg("topology"), nb::arg("path"));
}

}  // namespace

void bind_sim(nb::module_& m) {
  bind_sim_results(m);
  bind_simulate(m);
}

}  // namespace aoizora::bind
