#include "aoizora/sim/flow_network.h"

#include <algorithm>
#include <limits>

namespace aoizora::sim {

namespace {

std::vector<double> capacities(const topo::Topology& t) {
  std::vector<double> cap(t.links.size());
  for (size_t i = 0; i < t.links.size(); ++i)
    cap[i] = t.links[i].bandwidth > 0 ? t.links[i].bandwidth : t.spec.link_bandwidth;
  return cap;
}

}  // namespace

FlowNetwork::FlowNetwork(const topo::Topology& topology, const RouteTable& routes,
                         Timeline* timeline)
    : routes_(routes), solver_(capacities(topology)), timeline_(timeline),
      link_load_(topology.links.size(), 0.0) {}

void FlowNetwork::add(int inst, int flow, int route, double bytes) {
  active_.push_back(ActiveFlow{inst, flow, route, bytes, 0});
  changed_ = true;
}

double FlowNetwork::next_drain(double last) const {
  double t = std::numeric_limits<double>::infinity();
  for (const ActiveFlow& a : active_)
    if (a.rate > 0) t = std::min(t, last + a.remaining / a.rate);
  return t;
}

void FlowNetwork::advance(double dt, double t, std::vector<ActiveFlow>& drained) {
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

void FlowNetwork::solve_if_changed(double now) {
  if (!changed_) return;
  changed_ = false;
  span_scratch_.clear();
  for (const ActiveFlow& a : active_) span_scratch_.push_back(routes_.links(a.route));
  solver_.solve(span_scratch_, rate_scratch_);
  for (size_t i = 0; i < active_.size(); ++i) active_[i].rate = rate_scratch_[i];
  if (!timeline_) return;
  std::vector<double> load(link_load_.size(), 0.0);
  for (size_t i = 0; i < active_.size(); ++i)
    for (int l : span_scratch_[i]) load[l] += active_[i].rate;
  for (size_t l = 0; l < load.size(); ++l)
    if (load[l] != link_load_[l]) {
      timeline_->links.push_back({static_cast<int>(l), now, load[l]});
      link_load_[l] = load[l];
    }
}

}  // namespace aoizora::sim
