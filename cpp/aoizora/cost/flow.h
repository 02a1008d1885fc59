// Expansion of a collective into point-to-point flows on chips, for a given placement.
// This is the one place that decides collective algorithms; Q2 sums the flows' bytes on
// links, the simulator plays them step by step. Contract shared by cost/ and sim/.
#pragma once

#include <vector>

#include "aoizora/hlo/collective_graph.h"
#include "aoizora/place/placement.h"
#include "aoizora/topo/topology.h"

namespace aoizora::cost {

// Bytes moved from one chip to another in one step of a collective's algorithm.
// A flow of step s from chip c may start once every flow of step s-1 of the same lane into c
// has finished (a ring forwards what it just received); step 0 flows start when the
// collective starts. Lanes are independent sequences of steps (the colours of a torus,
// cost/algorithm.h); every other algorithm has one, lane 0.
struct Flow {
  int src = 0;        // chip id
  int dst = 0;        // chip id
  double bytes = 0;
  int step = 0;
  int lane = 0;
};

struct CollectiveFlows {
  std::vector<Flow> flows;  // every group of the collective, all at once
  int num_steps = 0;
};

// Flows for one execution of collective `c` under `placement` on `topology`.
CollectiveFlows expand(const hlo::Collective& c, const place::Placement& placement,
                       const topo::Topology& topology);

}  // namespace aoizora::cost
