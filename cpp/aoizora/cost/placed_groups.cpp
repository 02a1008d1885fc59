#include "aoizora/cost/placed_groups.h"

#include <algorithm>
#include <map>

namespace aoizora::cost {

namespace {

// A partition's position along one (sub-)axis of the mesh: (p / stride) % size.
struct Digit {
  int64_t stride = 1;
  int64_t size = 1;
};

// A whole axis, or a Shardy sub-axis (the axis split major to minor as pre x size x rest,
// this the middle part).
std::optional<Digit> digit_of(const shlo::AxisRef& ref, const shlo::Mesh& mesh) {
  int64_t stride = 1;
  for (size_t k = mesh.axes.size(); k-- > 0;) {
    const shlo::MeshAxis& a = mesh.axes[k];
    if (a.name != ref.name) {
      stride *= a.size;
      continue;
    }
    if (ref.size <= 0) return Digit{stride, a.size};
    if (ref.pre <= 0 || a.size % (ref.pre * ref.size) != 0) return std::nullopt;
    return Digit{stride * (a.size / (ref.pre * ref.size)), ref.size};
  }
  return std::nullopt;
}

// Groups of partitions that differ only in `digits`, members in increasing partition id.
std::vector<std::vector<int>> groups_over(const std::vector<Digit>& digits, int64_t devices) {
  std::map<int64_t, std::vector<int>> by_rest;
  for (int64_t p = 0; p < devices; ++p) {
    int64_t rest = p;
    for (const Digit& d : digits) rest -= ((p / d.stride) % d.size) * d.stride;
    by_rest[rest].push_back(static_cast<int>(p));
  }
  std::vector<std::vector<int>> out;
  for (auto& [rest, g] : by_rest) out.push_back(std::move(g));
  return out;
}

}  // namespace

hlo::CollectiveKind to_hlo_kind(shlo::CommKind k) {
  switch (k) {
    case shlo::CommKind::kAllGather: return hlo::CollectiveKind::kAllGather;
    case shlo::CommKind::kAllReduce: return hlo::CollectiveKind::kAllReduce;
    case shlo::CommKind::kReduceScatter: return hlo::CollectiveKind::kReduceScatter;
    case shlo::CommKind::kAllToAll: return hlo::CollectiveKind::kAllToAll;
    case shlo::CommKind::kCollectivePermute: return hlo::CollectiveKind::kCollectivePermute;
    case shlo::CommKind::kCollectiveBroadcast: return hlo::CollectiveKind::kCollectiveBroadcast;
  }
  return hlo::CollectiveKind::kAllReduce;
}

bool placeable(const shlo::Mesh& mesh, const topo::Topology& t) {
  return mesh.name != "gspmd" && mesh.num_devices() == t.num_devices();
}

std::optional<hlo::Collective> logical_collective(const shlo::DagNode& n, const shlo::Mesh& mesh) {
  hlo::Collective c;
  c.kind = to_hlo_kind(n.comm);
  const int64_t devices = mesh.num_devices();
  auto in_range = [&](int64_t p) { return p >= 0 && p < devices; };
  if (!n.partition_groups.empty()) {
    for (const std::vector<int64_t>& g : n.partition_groups) {
      if (!std::all_of(g.begin(), g.end(), in_range)) return std::nullopt;
      if (n.comm == shlo::CommKind::kCollectivePermute) {
        if (g.size() != 2) return std::nullopt;
        c.source_target_pairs.emplace_back(static_cast<int>(g[0]), static_cast<int>(g[1]));
      } else {
        c.groups.emplace_back(g.begin(), g.end());
      }
    }
    return c;
  }
  if (n.comm == shlo::CommKind::kCollectivePermute) return std::nullopt;  // only explicit ones
  if (n.axes.empty() && n.group_size == devices) {  // an explicit one over every device
    c.groups.emplace_back();
    for (int p = 0; p < static_cast<int>(devices); ++p) c.groups.back().push_back(p);
    return c;
  }
  std::vector<Digit> digits;
  int64_t size = 1;
  for (const shlo::AxisRef& a : n.axes) {
    std::optional<Digit> d = digit_of(a, mesh);
    if (!d) return std::nullopt;
    digits.push_back(*d);
    size *= d->size;
  }
  if (size != std::max<int64_t>(n.group_size, 1)) return std::nullopt;
  c.groups = groups_over(digits, devices);
  return c;
}

PlacedGroupCosts::PlacedGroupCosts(const topo::Topology& t, const shlo::PredictionDag& dag,
                                   const shlo::Mesh& mesh)
    : topo_(t), pattern_of_(dag.nodes.size(), -1), loads_(t) {
  std::map<std::vector<int>, int> index;
  for (size_t i = 0; i < dag.nodes.size(); ++i) {
    const shlo::DagNode& n = dag.nodes[i];
    if (n.kind != shlo::DagNode::Kind::kComm) continue;
    std::optional<hlo::Collective> c = logical_collective(n, mesh);
    if (!c) continue;
    auto [it, fresh] = index.emplace(pattern_key(*c), static_cast<int>(patterns_.size()));
    if (fresh) patterns_.push_back(std::move(*c));
    pattern_of_[i] = it->second;
  }
  costs_.resize(patterns_.size());
}

void PlacedGroupCosts::place(const std::vector<int>& device_of) {
  for (size_t k = 0; k < patterns_.size(); ++k)
    costs_[k] = price_collective(patterns_[k], device_of, topo_, loads_);
}

}  // namespace aoizora::cost
