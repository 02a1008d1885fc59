#include "aoizora/stage1/top_k.h"

#include <algorithm>
#include <cmath>

namespace aoizora::stage1 {

std::vector<int> select_top_k(const std::vector<double>& q1, int k) {
  std::vector<int> idx;
  for (size_t i = 0; i < q1.size(); ++i)
    if (std::isfinite(q1[i]) && q1[i] >= 0) idx.push_back(static_cast<int>(i));
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return q1[static_cast<size_t>(a)] < q1[static_cast<size_t>(b)]; });
  if (k > 0 && static_cast<size_t>(k) < idx.size()) idx.resize(static_cast<size_t>(k));
  return idx;
}

int k_from_recall(const std::vector<int>& winner_ranks, int min_k, int slack) {
  int worst = -1;
  for (int r : winner_ranks) worst = std::max(worst, r);
  return std::max(min_k, worst + 1 + slack);
}

}  // namespace aoizora::stage1
