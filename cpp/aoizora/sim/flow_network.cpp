#include "aoizora/sim/flow_network.h"

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

void FlowNetwork::solve(double now) {
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
