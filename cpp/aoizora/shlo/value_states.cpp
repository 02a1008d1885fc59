// What the walk knows of each value: its sharding state (ShardState: sharding, pending
// partial-sum axes, manual, from inputs) and the DAG node that produces it. An op that needs
// an operand in another sharding brings it there: the implicit communication (reshard.h) is
// emitted as nodes the op depends on, and the copy is counted as the op's transient memory;
// partial sums are resolved in place (all-reduce or reduce-scatter) before the value is read.
#include <algorithm>
#include <optional>

#include "aoizora/shlo/dag_builder_impl.h"
#include "aoizora/shlo/propagate.h"
#include "aoizora/shlo/reshard.h"

namespace aoizora::shlo::detail {
namespace {

// Ops XLA fuses into their consumers without writing the result to HBM.
bool fusible_producer(std::string_view n) {
  return is_elementwise(n) || n == "broadcast_in_dim" || n == "constant" || n == "iota" ||
         n == "reshape" || n == "region-arg";
}

}  // namespace

TensorSharding Builder::normalize(const std::optional<TensorSharding>& s, size_t rank) const {
  TensorSharding t = s ? *s : replicated(mesh_, rank);
  if (t.mesh.empty() || !dag_.meshes.find(t.mesh) || dag_.meshes.find(t.mesh)->axes.empty()) t.mesh = mesh_;
  t.dims.resize(rank);
  t.manual = false;
  return t;
}

ShardState& Builder::state(int v) {
  auto& s = st_[static_cast<size_t>(v)];
  if (!s) {
    ShardState r;
    r.sharding = replicated(mesh_, type(v).shape.size());
    s = r;
  }
  return *s;
}

double Builder::lbytes(int v) { return local_bytes(dag_.meshes, type(v), state(v)); }

bool Builder::materialized(int v) const {
  std::string_view p = col_.producer[static_cast<size_t>(v)];
  return !(fusible_producer(p) && col_.all_users_fuse[static_cast<size_t>(v)]);
}

bool Builder::gathered_for_layout(int v) const {
  return col_.producer[static_cast<size_t>(v)] == "all_gather" &&
         col_.users_count[static_cast<size_t>(v)] == 1;
}

int Builder::emit(DagNode n, double repeat, const Op& op, const std::vector<int>& deps) {
  n.op = op.name;
  n.line = op.line;
  n.repeat = repeat;
  for (int d : deps)
    if (d >= 0) n.deps.push_back(d);
  dag_.nodes.push_back(std::move(n));
  return static_cast<int>(dag_.nodes.size()) - 1;
}

int Builder::compute(const Op& op, double repeat, double flops, double bytes, bool opaque,
                     std::vector<compute::Matmul> matmuls) {
  if (flops <= 0 && bytes <= 0 && !opaque) return -1;
  DagNode n;
  n.flops = flops;
  n.matmuls = std::move(matmuls);
  n.bytes = bytes;
  n.opaque = opaque;
  std::vector<int> deps;
  for (int v : op.operands) deps.push_back(node_of_[static_cast<size_t>(v)]);
  return emit(std::move(n), repeat, op, deps);
}

ShardState Builder::bring(int v, const TensorSharding& to, const Op& op, double repeat,
                          CommOrigin origin, int* dep) {
  ShardState from = state(v);
  *dep = node_of_[static_cast<size_t>(v)];
  ShardState out = from;
  if (from.manual || type(v).shape.empty()) {
    out.partial.clear();
    return out;
  }
  std::vector<DagNode> comms = reshard(dag_.meshes, type(v), from, to);
  for (DagNode& c : comms) {
    if (c.comm == CommKind::kReduceScatter || c.comm == CommKind::kAllReduce) {
      c.origin = origin_of_partial_[v];
    } else {
      c.origin = origin;
    }
    c.overlappable = from.from_inputs && from.partial.empty();
    c.detail = m_.values[static_cast<size_t>(v)].name + " " + to_string(from.sharding) +
               (from.partial.empty() ? "" : " partial") + " -> " + to_string(to);
    *dep = emit(std::move(c), repeat, op, {*dep});
  }
  out.sharding = normalize(to, type(v).shape.size());
  out.partial.clear();
  if (!comms.empty()) {
    mem_.add_extra(local_bytes(dag_.meshes, type(v), out));  // the resharded copy, live until the op is done
    temp_ += local_bytes(dag_.meshes, type(v), out);
  }
  return out;
}

void Builder::resolve_partial(int v, const TensorSharding* want, const Op& op, double repeat) {
  ShardState& s = state(v);
  if (s.partial.empty()) return;
  // Only the partial axes move: onto the dim the consumer shards by them (reduce-scatter),
  // else summed in place (all-reduce). Everything else stays as it is.
  // Where the consumer does not say, the sharding a later constraint asks for (hint).
  TensorSharding to = s.sharding;
  std::vector<const TensorSharding*> prefs;
  if (want) prefs.push_back(want);
  if (hint_[static_cast<size_t>(v)]) prefs.push_back(&*hint_[static_cast<size_t>(v)]);
  for (int r : op.results)
    if (hint_[static_cast<size_t>(r)] && type(r).shape.size() == type(v).shape.size())
      prefs.push_back(&*hint_[static_cast<size_t>(r)]);
  for (const AxisRef& a : s.partial) {
    bool placed = false;
    for (const TensorSharding* p : prefs) {
      for (size_t d = 0; d < p->dims.size() && d < to.dims.size() && !placed; ++d)
        if (std::find(p->dims[d].axes.begin(), p->dims[d].axes.end(), a) != p->dims[d].axes.end()) {
          to.dims[d].axes.push_back(a);
          placed = true;
        }
      if (placed) break;
    }
  }
  int dep;
  const double extra = mem_.extra(), temp = temp_;
  ShardState r = bring(v, to, op, repeat, CommOrigin::kContraction, &dep);
  mem_.set_extra(extra);  // resolved in place: no extra copy
  temp_ = temp;
  if (mem_.live_bytes(v) > 0) {  // the value now has its resolved size
    double b = local_bytes(dag_.meshes, type(v), r);
    mem_.resize(v, b);
  }
  st_[static_cast<size_t>(v)] = r;
  node_of_[static_cast<size_t>(v)] = dep;
}

void Builder::define(int v, ShardState s, int node) {
  s.sharding = s.manual ? s.sharding : normalize(s.sharding, type(v).shape.size());
  st_[static_cast<size_t>(v)] = s;
  node_of_[static_cast<size_t>(v)] = node;
  mem_.alloc(v, materialized(v) ? local_bytes(dag_.meshes, type(v), s) : 0.0,
             col_.users_count[static_cast<size_t>(v)]);
}

void Builder::define_alias(int v, ShardState s, int node) {
  s.sharding = s.manual ? s.sharding : normalize(s.sharding, type(v).shape.size());
  st_[static_cast<size_t>(v)] = s;
  node_of_[static_cast<size_t>(v)] = node;
}

bool Builder::inputs_only(const Op& op) {
  for (int v : op.operands)
    if (!state(v).from_inputs) return false;
  return true;
}

}  // namespace aoizora::shlo::detail
