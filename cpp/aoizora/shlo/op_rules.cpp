// The per-op rules of the walk: for each op Stage 1 prices (dot_general, reduce,
// broadcast_in_dim, transpose, reshape, elementwise, shape ops, opaque custom_calls and
// explicit collectives), the sharding each operand is brought to, the sharding (and pending
// partial sums) of the result, and the node it costs: flops and MXU matmuls, per-device bytes
// read and written (0 for what XLA fuses away), or a collective's bytes and mesh axes.
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "aoizora/shlo/dag_builder_impl.h"
#include "aoizora/shlo/propagate.h"

namespace aoizora::shlo::detail {

compute::Matmul Builder::dot_matmul(const Op& op, const std::vector<TensorSharding>* sh) {
  const TensorType& lt = type(op.operands[0]);
  auto lc = attr_int_list(op.attrs, "contracting_dims", 0);
  if (!lc) lc = attr_int_list(op.attrs, "lhs_contracting_dimensions");
  auto lb = attr_int_list(op.attrs, "batching_dims", 0);
  if (!lb) lb = attr_int_list(op.attrs, "lhs_batching_dimensions");
  compute::Matmul mm{1, 1, 1, 1};
  std::vector<int64_t> ls = sh ? local_shape(dag_.meshes, lt, (*sh)[0]) : lt.shape;
  if (lc)
    for (int64_t d : *lc) mm.k *= static_cast<double>(ls.at(static_cast<size_t>(d)));
  const size_t batch = lb ? lb->size() : 0;
  const size_t lhs_free = ls.size() - batch - (lc ? lc->size() : 0);
  const TensorType& rt = type(op.results[0]);
  std::vector<int64_t> rs = sh ? local_shape(dag_.meshes, rt, (*sh)[1]) : rt.shape;
  for (size_t d = 0; d < rs.size(); ++d) {
    double& side = d < batch ? mm.count : d < batch + lhs_free ? mm.m : mm.n;
    side *= static_cast<double>(rs[d]);
  }
  return mm;
}

Status Builder::dot(const Op& op, double repeat) {
  int l = op.operands.at(0), r = op.operands.at(1), res = op.results.at(0);
  DotDims dims;
  auto get = [&](const char* pretty, int side, const char* generic) {
    auto v = attr_int_list(op.attrs, pretty, side);
    if (!v) v = attr_int_list(op.attrs, generic);
    return v.value_or(std::vector<int64_t>{});
  };
  dims.lhs_batch = get("batching_dims", 0, "lhs_batching_dimensions");
  dims.rhs_batch = get("batching_dims", 1, "rhs_batching_dimensions");
  dims.lhs_contract = get("contracting_dims", 0, "lhs_contracting_dimensions");
  dims.rhs_contract = get("contracting_dims", 1, "rhs_contracting_dimensions");
  resolve_partial(l, nullptr, op, repeat);
  resolve_partial(r, nullptr, op, repeat);
  DotRule rule = dot_rule(dag_.meshes, dims, type(l), state(l).sharding, type(r), state(r).sharding);
  int dl, dr;
  ShardState sl = bring(l, rule.lhs, op, repeat, CommOrigin::kReshard, &dl);
  ShardState sr = bring(r, rule.rhs, op, repeat, CommOrigin::kReshard, &dr);
  std::vector<TensorSharding> sh{sl.sharding, rule.result};
  const compute::Matmul mm = dot_matmul(op, &sh);
  ShardState out;
  out.sharding = rule.result;
  out.partial = rule.partial;
  out.from_inputs = sl.from_inputs && sr.from_inputs;
  double bytes = local_bytes(dag_.meshes, type(l), sl) + local_bytes(dag_.meshes, type(r), sr) +
                 local_bytes(dag_.meshes, type(res), out);
  DagNode c;
  c.flops = compute::matmul_flops(mm);
  c.matmuls = {mm};
  c.bytes = bytes;
  int node = emit(std::move(c), repeat, op, {dl, dr});
  define(res, out, node);
  origin_of_partial_[res] = CommOrigin::kContraction;
  return Status::success();
}

Status Builder::reduce(const Op& op, double repeat) {
  size_t nin = op.results.size();
  auto dims = attr_int_list(op.attrs, "dimensions").value_or(std::vector<int64_t>{});
  if (dims.empty()) dims = attr_int_list(op.attrs, "across dimensions").value_or(std::vector<int64_t>{});
  double bytes = 0, flops = 0;
  std::vector<int> deps;
  ShardState out;
  for (size_t k = 0; k < nin && k < op.operands.size(); ++k) {
    int v = op.operands[k];
    resolve_partial(v, nullptr, op, repeat);
    const ShardState& s = state(v);
    bytes += materialized(v) ? lbytes(v) : 0;
    flops += static_cast<double>(lbytes(v) / std::max(type(v).element_bytes, 0.5));
    deps.push_back(node_of_[static_cast<size_t>(v)]);
    if (k == 0) {
      out.from_inputs = s.from_inputs;
      out.sharding = replicated(mesh_, 0);
      for (size_t d = 0; d < s.sharding.dims.size(); ++d) {
        bool reduced = std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) != dims.end();
        if (reduced) {
          for (const AxisRef& a : s.sharding.dims[d].axes) out.partial.push_back(a);
        } else {
          out.sharding.dims.push_back(s.sharding.dims[d]);
        }
      }
    }
  }
  DagNode c;
  c.flops = flops;
  c.bytes = bytes;
  int node = emit(std::move(c), repeat, op, deps);
  for (int r : op.results) {
    define(r, out, node);
    origin_of_partial_[r] = CommOrigin::kReduction;
  }
  return Status::success();
}

Status Builder::broadcast(const Op& op, double repeat) {
  int v = op.operands.at(0), r = op.results.at(0);
  resolve_partial(v, nullptr, op, repeat);
  auto dims = attr_int_list(op.attrs, "dims");
  if (!dims) dims = attr_int_list(op.attrs, "broadcast_dimensions");
  ShardState out;
  out.from_inputs = state(v).from_inputs;
  out.sharding = replicated(mesh_, type(r).shape.size());
  if (dims)
    for (size_t k = 0; k < dims->size() && k < state(v).sharding.dims.size(); ++k) {
      size_t d = static_cast<size_t>((*dims)[k]);
      if (d < type(r).shape.size() && type(v).shape[k] == type(r).shape[d])
        out.sharding.dims[d] = state(v).sharding.dims[k];
    }
  const bool written = materialized(r) && !moves_nothing(op, "broadcast_in_dim");
  int node = compute(op, repeat, 0, written ? local_bytes(dag_.meshes, type(r), out) : 0);
  define(r, out, node >= 0 ? node : node_of_[static_cast<size_t>(v)]);
  return Status::success();
}

Status Builder::transpose(const Op& op, double repeat) {
  int v = op.operands.at(0), r = op.results.at(0);
  resolve_partial(v, nullptr, op, repeat);
  auto perm = attr_int_list(op.attrs, "dims");
  if (!perm) perm = attr_int_list(op.attrs, "permutation");
  ShardState out = state(v);
  out.sharding = replicated(mesh_, type(r).shape.size());
  if (perm)
    for (size_t d = 0; d < perm->size(); ++d)
      out.sharding.dims[d] = state(v).sharding.dims.at(static_cast<size_t>((*perm)[d]));
  double b = materialized(r) ? local_bytes(dag_.meshes, type(r), out) : 0;
  int node = compute(op, repeat, 0, 2 * b);
  define(r, out, node >= 0 ? node : node_of_[static_cast<size_t>(v)]);
  return Status::success();
}

Status Builder::reshape(const Op& op, double repeat) {
  int v = op.operands.at(0), r = op.results.at(0);
  resolve_partial(v, nullptr, op, repeat);
  ReshapeRule rule = reshape_rule(dag_.meshes, state(v).sharding, type(v).shape, type(r).shape);
  int dep;
  ShardState s = bring(v, rule.operand, op, repeat, CommOrigin::kReshard, &dep);
  ShardState out = s;
  out.sharding = rule.result;
  define(r, out, dep);
  return Status::success();
}

Status Builder::elementwise(const Op& op, double repeat) {
  // The most-sharded full-rank operand decides; the others are brought to it.
  int r = op.results.at(0);
  size_t rank = type(r).shape.size();
  const ShardState* best = nullptr;
  int64_t best_n = 0;
  for (int v : op.operands) {
    if (type(v).shape.size() != rank) continue;
    int64_t k = num_shards(dag_.meshes, state(v).sharding);
    if (!best || k > best_n) {
      best = &state(v);
      best_n = k;
    }
  }
  TensorSharding target = best ? best->sharding : replicated(mesh_, rank);
  if (!best)
    for (int v : op.operands)
      if (type(v).shape.size() == rank) {
        target = state(v).sharding;
        break;
      }
  ShardState out;
  out.sharding = target;
  out.from_inputs = inputs_only(op);
  std::vector<int> deps;
  double bytes = 0;
  for (int v : op.operands) {
    if (type(v).shape.size() != rank) {
      deps.push_back(node_of_[static_cast<size_t>(v)]);
      continue;
    }
    resolve_partial(v, &target, op, repeat);
    int dep;
    ShardState s = bring(v, target, op, repeat, CommOrigin::kReshard, &dep);
    deps.push_back(dep);
    bytes += materialized(v) ? local_bytes(dag_.meshes, type(v), s) : 0;
  }
  double lb = local_bytes(dag_.meshes, type(r), out);
  bytes += materialized(r) ? lb : 0;
  DagNode c;
  c.flops = lb / std::max(type(r).element_bytes, 0.5);
  c.bytes = bytes;
  int node = emit(std::move(c), repeat, op, deps);
  for (int res : op.results) define(res, out, node);
  return Status::success();
}

Status Builder::shape_op(const Op& op, std::string_view n, double repeat) {
  if (op.results.empty()) return Status::success();
  int r = op.results.at(0);
  if (moves_nothing(op, n)) {  // the operand itself, in its sharding
    int v = op.operands[0];
    resolve_partial(v, nullptr, op, repeat);
    define(r, state(v), node_of_[static_cast<size_t>(v)]);
    return Status::success();
  }
  std::vector<int> deps;
  double bytes = 0;
  ShardState out;
  out.sharding = replicated(mesh_, type(r).shape.size());
  out.from_inputs = inputs_only(op);
  bool first = true;
  for (int v : op.operands) {
    resolve_partial(v, nullptr, op, repeat);
    if (type(v).shape.size() != type(r).shape.size() || type(v).shape.empty()) {
      deps.push_back(node_of_[static_cast<size_t>(v)]);
      bytes += lbytes(v);
      continue;
    }
    TensorSharding want = state(v).sharding;
    for (size_t d = 0; d < want.dims.size(); ++d)
      if (type(v).shape[d] != type(r).shape[d]) want.dims[d].axes.clear();
    if (!first) want = out.sharding;
    int dep;
    ShardState s = bring(v, want, op, repeat, CommOrigin::kReshard, &dep);
    deps.push_back(dep);
    // A slice reads only what it keeps.
    if (!(first && (n == "slice" || n == "dynamic_slice" || n == "gather")))
      bytes += local_bytes(dag_.meshes, type(v), s);
    if (first) out.sharding = want;
    first = false;
  }
  if (first && !op.operands.empty() && !is_known_shape_op(n)) warn(std::string(n));
  for (int res : op.results) bytes += local_bytes(dag_.meshes, type(res), out);
  if ((n == "dynamic_update_slice" || n == "scatter") && op.operands.size() > 1)
    bytes = 2 * local_bytes(dag_.meshes, type(op.operands[1]), state(op.operands[1]));  // in place
  DagNode c;
  c.bytes = bytes;
  int node = emit(std::move(c), repeat, op, deps);
  for (int res : op.results) {
    ShardState s = out;
    s.sharding = replicated(mesh_, type(res).shape.size());
    if (type(res).shape.size() == out.sharding.dims.size()) s.sharding = out.sharding;
    define(res, s, node);
  }
  return Status::success();
}

bool Builder::moves_nothing(const Op& op, std::string_view n) const {
  if (op.operands.empty() || op.results.size() != 1) return false;
  const TensorType& in = type(op.operands[0]);
  const TensorType& out = type(op.results[0]);
  if (n == "broadcast_in_dim") return in.num_elements() == out.num_elements();
  if (n == "pad" || n == "slice") return in.shape == out.shape;
  return false;
}

bool Builder::is_known_shape_op(std::string_view n) {
  return n == "gather" || n == "scatter" || n == "dynamic_slice" || n == "dynamic_update_slice" ||
         n == "slice" || n == "pad" || n == "concatenate" || n == "sort" || n == "reduce_window" ||
         n == "rng_bit_generator" || n == "rng" || n == "get_tuple_element" || n == "tuple";
}

Status Builder::opaque(const Op& op, double repeat) {
  // An opaque kernel: its operands must arrive in the sharding it is annotated with (the
  // results' sharding for same-rank operands), else whole.
  std::optional<TensorSharding> ann;
  if (!op.results.empty()) ann = m_.values[static_cast<size_t>(op.results[0])].sharding;
  std::vector<int> deps;
  double bytes = 0;
  for (int v : op.operands) {
    resolve_partial(v, nullptr, op, repeat);
    TensorSharding want = replicated(mesh_, type(v).shape.size());
    if (ann && !op.results.empty() && type(v).shape.size() == type(op.results[0]).shape.size())
      want = normalize(ann, type(v).shape.size());
    int dep;
    ShardState s = bring(v, want, op, repeat, CommOrigin::kCustomCall, &dep);
    deps.push_back(dep);
    bytes += local_bytes(dag_.meshes, type(v), s);
  }
  ShardState out;
  out.from_inputs = inputs_only(op);
  for (int r : op.results) bytes += local_bytes(dag_.meshes, type(r), ShardState{normalize(ann, type(r).shape.size()), {}, false, true});
  DagNode c;
  c.bytes = bytes;
  c.opaque = true;
  int node = emit(std::move(c), repeat, op, deps);
  warn("custom_call @" + op.callee + " (opaque: FLOPs unknown)");
  for (int r : op.results) {
    out.sharding = normalize(m_.values[static_cast<size_t>(r)].sharding, type(r).shape.size());
    define(r, out, node);
  }
  return Status::success();
}

namespace {

// The device-id stride of a GSPMD synthetic axis, named "s<stride>x<size>" (sharding.h); any
// other name (a user's "sx" or "seq_x") is nullopt.
std::optional<int64_t> synthetic_axis_stride(const std::string& name) {
  const size_t x = name.find('x');
  if (name.empty() || name[0] != 's' || x == std::string::npos) return std::nullopt;
  // Both numbers whole and positive: from_chars takes digits (and a '-') and stops at 'x'.
  int64_t stride = 0, size = 0;
  const char* mid = name.data() + x;
  const char* end = name.data() + name.size();
  const auto s = std::from_chars(name.data() + 1, mid, stride);
  const auto z = std::from_chars(mid + 1, end, size);
  if (s.ec != std::errc() || s.ptr != mid || z.ec != std::errc() || z.ptr != end ||
      stride <= 0 || size <= 0)
    return std::nullopt;
  return stride;
}

}  // namespace

std::vector<AxisRef> Builder::axes_of_group(const std::vector<int64_t>& g, int64_t* size) {
  std::vector<AxisRef> out;
  const Mesh* mesh = dag_.meshes.find(mesh_);
  *size = static_cast<int64_t>(g.size());
  if (!mesh) return out;
  int64_t stride = 1;
  std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> axes;  // name, stride, size
  for (size_t k = mesh->axes.size(); k-- > 0;) {
    const MeshAxis& a = mesh->axes[k];
    const int64_t st = synthetic_axis_stride(a.name).value_or(stride);
    axes.push_back({a.name, {st, a.size}});
    stride *= a.size;
  }
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
    auto [st, sz] = it->second;
    for (int64_t id : g)
      if ((id / st) % sz != (g[0] / st) % sz) {
        out.push_back(AxisRef{it->first});
        break;
      }
  }
  return out;
}

namespace {

// The length of the cycle through a permute's first source (2 when its pairs close none).
int64_t cycle_length(const std::vector<std::vector<int64_t>>& pairs) {
  std::map<int64_t, int64_t> next;
  for (const auto& p : pairs)
    if (p.size() == 2) next[p[0]] = p[1];
  if (next.empty()) return 2;
  const int64_t start = next.begin()->first;
  int64_t at = start, length = 0;
  do {
    auto it = next.find(at);
    if (it == next.end() || length > static_cast<int64_t>(next.size())) return 2;
    at = it->second;
    ++length;
  } while (at != start);
  return std::max<int64_t>(length, 2);
}

}  // namespace

Status Builder::collective(const Op& op, std::string_view n, double repeat) {
  int v = op.operands.at(0);
  DagNode c;
  c.kind = DagNode::Kind::kComm;
  c.origin = CommOrigin::kExplicit;
  double in = state(v).manual ? type(v).bytes() : lbytes(v);
  int r = op.results.empty() ? -1 : op.results[0];
  double outb = r < 0 ? in : (state(v).manual ? type(r).bytes() : local_bytes(dag_.meshes, type(r), state(v)));
  if (n == "collective_permute") {
    c.comm = CommKind::kCollectivePermute;
    auto pairs = attr_dense_2d(op.attrs, "source_target_pairs").value_or(std::vector<std::vector<int64_t>>{});
    std::set<std::string> ax;
    for (const auto& p : pairs) {
      int64_t sz;
      if (p.size() == 2)
        for (const AxisRef& a : axes_of_group(p, &sz)) ax.insert(a.name);
    }
    for (const std::string& a : ax) c.axes.push_back(AxisRef{a});
    c.group_size = 2;
    c.cycle_length = cycle_length(pairs);
    c.overlappable = true;
    c.partition_groups = std::move(pairs);
  } else {
    c.comm = n == "all_reduce" ? CommKind::kAllReduce
           : n == "all_gather" ? CommKind::kAllGather
           : n == "reduce_scatter" ? CommKind::kReduceScatter
           : n == "all_to_all" ? CommKind::kAllToAll : CommKind::kCollectiveBroadcast;
    auto groups = attr_dense_2d(op.attrs, "replica_groups").value_or(std::vector<std::vector<int64_t>>{});
    if (!groups.empty()) c.axes = axes_of_group(groups[0], &c.group_size);
    else c.group_size = dag_.num_devices;
    c.partition_groups = std::move(groups);
  }
  // XLA moves a narrowing convert that is the collective's only user in front of it
  // (data-movement collectives only: a sum must stay in the wide type).
  if (r >= 0 && n != "all_reduce" && n != "reduce_scatter" && col_.users_count[static_cast<size_t>(r)] == 1) {
    const Op* u = col_.first_user[static_cast<size_t>(r)];
    if (u && short_name(u->name) == "convert" && !u->results.empty()) {
      double ratio = type(u->results[0]).element_bytes / std::max(type(r).element_bytes, 0.5);
      if (ratio < 1) {
        in *= ratio;
        outb *= ratio;
      }
    }
  }
  c.operand_bytes = in;
  c.result_bytes = outb;
  int node = emit(std::move(c), repeat, op, {node_of_[static_cast<size_t>(v)]});
  for (int res : op.results) {
    ShardState s = state(v);
    s.from_inputs = false;
    define(res, s, node);
  }
  return Status::success();
}

}  // namespace aoizora::shlo::detail
