// The critical path of a finished run: walking back from the last chip to finish, through
// its compute spans, and through each wait into the collective's communication or, when
// the group started late, to the member that arrived last. Extrapolated spans are covered
// by the weights of the last simulated iteration. Time is summed per op name (compute) or
// collective name, largest first.
#pragma once

#include <string>
#include <vector>

#include "aoizora/hlo/collective_graph.h"
#include "aoizora/sim/chip_schedule.h"
#include "aoizora/sim/collective_lowering.h"
#include "aoizora/sim/group_instance.h"
#include "aoizora/sim/simulator.h"

namespace aoizora::sim {

struct CriticalPath {
  double seconds = 0;                     // the whole path
  std::vector<Contributor> contributors;  // largest first, at most `top` of them
};

// `labels` names the segments' labels (ops) and the plans' labels (collectives); `top` < 0
// keeps every contributor.
CriticalPath critical_path(const std::vector<ChipState>& chips,
                           const std::vector<Instance>& instances,
                           const std::vector<CollectivePlan>& plans,
                           const std::vector<std::string>& labels,
                           const hlo::CollectiveGraph& graph, int num_devices, int top);

}  // namespace aoizora::sim
