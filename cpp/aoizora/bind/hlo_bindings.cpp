// Python view of hlo/: the C++ CollectiveGraph itself (other stages' bindings take it as an
// argument), its parts as read-only structs, and the loaders.
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <map>
#include <string>

#include "aoizora/bind/bind.h"
#include "aoizora/hlo/collective_graph.h"
#include "aoizora/hlo/hlo_loader.h"
#include "aoizora/hlo/hlo_parser.h"
#include "aoizora/hlo/own_mesh.h"

namespace nb = nanobind;

namespace aoizora::bind {

namespace {

// The parts of a CollectiveGraph, as read-only structs.
void bind_graph_parts(nb::module_& m) {
  using namespace aoizora::hlo;

  nb::class_<Collective>(m, "Collective", "One collective (a sync op or a -start/-done pair).")
      .def_prop_ro("kind", [](const Collective& c) { return std::string(to_string(c.kind)); })
      .def_ro("name", &Collective::name)
      .def_ro("opcode", &Collective::opcode)
      .def_ro("groups", &Collective::groups)
      .def_ro("source_target_pairs", &Collective::source_target_pairs)
      .def_ro("operand_bytes", &Collective::operand_bytes)
      .def_ro("result_bytes", &Collective::result_bytes)
      .def_ro("async_", &Collective::async)
      .def_prop_ro("async", [](const Collective& c) { return c.async; })
      .def_ro("repeat", &Collective::repeat)
      .def_ro("region", &Collective::region)
      .def_ro("start_op", &Collective::start_op)
      .def_ro("done_op", &Collective::done_op)
      .def_ro("done_region", &Collective::done_region)
      .def_ro("channel_id", &Collective::channel_id)
      .def("__repr__", [](const Collective& c) {
        return "<Collective " + std::string(to_string(c.kind)) + " " + c.name + " " +
               std::to_string(c.operand_bytes) + "B x" + std::to_string(c.repeat) + ">";
      });

  nb::class_<ScheduledOp>(m, "ScheduledOp", "One instruction of the schedule with its cost.")
      .def_ro("name", &ScheduledOp::name)
      .def_ro("opcode", &ScheduledOp::opcode)
      .def_prop_ro("kind",
                   [](const ScheduledOp& o) {
                     switch (o.kind) {
                       case OpKind::kCompute: return "compute";
                       case OpKind::kCollective: return "collective";
                       case OpKind::kCollectiveStart: return "collective-start";
                       case OpKind::kCollectiveDone: return "collective-done";
                     }
                     return "compute";
                   })
      .def_ro("flops", &ScheduledOp::flops)
      .def_ro("bytes", &ScheduledOp::bytes)
      .def_ro("opaque", &ScheduledOp::opaque)
      .def_ro("collective", &ScheduledOp::collective)
      .def_ro("collectives", &ScheduledOp::collectives)
      .def_ro("deps", &ScheduledOp::deps);

  nb::class_<Region>(m, "Region", "A straight-line piece of the schedule run `repeat` times.")
      .def_ro("name", &Region::name)
      .def_ro("repeat", &Region::repeat)
      .def_ro("trip_count_known", &Region::trip_count_known)
      .def_ro("ops", &Region::ops)
      .def_prop_ro("flops", [](const Region& r) {
        double f = 0;
        for (const ScheduledOp& o : r.ops) f += o.flops;
        return f;
      });

  nb::class_<Loop>(m, "Loop",
                   "A while loop: regions [first_region, last_region] run trip_count times "
                   "per execution of its parent loop (-1: none).")
      .def_ro("name", &Loop::name)
      .def_ro("trip_count", &Loop::trip_count)
      .def_ro("trip_count_known", &Loop::trip_count_known)
      .def_ro("parent", &Loop::parent)
      .def_ro("first_region", &Loop::first_region)
      .def_ro("last_region", &Loop::last_region);
}

// The graph of one compiled HLO program.
void bind_collective_graph(nb::module_& m) {
  using namespace aoizora::hlo;

  nb::class_<CollectiveGraph>(m, "CollectiveGraph",
                              "Collectives, schedule regions and per-op cost of one compiled HLO.")
      .def_ro("num_partitions", &CollectiveGraph::num_partitions)
      .def_ro("replica_count", &CollectiveGraph::replica_count)
      .def_ro("device_count_source", &CollectiveGraph::device_count_source,
              "'header', 'given' (num_devices) or 'inferred from replica groups'")
      .def_ro("regions", &CollectiveGraph::regions)
      .def_ro("collectives", &CollectiveGraph::collectives)
      .def_ro("loops", &CollectiveGraph::loops)
      .def_prop_ro("unknown_trip_count_loops", &unknown_trip_count_loops,
                   "names of the loops whose trip count was not found")
      .def_prop_ro("total_flops", &CollectiveGraph::total_flops,
                   "FLOPs per device per program run (loop bodies x trip count)")
      .def_prop_ro("static_flops", &CollectiveGraph::static_flops,
                   "FLOPs with every op counted once (XLA cost_analysis convention)")
      .def_prop_ro("total_bytes", &CollectiveGraph::total_bytes)
      .def("collective_bytes_by_kind",
           [](const CollectiveGraph& g) {
             std::map<std::string, int64_t> out;
             for (const Collective& c : g.collectives)
               out[std::string(to_string(c.kind))] += c.operand_bytes * c.repeat;
             return out;
           },
           "operand bytes x repeat summed per collective kind")
      .def("__repr__", [](const CollectiveGraph& g) {
        return "<CollectiveGraph partitions=" + std::to_string(g.num_partitions) +
               " collectives=" + std::to_string(g.collectives.size()) +
               " regions=" + std::to_string(g.regions.size()) + ">";
      });
}

// Reading HLO text into a graph, and the checks beside it.
void bind_loaders(nb::module_& m) {
  using namespace aoizora::hlo;

  m.def(
      "load_hlo",
      [](std::string_view text, std::string filename, int num_devices) {
        return unwrap(collective_graph_from_text(text, std::move(filename), {num_devices}));
      },
      nb::arg("text"), nb::arg("filename") = "", nb::arg("num_devices") = 0,
      "Parses compiled HLO text into a CollectiveGraph (CoreError on malformed input). "
      "num_devices: the partition count when the header has none (0: inferred).");
  m.def(
      "replicated_graph",
      [](const CollectiveGraph& g, int replicas) { return unwrap(replicated(g, replicas)); },
      nb::arg("graph"), nb::arg("replicas"),
      "replicated_graph(graph, replicas) -> CollectiveGraph: `replicas` copies of the program "
      "as one of num_partitions x replicas partitions, copy k's groups and source-target pairs "
      "offset by k x num_partitions (a bound graph is read-only, so this is how copies are "
      "made). Simulated under the copies' device orders concatenated, it is the copies "
      "running together on one slice. CoreError when replicas < 1 or the graph has several "
      "replicas.");
  m.def("own_mesh", &own_mesh, nb::arg("text"), nb::arg("partitions"),
        "own_mesh(text, partitions) -> [sizes]: the logical mesh a compiled HLO program was "
        "built for, read from its shardings (hlo/own_mesh.h); [partitions] when they do not "
        "tell. Never fails.");
  m.def(
      "load_hlo_file",
      [](const std::string& path, int num_devices) {
        return unwrap(collective_graph_from_file(path, {num_devices}));
      },
      nb::arg("path"), nb::arg("num_devices") = 0,
      "Reads and parses a compiled HLO file into a CollectiveGraph.");
  m.def(
      "hlo_module_summary",
      [](std::string_view text) {
        auto m = unwrap(parse_hlo_module(text));
        std::map<std::string, int> opcodes;
        int instructions = 0;
        for (const Computation& c : m.computations)
          for (const Instruction& ins : c.instructions) {
            ++opcodes[std::string(ins.opcode)];
            ++instructions;
          }
        nb::dict out;
        out["computations"] = static_cast<int>(m.computations.size());
        out["instructions"] = instructions;
        out["opcodes"] = opcodes;
        return out;
      },
      nb::arg("text"),
      "Parses HLO text only: {'computations', 'instructions', 'opcodes': {opcode: count}} "
      "(CoreError on malformed input); for checking the parser against XLA's.");
}

}  // namespace

void bind_hlo(nb::module_& m) {
  bind_graph_parts(m);
  bind_collective_graph(m);
  bind_loaders(m);
}

}  // namespace aoizora::bind
