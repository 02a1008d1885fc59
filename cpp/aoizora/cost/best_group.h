// The cheapest way a slice can run one collective over groups of k devices, priced with the
// same algorithms (algorithm.h) and routes as Q2 and the simulator. Stage 1 does not know the
// placement, so it takes the best the slice offers: the slice's devices are tiled with copies
// of a box of k devices over the device axes (x, y, z and, on TPU7x, the core; every box
// shape that tiles them is tried), every group runs at once, and the busiest link sets the
// time. A ring permute runs along a cycle of its box.
// On a slice with two cores per chip, a chip's cores hold one mesh axis's devices, not every
// axis's: `CoreAxis` says whether the groups span the cores (the axis on them is one of the
// group's) or stay on one core of each chip (it is not), so no two mesh axes are both priced
// at the die-to-die link (docs/stage1.md, "Where Q1 and the compiled program part").
#pragma once

#include <map>
#include <tuple>
#include <utility>

#include "aoizora/cost/group_cost.h"
#include "aoizora/hlo/collective_graph.h"
#include "aoizora/topo/topology.h"

namespace aoizora::cost {

// Which boxes a group may take along the core axis (the 4th device axis).
enum class CoreAxis {
  kAny,     // every box (a slice of one core per chip has no other)
  kSpans,   // boxes that hold every core of a chip (core extent = cores per chip)
  kAvoids,  // boxes on one core of each chip (core extent 1)
};

class BestGroupCosts {
 public:
  // Holds a reference: the topology must outlive it.
  explicit BestGroupCosts(const topo::Topology& topology) : topo_(topology) {}

  // The best cost over group shapes for `kind` over groups of k devices (memoized). When no
  // box of k devices meets `core` (k not a multiple of the cores, or more than one core's
  // devices), the best over every box.
  const GroupCost& get(hlo::CollectiveKind kind, int k, CoreAxis core = CoreAxis::kAny);

 private:
  GroupCost compute(hlo::CollectiveKind kind, int k, CoreAxis core) const;

  const topo::Topology& topo_;
  std::map<std::tuple<int, int, int>, GroupCost> memo_;
};

}  // namespace aoizora::cost
