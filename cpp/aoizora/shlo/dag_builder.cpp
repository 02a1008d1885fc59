// The walk of build_dag (dag_builder.h): the Builder's set-up (use counts, fusion, backward
// hints, the mesh), then the entry function op by op in schedule order, each op dispatched by
// its name to an op rule (op_rules.cpp) or a control-flow handler (control_flow.cpp). After
// every op the result shardings the text annotates are enforced, the memory peak is noted and
// the op's operands released (memory_tracker.h).
#include "aoizora/shlo/dag_builder.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "aoizora/shlo/dag_builder_impl.h"
#include "aoizora/shlo/kernel_call.h"
#include "aoizora/shlo/propagate.h"

namespace aoizora::shlo {
namespace detail {
namespace {

bool fusing_consumer(std::string_view n) {
  // Calls and returns of private functions are inlined by XLA before fusion.
  return is_elementwise(n) || n == "broadcast_in_dim" || n == "reshape" || n == "reduce" ||
         n == "func.call" || n == "func.return" || n == "call";
}

void collect(const Module& m, const Block& b, Collected* c) {
  for (const Op& op : b.ops) {
    std::string_view n = short_name(op.name);
    for (int v : op.operands) {
      if (c->users_count[static_cast<size_t>(v)]++ == 0) c->first_user[static_cast<size_t>(v)] = &op;
      if (!fusing_consumer(n)) c->all_users_fuse[static_cast<size_t>(v)] = false;
    }
    for (int r : op.results) c->producer[static_cast<size_t>(r)] = n;
    // What a nested region (body, branch, reducer) starts from is the caller's value.
    for (const Block& r : op.regions)
      for (int a : r.args) c->producer[static_cast<size_t>(a)] = "region-arg";
    for (const Block& r : op.regions) collect(m, r, c);
  }
}

}  // namespace

Builder::Builder(const Module& m) : m_(m) {
  size_t n = m.values.size();
  st_.resize(n);
  node_of_.assign(n, -1);
  const_int_.assign(n, std::nullopt);
  col_.users_count.assign(n, 0);
  col_.producer.assign(n, "");
  col_.all_users_fuse.assign(n, true);
  col_.first_user.assign(n, nullptr);
  for (const Func& f : m.funcs) {
    collect(m, f.body, &col_);
    // A private function's arguments are its caller's values (XLA inlines calls).
    if (&f != m.entry())
      for (int a : f.args) col_.producer[static_cast<size_t>(a)] = "region-arg";
  }
  hint_.assign(n, std::nullopt);
  for (const Func& f : m.funcs) {
    for (size_t k = 0; k < f.result_shardings.size(); ++k)
      if (!f.body.ops.empty() && f.result_shardings[k] && k < f.body.ops.back().operands.size())
        hint_[static_cast<size_t>(f.body.ops.back().operands[k])] = f.result_shardings[k];
    hints(f.body);
  }
  // The mesh shardings refer to: the largest one.
  int64_t best = 0;
  for (const Mesh& mesh : m.meshes.meshes)
    if (mesh.num_devices() > best) {
      best = mesh.num_devices();
      mesh_ = mesh.name;
    }
  dag_.mesh = mesh_;
  dag_.meshes = m.meshes;
  dag_.num_devices = std::max<int64_t>(m.num_partitions, 1);
}

void Builder::hints(const Block& b) {
  for (auto it = b.ops.rbegin(); it != b.ops.rend(); ++it) {
    const Op& op = *it;
    for (const Block& r : op.regions) hints(r);
    if (op.results.empty()) continue;
    int r = op.results[0];
    const auto& ann = m_.values[static_cast<size_t>(r)].sharding;
    std::optional<TensorSharding> h = ann ? ann : hint_[static_cast<size_t>(r)];
    if (!h || h->manual) continue;
    std::string_view n = short_name(op.name);
    bool pass = op.name == "sdy.sharding_constraint" || op.name == "sdy.reshard" || is_elementwise(n);
    if (!pass) continue;
    for (int v : op.operands)
      if (type(v).shape.size() == type(r).shape.size() && !hint_[static_cast<size_t>(v)] &&
          !m_.values[static_cast<size_t>(v)].sharding)
        hint_[static_cast<size_t>(v)] = h;
  }
}

Result<PredictionDag> Builder::run() {
  const Func* f = m_.entry();
  if (!f) return Error::parse("the module has no entry function");
  std::vector<ShardState> args;
  for (int a : f->args) {
    const Value& v = m_.values[static_cast<size_t>(a)];
    ShardState s;
    s.sharding = normalize(v.sharding, v.type.shape.size());
    s.manual = v.sharding && v.sharding->manual;
    s.from_inputs = true;
    dag_.param_bytes += local_bytes(dag_.meshes, v.type, s);
    args.push_back(s);
  }
  for (size_t k = 0; k < f->args.size(); ++k) define_alias(f->args[k], args[k], -1);
  RETURN_IF_ERROR(walk(f->body, 1.0, f));
  dag_.peak_activation_bytes = mem_.peak();
  dag_.peak_line = mem_.peak_line();
  for (const std::string& w : warned_) dag_.warnings.push_back(w);
  return std::move(dag_);
}

Status Builder::walk(const Block& b, double repeat, const Func* func, std::vector<int>* returned) {
  for (const Op& op : b.ops) {
    std::string_view n = short_name(op.name);
    if (op.name == "func.return" || n == "return" || op.name == "sdy.return") {
      if (func && op.name == "func.return" && returned == nullptr) {
        // Entry results: bring each to its declared sharding.
        for (size_t k = 0; k < op.operands.size() && k < func->result_shardings.size(); ++k) {
          int v = op.operands[k];
          if (!func->result_shardings[k] || state(v).manual) {
            resolve_partial(v, nullptr, op, repeat);
            continue;
          }
          TensorSharding want = normalize(func->result_shardings[k], type(v).shape.size());
          resolve_partial(v, &want, op, repeat);
          int dep;
          bring(v, want, op, repeat, CommOrigin::kReshard, &dep);
        }
      }
      if (returned) *returned = op.operands;
      for (int v : op.operands) resolve_partial(v, nullptr, op, repeat);
      continue;
    }
    if (dead_.count(&op) > 0) {  // dead in the inlined call: XLA removes it
      mem_.used(op);
      continue;
    }
    mem_.set_extra(0);
    temp_ = 0;
    RETURN_IF_ERROR(visit(op, n, repeat));
    // A result the text annotates (sharding_per_value) is produced in that sharding.
    for (int r : op.results) {
      const auto& ann = m_.values[static_cast<size_t>(r)].sharding;
      if (!ann || ann->manual || !st_[static_cast<size_t>(r)] || state(r).manual) continue;
      TensorSharding want = normalize(ann, type(r).shape.size());
      if (state(r).partial.empty() && state(r).sharding.dims == want.dims) continue;
      resolve_partial(r, &want, op, repeat);
      int dep;
      ShardState s = bring(r, want, op, repeat, CommOrigin::kReshard, &dep);
      st_[static_cast<size_t>(r)] = s;
      node_of_[static_cast<size_t>(r)] = dep;
    }
    mem_.note_peak(op.line);
    mem_.set_extra(0);
    mem_.used(op);
  }
  return Status::success();
}

// A constant or an iota: replicated, produced by no node; a scalar integer constant is kept
// for the trip counts of loops that compare with it.
void Builder::constant(const Op& op, std::string_view n) {
  for (int r : op.results) {
    ShardState s;
    s.sharding = replicated(mesh_, type(r).shape.size());
    define(r, s, -1);
    if (n == "constant" && type(r).shape.empty()) {
      const std::string& a = op.attrs;
      size_t k = a.find("dense<");
      if (k != std::string::npos) {
        char* end = nullptr;
        long long val = std::strtoll(a.c_str() + k + 6, &end, 10);
        if (end && *end == '>') const_int_[static_cast<size_t>(r)] = val;
      }
    }
  }
}

// A sharding constraint, a reshard or an sdy collective: the operand brought to the
// annotated sharding (an explicit collective's communication is the program's own).
Status Builder::sharding_op(const Op& op, double repeat, bool sdy_collective) {
  int v = op.operands.at(0), r = op.results.at(0);
  const auto& ann = m_.values[static_cast<size_t>(r)].sharding;
  if (ann && ann->manual) {
    ShardState s = state(v);
    s.manual = true;
    define_alias(r, s, node_of_[static_cast<size_t>(v)]);
    return Status::success();
  }
  TensorSharding want = normalize(ann, type(r).shape.size());
  int dep;
  ShardState s = bring(v, want, op, repeat,
                       sdy_collective ? CommOrigin::kExplicit : CommOrigin::kReshard, &dep);
  define(r, s, dep);
  return Status::success();
}

// SPMDFullToShardShape / SPMDShardToFullShape: into or out of manual (shard_map) code.
Status Builder::spmd_shape(const Op& op) {
  int v = op.operands.at(0), r = op.results.at(0);
  ShardState s = state(v);
  s.partial.clear();
  if (op.callee == "SPMDFullToShardShape") {
    s.manual = true;
  } else {
    s.manual = false;
    s.sharding = normalize(m_.values[static_cast<size_t>(r)].sharding, type(r).shape.size());
  }
  define_alias(r, s, node_of_[static_cast<size_t>(v)]);
  mem_.alloc(r, local_bytes(dag_.meshes, type(r), s), col_.users_count[static_cast<size_t>(r)]);
  return Status::success();
}

// An op inside shard_map: types are per device already; no propagation, no implicit comm.
Status Builder::manual_op(const Op& op, std::string_view n, double repeat) {
  double bytes = 0, flops = 0;
  for (int r : op.results) flops += static_cast<double>(type(r).num_elements());
  if (n == "reshape" || n == "bitcast_convert" || moves_nothing(op, n)) {
    bytes = 0;  // a bitcast
  } else if (n == "transpose" && gathered_for_layout(op.operands.at(0))) {
    // XLA's layout assignment gives the all-gather the layout the transpose asks for (the
    // TPU compiler gathers K/V straight into the heads-major order the attention kernel
    // reads): the transpose is a bitcast, no HBM pass.
    bytes = 0;
  } else if (n == "slice" || n == "dynamic_slice" || n == "gather") {
    for (int r : op.results) bytes += 2 * type(r).bytes();  // reads only what it keeps
  } else if ((n == "dynamic_update_slice" || n == "scatter") && op.operands.size() > 1) {
    bytes = 2 * type(op.operands[1]).bytes();  // in place: the update is read and written
  } else {
    for (int v : op.operands) bytes += materialized(v) ? type(v).bytes() : 0;
    for (int r : op.results) bytes += materialized(r) ? type(r).bytes() : 0;
  }
  std::vector<compute::Matmul> matmuls;
  if (n == "dot_general") {
    matmuls = {dot_matmul(op, nullptr)};
    flops = compute::matmul_flops(matmuls[0]);
  }
  if (n == "reduce") flops = static_cast<double>(type(op.operands[0]).num_elements());
  if (!is_elementwise(n) && n != "dot_general" && n != "reduce") flops = 0;
  auto call = splash_call(op, [&](int v) -> const TensorType& { return type(v); });
  if (call) {
    flops = compute::splash_flops(*call);  // a Pallas attention kernel (shlo/kernel_call.h)
    bytes = compute::splash_bytes(*call);
    matmuls = compute::splash_matmuls(*call);
  }
  int node = compute(op, repeat, flops, bytes, false, std::move(matmuls));
  if (call && node >= 0) dag_.nodes[static_cast<size_t>(node)].kernel = call;
  // A free op (a reshape, a bitcast) has no node: its results carry the latest of its
  // operands' nodes, so what reads them still depends on what produced them (a ring step's
  // kernel reads the K/V a permute received through reshapes).
  if (node < 0)
    for (int v : op.operands) node = std::max(node, node_of_[static_cast<size_t>(v)]);
  for (int r : op.results) {
    ShardState s;
    s.manual = true;
    s.from_inputs = inputs_only(op);
    define(r, s, node);
  }
  return Status::success();
}

Status Builder::visit(const Op& op, std::string_view n, double repeat) {
  const bool manual = !op.operands.empty() && state(op.operands[0]).manual;
  if (n == "constant" || n == "iota") {
    constant(op, n);
    return Status::success();
  }
  const bool sdy_collective = op.name.starts_with("sdy.") && op.name != "sdy.manual_computation" &&
                              op.attrs.find("out_sharding=<") != std::string::npos;
  if (op.name == "sdy.sharding_constraint" || op.name == "sdy.reshard" || sdy_collective ||
      (n == "custom_call" && op.callee == "Sharding"))
    return sharding_op(op, repeat, sdy_collective);
  if (n == "custom_call" && (op.callee == "SPMDFullToShardShape" || op.callee == "SPMDShardToFullShape"))
    return spmd_shape(op);
  if (n == "optimization_barrier") {
    for (size_t k = 0; k < op.results.size() && k < op.operands.size(); ++k) {
      resolve_partial(op.operands[k], nullptr, op, repeat);
      define(op.results[k], state(op.operands[k]), node_of_[static_cast<size_t>(op.operands[k])]);
    }
    return Status::success();
  }
  if (n == "partition_id" || n == "replica_id") {
    for (int r : op.results) define(r, ShardState{replicated(mesh_, 0), {}, false, true}, -1);
    return Status::success();
  }
  if (op.name == "func.call") return call(op, repeat);
  if (n == "while") return while_loop(op, repeat);
  if (n == "case" || n == "if") return case_op(op, repeat);
  if (op.name == "sdy.manual_computation") return manual_computation(op, repeat);
  if (n == "all_reduce" || n == "all_gather" || n == "reduce_scatter" || n == "all_to_all" ||
      n == "collective_permute" || n == "collective_broadcast")
    return collective(op, n, repeat);
  if (manual) return manual_op(op, n, repeat);
  if (n == "dot_general") return dot(op, repeat);
  if (n == "reduce") return reduce(op, repeat);
  if (n == "broadcast_in_dim") return broadcast(op, repeat);
  if (n == "transpose") return transpose(op, repeat);
  if (n == "reshape") return reshape(op, repeat);
  if (n == "custom_call") return opaque(op, repeat);
  if (is_elementwise(n)) return elementwise(op, repeat);
  return shape_op(op, n, repeat);
}

}  // namespace detail

Result<PredictionDag> build_dag(const Module& module) { return detail::Builder(module).run(); }

}  // namespace aoizora::shlo
