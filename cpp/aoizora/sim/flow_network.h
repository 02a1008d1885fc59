// The flows on the wire. Each active flow has bytes left and a max-min fair rate over the
// links of its route (MaxMinSolver, link capacities from the topology); rates are solved
// again, at the next solve_if_changed(), after any flow starts or drains. With a timeline,
// every change of a link's total rate is recorded. Knows nothing of collectives: a flow is
// (instance, flow id) to it, handed back when it drains.
#pragma once

#include <algorithm>
#include <limits>
#include <span>
#include <vector>

#include "aoizora/sim/collective_lowering.h"
#include "aoizora/sim/max_min.h"
#include "aoizora/sim/timeline.h"
#include "aoizora/topo/topology.h"

namespace aoizora::sim {

struct ActiveFlow {
  int inst = 0;
  int flow = 0;
  int route = 0;          // RouteTable id
  double remaining = 0;   // bytes
  double rate = 0;        // bytes/s
};

class FlowNetwork {
 public:
  // `timeline` (may be null) receives link rate samples.
  FlowNetwork(const topo::Topology& topology, const RouteTable& routes, Timeline* timeline);

  void add(int inst, int flow, int route, double bytes) {
    active_.push_back(ActiveFlow{inst, flow, route, bytes, 0});
    changed_ = true;
  }
  // The earliest time an active flow drains, given they were last advanced to `last`;
  // +infinity when none is moving.
  double next_drain(double last) const {
    double t = std::numeric_limits<double>::infinity();
    for (const ActiveFlow& a : active_)
      if (a.rate > 0) t = std::min(t, last + a.remaining / a.rate);
    return t;
  }
  // Moves every flow on by dt to time t; those drained (to a relative tolerance) are removed
  // and appended to `drained`.
  void advance(double dt, double t, std::vector<ActiveFlow>& drained) {
    const double tol = 1e-12 * std::max(t, 1e-9);
    size_t keep = 0;
    for (size_t i = 0; i < active_.size(); ++i) {
      ActiveFlow a = active_[i];
      a.remaining -= a.rate * dt;
      if (a.remaining <= 0 || (a.rate > 0 && a.remaining / a.rate <= tol)) {
        drained.push_back(a);
        changed_ = true;
      } else {
        active_[keep++] = a;
      }
    }
    active_.resize(keep);
  }
  // Re-solves the rates at `now` if a flow started or drained since the last solve.
  void solve_if_changed(double now) {
    if (changed_) solve(now);
  }

  const std::vector<double>& capacity() const { return solver_.capacity(); }

 private:
  void solve(double now);

  const RouteTable& routes_;
  MaxMinSolver solver_;
  Timeline* timeline_;
  std::vector<ActiveFlow> active_;
  bool changed_ = false;
  std::vector<std::span<const int>> span_scratch_;
  std::vector<double> rate_scratch_;
  std::vector<double> link_load_;  // per link: the last recorded total rate
};

}  // namespace aoizora::sim
