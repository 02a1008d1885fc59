// The cheapest way a slice can run one collective over groups of k devices, priced with the
// same algorithms (algorithm.h) and routes as Q2 and the simulator. Stage 1 does not know the
// placement, so it takes the best the slice offers: the slice's devices are tiled with copies
// of a box of k devices over the device axes (x, y, z and, on TPU7x, the core; every box
// shape that tiles them is tried), every group runs at once, and the busiest link sets the
// time. A ring permute runs along a cycle of its box.
#pragma once

#include <limits>
#include <map>
#include <utility>

#include "aoizora/hlo/collective_graph.h"
#include "aoizora/topo/topology.h"

namespace aoizora::cost {

// Seconds of one collective of volume V (collective_volume's convention):
// V * seconds_per_byte + latency.
struct GroupCost {
  double seconds_per_byte = std::numeric_limits<double>::infinity();
  double latency = 0;
  double seconds(double volume) const { return volume * seconds_per_byte + latency; }
};

class BestGroupCosts {
 public:
  // Holds a reference: the topology must outlive it.
  explicit BestGroupCosts(const topo::Topology& topology) : topo_(topology) {}

  // The best cost over group shapes for `kind` over groups of k devices (memoized).
  const GroupCost& get(hlo::CollectiveKind kind, int k);

 private:
  GroupCost compute(hlo::CollectiveKind kind, int k) const;

  const topo::Topology& topo_;
  std::map<std::pair<int, int>, GroupCost> memo_;
};

}  // namespace aoizora::cost
