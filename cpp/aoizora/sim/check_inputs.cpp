// check_inputs(): the preconditions of simulate(), as an error naming the first one a
// program and placement break (simulator.h).
#include <string>
#include <vector>

#include "aoizora/sim/simulator.h"

namespace aoizora::sim {

Status check_inputs(const hlo::CollectiveGraph& graph, const topo::Topology& topology,
                    const place::Placement& placement) {
  const int n = graph.num_partitions;
  if (static_cast<int>(placement.device_of.size()) != n)
    return Error::invalid("placement has " + std::to_string(placement.device_of.size()) +
                          " devices for a program of " + std::to_string(n) + " partitions");
  std::vector<char> used(topology.num_devices(), 0);
  for (int p = 0; p < n; ++p) {
    const int c = placement.device_of[p];
    if (c < 0 || c >= topology.num_devices())
      return Error::invalid("placement maps partition " + std::to_string(p) + " to device " +
                            std::to_string(c) + ", but " + topology.name + " has devices 0.." +
                            std::to_string(topology.num_devices() - 1));
    if (used[c]++) return Error::invalid("placement maps two partitions to device " + std::to_string(c));
  }
  for (const hlo::Collective& c : graph.collectives) {
    for (const auto& g : c.groups)
      for (int p : g)
        if (p < 0 || p >= n)
          return Error::invalid("collective " + c.name + " names partition " + std::to_string(p) +
                                " outside 0.." + std::to_string(n - 1));
    for (auto [s, d] : c.source_target_pairs)
      if (s < 0 || s >= n || d < 0 || d >= n)
        return Error::invalid("collective " + c.name + " has a source-target pair outside 0.." +
                              std::to_string(n - 1));
    if (c.region < 0 || c.region >= static_cast<int>(graph.regions.size()))
      return Error::invalid("collective " + c.name + " names region " + std::to_string(c.region));
  }
  const int nc = static_cast<int>(graph.collectives.size());
  for (const hlo::Region& r : graph.regions)
    for (const hlo::ScheduledOp& op : r.ops) {
      if (op.kind != hlo::OpKind::kCompute && (op.collective < 0 || op.collective >= nc))
        return Error::invalid("op " + op.name + " names collective " + std::to_string(op.collective));
      for (int c : op.collectives)
        if (c < 0 || c >= nc)
          return Error::invalid("op " + op.name + " names collective " + std::to_string(c));
    }
  return Status::success();
}

}  // namespace aoizora::sim
