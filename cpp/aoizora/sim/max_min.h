// Max-min fair bandwidth sharing (progressive filling). Every flow crosses a set of directed
// links; the rates it returns are the unique max-min fair allocation: no flow can get more
// without taking from a flow that has no more than it. Flows are raised together until a
// link saturates; the flows on it freeze at its fair share, and the rest go on filling.
#pragma once

#include <span>
#include <vector>

namespace aoizora::sim {

// Reusable solver; keeps scratch space between calls so the event loop does not allocate.
class MaxMinSolver {
 public:
  // capacity[l] = bytes/s of link l (> 0).
  explicit MaxMinSolver(std::vector<double> capacity);

  // rates[i] = fair rate of flow i, whose links are flow_links[i]. A flow with no links is
  // unconstrained and gets +infinity. Deterministic: ties freeze the lowest link id first.
  void solve(std::span<const std::span<const int>> flow_links, std::vector<double>& rates);

  const std::vector<double>& capacity() const { return capacity_; }

 private:
  std::vector<double> capacity_;
  std::vector<double> remaining_;
  std::vector<int> unfrozen_;        // per link: flows on it not yet frozen
  std::vector<int> degree_;          // per link: flows on it
  std::vector<int> offsets_;         // per link: start of its flows in members_
  std::vector<int> members_;         // flows grouped by link
  std::vector<int> used_links_;      // links some flow crosses, ascending
  std::vector<char> frozen_;
};

// Convenience for tests and one-off use.
std::vector<double> max_min_rates(const std::vector<std::vector<int>>& flow_links,
                                  const std::vector<double>& capacity);

}  // namespace aoizora::sim
