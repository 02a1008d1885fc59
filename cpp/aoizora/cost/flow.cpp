#include "aoizora/cost/flow.h"

#include "aoizora/cost/algorithm.h"

namespace aoizora::cost {

CollectiveFlows expand(const hlo::Collective& c, const place::Placement& placement,
                       const topo::Topology& topology) {
  CollectiveFlows out;
  out.num_steps = generate_flows(c, placement.device_of, topology, collective_volume(c),
                                 /*aggregate=*/false,
                                 [&](int src, int dst, double bytes, int step, int /*n*/,
                                     int lane) {
                                   out.flows.push_back(Flow{src, dst, bytes, step, lane});
                                 });
  return out;
}

}  // namespace aoizora::cost
