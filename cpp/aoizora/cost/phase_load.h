// Link loads of collectives, phase by phase, and the time their phases take one after another.
// A phase is every flow that starts at the same step of its algorithm (generate_flows'
// first_step: a line phase of a grid collective, the scatter or gather half of an
// all-reduce, the whole of a ring). Phases run in sequence, so each is charged its own
// busiest link and the charges add up; flows of one phase (every group of a collective, and
// every collective running at the same time) share links. Q1 (best_group.cpp) and Q2
// (q2.cpp) both price communication this way; derivation in docs/cost-model.md.
//
// Holds no reference to the topology (it copies the inverse bandwidths). Not thread-safe:
// one per thread. clear() costs the links touched, not the whole fabric.
#pragma once

#include <vector>

#include "aoizora/topo/topology.h"

namespace aoizora::cost {

class PhaseLoads {
 public:
  explicit PhaseLoads(const topo::Topology& topology);

  // The slot of the phase whose flows start at algorithm step `first_step`, made on first use.
  int slot(int first_step);
  // Adds `bytes` (> 0) on link `link` in phase slot `s`.
  void add(int s, int link, double bytes) {
    if (bytes <= 0) return;
    double& b = bytes_[static_cast<size_t>(s)][static_cast<size_t>(link)];
    if (b == 0) touched_[static_cast<size_t>(s)].push_back(link);
    b += bytes;
  }
  // Sum over phases of max over links of bytes / bandwidth(link), seconds. A link of zero
  // bandwidth is free (as everywhere in cost/).
  double serial_seconds() const;
  // Calls f(first_step, link, bytes) for every loaded link of every phase, phases in slot
  // order, links in the order first loaded.
  template <typename F>
  void for_each(F&& f) const {
    for (int s = 0; s < used_; ++s)
      for (int l : touched_[static_cast<size_t>(s)])
        f(first_step_[static_cast<size_t>(s)], l, bytes_[static_cast<size_t>(s)][static_cast<size_t>(l)]);
  }
  // Forgets every load and phase.
  void clear();

 private:
  std::vector<double> inv_bw_;               // per link: 1 / bandwidth, 0 when bandwidth <= 0
  std::vector<int> first_step_;              // per slot
  std::vector<std::vector<double>> bytes_;   // per slot, per link
  std::vector<std::vector<int>> touched_;    // per slot: links with bytes > 0
  int used_ = 0;                             // slots in use (the rest are kept allocated)
};

}  // namespace aoizora::cost
