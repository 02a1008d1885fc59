#include "aoizora/sim/critical_path.h"

#include <algorithm>

namespace aoizora::sim {

CriticalPath critical_path(const std::vector<ChipState>& chips,
                           const std::vector<Instance>& instances,
                           const std::vector<CollectivePlan>& plans,
                           const std::vector<std::string>& labels,
                           const hlo::CollectiveGraph& graph, int num_devices, int top) {
  CriticalPath path;
  if (chips.empty()) return path;
  int ci = 0;
  for (int i = 1; i < static_cast<int>(chips.size()); ++i)
    if (chips[i].finish > chips[ci].finish) ci = i;
  std::vector<int> chip_index(num_devices, -1);
  for (int i = 0; i < static_cast<int>(chips.size()); ++i) chip_index[chips[i].chip] = i;
  std::vector<double> by_label(labels.size() + 1, 0.0);
  std::vector<std::string> kind_of(labels.size() + 1, "compute");
  double t = chips[ci].finish;
  double total = 0;
  for (int64_t guard = 0; t > 0 && guard < 100000000; ++guard) {
    const std::vector<Segment>& segs = chips[ci].segments;
    // The last segment that starts before t.
    auto it = std::lower_bound(segs.begin(), segs.end(), t,
                               [](const Segment& s, double v) { return s.start < v; });
    if (it == segs.begin()) break;
    const Segment& seg = *(it - 1);
    const double end = std::min(seg.end, t);
    if (seg.kind == SegKind::kCompute) {
      by_label[seg.label] += (end - seg.start) * seg.weight;
      total += (end - seg.start) * seg.weight;
      t = seg.start;
    } else if (seg.kind == SegKind::kJump) {
      t = seg.start;
    } else {
      const Instance& in = instances[seg.label];
      const int lab = plans[in.collective].label;
      kind_of[lab] = std::string(hlo::to_string(graph.collectives[in.collective].kind));
      const double comm = std::max(0.0, end - std::max(seg.start, in.t0));
      by_label[lab] += comm * seg.weight;
      total += comm * seg.weight;
      if (in.t0 > seg.start && in.last_arriver >= 0 && chip_index[in.last_arriver] != ci) {
        ci = chip_index[in.last_arriver];
        t = in.t0;
      } else {
        t = seg.start;
      }
    }
  }
  path.seconds = total;
  for (size_t l = 0; l < labels.size(); ++l)
    if (by_label[l] > 0) path.contributors.push_back({labels[l], kind_of[l], by_label[l]});
  std::stable_sort(path.contributors.begin(), path.contributors.end(),
                   [](const Contributor& a, const Contributor& b) {
                     return a.seconds != b.seconds ? a.seconds > b.seconds : a.name < b.name;
                   });
  if (top >= 0 && static_cast<int>(path.contributors.size()) > top)
    path.contributors.resize(top);
  return path;
}

}  // namespace aoizora::sim
