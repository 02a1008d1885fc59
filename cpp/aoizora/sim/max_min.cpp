#include "aoizora/sim/max_min.h"

#include <algorithm>
#include <limits>

namespace aoizora::sim {

MaxMinSolver::MaxMinSolver(std::vector<double> capacity)
    : capacity_(std::move(capacity)),
      remaining_(capacity_.size(), 0.0),
      unfrozen_(capacity_.size(), 0),
      degree_(capacity_.size(), 0),
      offsets_(capacity_.size(), 0) {}

void MaxMinSolver::solve(std::span<const std::span<const int>> flow_links,
                         std::vector<double>& rates) {
  const int n = static_cast<int>(flow_links.size());
  rates.assign(n, std::numeric_limits<double>::infinity());
  frozen_.assign(n, 0);
  used_links_.clear();
  for (const auto& links : flow_links)
    for (int l : links)
      if (degree_[l]++ == 0) used_links_.push_back(l);
  if (used_links_.empty()) return;
  std::sort(used_links_.begin(), used_links_.end());

  int total = 0;
  for (int l : used_links_) {
    offsets_[l] = total;
    total += degree_[l];
    unfrozen_[l] = 0;  // doubles as the fill cursor, ends equal to degree_
    remaining_[l] = capacity_[l];
  }
  members_.resize(total);
  int left = 0;
  for (int i = 0; i < n; ++i) {
    if (!flow_links[i].empty()) ++left;
    for (int l : flow_links[i]) members_[offsets_[l] + unfrozen_[l]++] = i;
  }

  while (left > 0) {
    // The bottleneck: the link with the smallest fair share among its unfrozen flows.
    int best = -1;
    double best_share = std::numeric_limits<double>::infinity();
    for (int l : used_links_) {
      if (unfrozen_[l] == 0) continue;
      const double share = std::max(remaining_[l], 0.0) / unfrozen_[l];
      if (share < best_share) {
        best_share = share;
        best = l;
      }
    }
    if (best < 0) break;
    for (int k = offsets_[best], e = offsets_[best] + degree_[best]; k < e; ++k) {
      const int f = members_[k];
      if (frozen_[f]) continue;
      frozen_[f] = 1;
      rates[f] = best_share;
      --left;
      for (int l : flow_links[f]) {
        remaining_[l] -= best_share;
        --unfrozen_[l];
      }
    }
  }
  for (int l : used_links_) degree_[l] = 0;  // leave scratch clean for the next call
}

std::vector<double> max_min_rates(const std::vector<std::vector<int>>& flow_links,
                                  const std::vector<double>& capacity) {
  MaxMinSolver solver(capacity);
  std::vector<std::span<const int>> spans(flow_links.begin(), flow_links.end());
  std::vector<double> rates;
  solver.solve(spans, rates);
  return rates;
}

}  // namespace aoizora::sim
