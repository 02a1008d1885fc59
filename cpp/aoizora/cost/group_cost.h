// What one collective costs on given groups of devices, priced with the same algorithms
// (algorithm.h) and routes as Q2 and the simulator: every group runs at once, each phase of
// the algorithm is charged its busiest link (phase_load.h), and each step the latency of the
// longest route. Q1 prices a collective this way on the best box of the slice (best_group.h)
// and on the groups a placement gives the mesh's axes (placed_groups.h).
#pragma once

#include <limits>
#include <vector>

#include "aoizora/cost/phase_load.h"
#include "aoizora/hlo/collective_graph.h"
#include "aoizora/topo/topology.h"

namespace aoizora::cost {

// Seconds of one collective of volume V (collective_volume's convention):
// V * seconds_per_byte + latency.
struct GroupCost {
  double seconds_per_byte = std::numeric_limits<double>::infinity();
  double latency = 0;
  double seconds(double volume) const { return volume * seconds_per_byte + latency; }
  bool operator<(const GroupCost& o) const {
    return seconds_per_byte < o.seconds_per_byte ||
           (seconds_per_byte == o.seconds_per_byte && latency < o.latency);
  }
};

// A key equal for collectives of equal kind and groups (or source-target pairs): they move
// bytes in the same proportions, so Q1 and Q2 price each such pattern once.
std::vector<int> pattern_key(const hlo::Collective& c);

// The cost of `c` (its groups or source-target pairs, in partition ids) with partition p on
// device device_of[p]. `loads` is cleared first and left holding the collective's loads per
// unit volume (Q2 keeps them per link).
GroupCost price_collective(const hlo::Collective& c, const std::vector<int>& device_of,
                           const topo::Topology& t, PhaseLoads& loads);

}  // namespace aoizora::cost
