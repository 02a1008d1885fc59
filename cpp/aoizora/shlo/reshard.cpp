#include "aoizora/shlo/reshard.h"

#include <algorithm>

namespace aoizora::shlo {

namespace {

int dim_of(const TensorSharding& s, const AxisRef& a) {
  for (size_t d = 0; d < s.dims.size(); ++d)
    if (std::find(s.dims[d].axes.begin(), s.dims[d].axes.end(), a) != s.dims[d].axes.end())
      return static_cast<int>(d);
  return -1;
}

DagNode comm(CommKind kind, const MeshTable& meshes, const std::string& mesh,
             const std::vector<AxisRef>& axes, double operand, double result) {
  DagNode n;
  n.kind = DagNode::Kind::kComm;
  n.comm = kind;
  n.group_size = 1;
  for (const AxisRef& a : axes) {
    n.axes.push_back(a);
    n.group_size *= meshes.size_of(mesh, a);
  }
  n.operand_bytes = operand;
  n.result_bytes = result;
  return n;
}

}  // namespace

std::vector<DagNode> reshard(const MeshTable& meshes, const TensorType& type,
                             const ShardState& from, const TensorSharding& to_in) {
  std::vector<DagNode> out;
  if (from.manual) return out;
  ShardState cur = from;
  const std::string mesh = !cur.sharding.mesh.empty() ? cur.sharding.mesh : to_in.mesh;
  cur.sharding.mesh = mesh;
  cur.sharding.dims.resize(type.shape.size());
  TensorSharding to = to_in;
  to.mesh = mesh;
  to.dims.resize(type.shape.size());
  auto size_of = [&](const std::vector<AxisRef>& axes) {
    int64_t n = 1;
    for (const AxisRef& a : axes) n *= meshes.size_of(mesh, a);
    return static_cast<double>(n);
  };
  // 1. Pending partial sums: reduce-scatter onto dims the target shards by those axes,
  //    all-reduce over the rest.
  if (!cur.partial.empty()) {
    std::vector<AxisRef> rs, ar;
    for (const AxisRef& a : cur.partial) {
      int td = dim_of(to, a);
      if (td >= 0 && dim_of(cur.sharding, a) < 0) rs.push_back(a);
      else ar.push_back(a);
    }
    if (!rs.empty()) {
      double before = local_bytes(meshes, type, cur);
      for (const AxisRef& a : rs) cur.sharding.dims[static_cast<size_t>(dim_of(to, a))].axes.push_back(a);
      out.push_back(comm(CommKind::kReduceScatter, meshes, mesh, rs, before, before / size_of(rs)));
    }
    if (!ar.empty()) {
      double b = local_bytes(meshes, type, cur);
      out.push_back(comm(CommKind::kAllReduce, meshes, mesh, ar, b, b));
    }
    cur.partial.clear();
  }
  // 2. Axes that change dimension (all-to-all) or disappear (all-gather).
  std::vector<AxisRef> moved, gathered;
  for (size_t d = 0; d < cur.sharding.dims.size(); ++d) {
    const auto& axes = cur.sharding.dims[d].axes;
    for (size_t k = 0; k < axes.size(); ++k) {
      int td = dim_of(to, axes[k]);
      if (td < 0) {
        gathered.push_back(axes[k]);
      } else if (static_cast<size_t>(td) != d) {
        moved.push_back(axes[k]);
      } else {
        // Same dim: a different major-to-minor position also reorders the tiles.
        const auto& taxes = to.dims[d].axes;
        size_t tk = static_cast<size_t>(std::find(taxes.begin(), taxes.end(), axes[k]) - taxes.begin());
        if (tk != k && axes.size() > 1) moved.push_back(axes[k]);
      }
    }
  }
  if (!moved.empty()) {
    double b = local_bytes(meshes, type, cur);
    out.push_back(comm(CommKind::kAllToAll, meshes, mesh, moved, b, b));
    for (const AxisRef& a : moved) {
      for (auto& dim : cur.sharding.dims) dim.axes.erase(std::remove(dim.axes.begin(), dim.axes.end(), a), dim.axes.end());
      cur.sharding.dims[static_cast<size_t>(dim_of(to, a))].axes.push_back(a);
    }
  }
  if (!gathered.empty()) {
    double b = local_bytes(meshes, type, cur);
    out.push_back(comm(CommKind::kAllGather, meshes, mesh, gathered, b, b * size_of(gathered)));
  }
  return out;
}

double moved_bytes(const std::vector<DagNode>& nodes) {
  double b = 0;
  for (const DagNode& n : nodes) {
    double k = static_cast<double>(std::max<int64_t>(n.group_size, 1));
    double f = (k - 1) / k;
    switch (n.comm) {
      case CommKind::kAllGather: b += n.result_bytes * f; break;
      case CommKind::kAllReduce: b += 2 * n.operand_bytes * f; break;
      default: b += n.operand_bytes * f; break;
    }
  }
  return b;
}

}  // namespace aoizora::shlo
