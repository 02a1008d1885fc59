#include "aoizora/sim/simulator.h"

namespace aoizora::sim {

Result<SimResult> simulate(const hlo::CollectiveGraph& graph, const topo::Topology& topology,
                   const place::Placement& placement, const SimOptions& options) {
  FlowModel model;
  model.expand = [&](const hlo::Collective& c) { return cost::expand(c, placement, topology); };
  model.route = [&](int src, int dst) {
    std::span<const int> r = topology.route(src, dst);
    return std::vector<int>(r.begin(), r.end());
  };
  return simulate_with(graph, topology, placement, options, model);
}

Result<SimResult> simulate_checked(const hlo::CollectiveGraph& graph,
                                   const topo::Topology& topology,
                                   const place::Placement& placement,
                                   const SimOptions& options) {
  RETURN_IF_ERROR(check_inputs(graph, topology, placement));
  return simulate(graph, topology, placement, options);
}

}  // namespace aoizora::sim
