// One execution of a collective on one of its groups, as the engine plays it: members
// arrive, the flows of each member's steps are released once its previous step's inflows
// are delivered, and a member's part is over once all its flows are delivered.
#pragma once

#include <vector>

namespace aoizora::sim {

struct Instance {
  int collective = 0;
  int group = 0;
  int arrived = 0;
  double last_arrival = -1;
  int last_arriver = -1;     // chip
  double t0 = -1;            // every member arrived
  std::vector<int> next_step;              // per track (GroupPlan: member x lane)
  std::vector<std::vector<int>> pending;   // per track per step: undelivered inflows
  std::vector<std::vector<int>> unsent;    // per track per step: outflows not yet drained
  std::vector<int> member_left;            // per member: its flows not yet delivered
  std::vector<char> member_done;           // per member: its part is over
  int flows_left = 0;
  bool done = false;
  double end = 0;
  double weight = 1;         // how many executions it stands for (extrapolated loops)
  std::vector<int> waiters;  // chips blocked on it
};

}  // namespace aoizora::sim
