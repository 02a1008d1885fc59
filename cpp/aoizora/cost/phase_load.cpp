#include "aoizora/cost/phase_load.h"

#include <algorithm>

namespace aoizora::cost {

PhaseLoads::PhaseLoads(const topo::Topology& topology) {
  inv_bw_.resize(topology.links.size());
  for (size_t l = 0; l < topology.links.size(); ++l)
    inv_bw_[l] = topology.links[l].bandwidth > 0 ? 1.0 / topology.links[l].bandwidth : 0;
}

int PhaseLoads::slot(int first_step) {
  for (int s = 0; s < used_; ++s)
    if (first_step_[static_cast<size_t>(s)] == first_step) return s;
  if (static_cast<size_t>(used_) == bytes_.size()) {
    first_step_.push_back(0);
    bytes_.emplace_back(inv_bw_.size(), 0.0);
    touched_.emplace_back();
  }
  first_step_[static_cast<size_t>(used_)] = first_step;
  return used_++;
}

double PhaseLoads::serial_seconds() const {
  double total = 0;
  for (int s = 0; s < used_; ++s) {
    double busiest = 0;
    const std::vector<double>& bytes = bytes_[static_cast<size_t>(s)];
    for (int l : touched_[static_cast<size_t>(s)])
      busiest = std::max(busiest, bytes[static_cast<size_t>(l)] * inv_bw_[static_cast<size_t>(l)]);
    total += busiest;
  }
  return total;
}

void PhaseLoads::clear() {
  for (int s = 0; s < used_; ++s) {
    std::vector<double>& bytes = bytes_[static_cast<size_t>(s)];
    for (int l : touched_[static_cast<size_t>(s)]) bytes[static_cast<size_t>(l)] = 0;
    touched_[static_cast<size_t>(s)].clear();
  }
  used_ = 0;
}

}  // namespace aoizora::cost
