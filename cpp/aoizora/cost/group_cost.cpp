#include "aoizora/cost/group_cost.h"

#include <algorithm>

#include "aoizora/cost/algorithm.h"

namespace aoizora::cost {

std::vector<int> pattern_key(const hlo::Collective& c) {
  std::vector<int> key{static_cast<int>(c.kind), -1};
  for (const auto& g : c.groups) {
    key.insert(key.end(), g.begin(), g.end());
    key.push_back(-1);
  }
  key.push_back(-2);
  for (const auto& [s, d] : c.source_target_pairs) {
    key.push_back(s);
    key.push_back(d);
  }
  return key;
}

GroupCost price_collective(const hlo::Collective& c, const std::vector<int>& device_of,
                           const topo::Topology& t, PhaseLoads& loads) {
  loads.clear();
  double route_latency = 0;
  const int steps = generate_flows(
      c, device_of, t, 1.0, /*aggregate=*/true,
      [&](int src, int dst, double bytes, int first_step, int, int) {
        const int s = loads.slot(first_step);
        double lat = 0;
        t.for_each_route_link(src, dst, [&](int l) {
          loads.add(s, l, bytes);
          lat += t.links[static_cast<size_t>(l)].latency;
        });
        route_latency = std::max(route_latency, lat);
      });
  GroupCost g;
  g.seconds_per_byte = loads.serial_seconds();
  g.latency = steps * route_latency;
  return g;
}

}  // namespace aoizora::cost
