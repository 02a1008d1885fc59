#include "aoizora/cost/q1.h"

#include <algorithm>
#include <limits>

namespace aoizora::cost {

double best_axis_bandwidth(int64_t k, const Q1Params& p) {
  if (k <= 1) return std::numeric_limits<double>::infinity();
  const double link = p.link_bandwidth;
  for (int d = 0; d < 3; ++d)
    if (p.slice_dims[d] == k && p.slice_wrap[d]) return 2 * link;
  if (k >= 4 && k % 2 == 0) {
    // A sub-grid a x b (a, b >= 2) of the slice holds a Hamiltonian cycle.
    for (int d = 0; d < 3; ++d)
      for (int e = d + 1; e < 3; ++e)
        for (int64_t a = 2; a <= p.slice_dims[d]; ++a)
          if (k % a == 0 && k / a >= 2 && k / a <= p.slice_dims[e]) return 2 * link;
  }
  return link;
}

namespace {

double axis_bw(const std::string& axis, int64_t k, const Q1Params& p) {
  auto it = p.axis_bandwidth.find(axis);
  if (it != p.axis_bandwidth.end()) return it->second;
  return best_axis_bandwidth(k, p);
}

}  // namespace

double collective_seconds(const shlo::DagNode& n, const shlo::MeshTable& meshes,
                          const std::string& mesh, const Q1Params& p) {
  using shlo::CommKind;
  const double k = static_cast<double>(std::max<int64_t>(n.group_size, 1));
  if (k <= 1 && n.comm != CommKind::kCollectivePermute) return 0;
  double bw = 0;
  const shlo::Mesh* m = meshes.find(mesh);
  for (const std::string& a : n.axes) {
    int64_t size = m ? m->axis_size(a.substr(0, a.find(':'))) : 0;
    if (size <= 0) size = static_cast<int64_t>(k);
    bw += axis_bw(a, size, p);
  }
  if (bw <= 0 || n.axes.empty()) bw = best_axis_bandwidth(static_cast<int64_t>(k), p);
  const double frac = (k - 1) / k;
  switch (n.comm) {
    case CommKind::kAllGather: return n.result_bytes * frac / bw + p.alpha * (k - 1);
    case CommKind::kReduceScatter: return n.operand_bytes * frac / bw + p.alpha * (k - 1);
    case CommKind::kAllReduce: return 2 * n.operand_bytes * frac / bw + p.alpha * 2 * (k - 1);
    case CommKind::kAllToAll: return n.operand_bytes * k / (4 * bw) + p.alpha * (k - 1);
    case CommKind::kCollectivePermute:
    case CommKind::kCollectiveBroadcast: return n.operand_bytes / p.link_bandwidth + p.alpha;
  }
  return 0;
}

double compute_seconds(const shlo::DagNode& n, const Q1Params& p) {
  return std::max(n.flops / p.peak_flops, n.bytes / p.hbm_bandwidth);
}

Q1Breakdown q1(const shlo::PredictionDag& dag, const Q1Params& p) {
  Q1Breakdown b;
  for (const shlo::DagNode& n : dag.nodes) {
    if (n.kind == shlo::DagNode::Kind::kCompute) {
      b.compute += compute_seconds(n, p) * n.repeat;
      continue;
    }
    double t = collective_seconds(n, dag.meshes, dag.mesh, p) * n.repeat;
    b.comm += t;
    (n.overlappable ? b.overlappable_comm : b.barrier_comm) += t;
    for (const std::string& a : n.axes) b.comm_by_axis[a] += t / static_cast<double>(n.axes.size());
  }
  b.q1 = std::max(b.compute, b.overlappable_comm) + b.barrier_comm;
  return b;
}

}  // namespace aoizora::cost
