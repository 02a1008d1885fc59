#include "aoizora/shlo/dag_builder.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>

#include "aoizora/shlo/kernel_call.h"
#include "aoizora/shlo/propagate.h"
#include "aoizora/shlo/reshard.h"

namespace aoizora::shlo {
namespace {

std::string_view short_name(std::string_view op) {
  for (std::string_view p : {"stablehlo.", "mhlo.", "chlo."})
    if (op.starts_with(p)) return op.substr(p.size());
  return op;
}

bool is_elementwise(std::string_view n) {
  static const std::unordered_set<std::string_view> k = {
      "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "power",
      "atan2", "and", "or", "xor", "not", "shift_left", "shift_right_arithmetic",
      "shift_right_logical", "negate", "abs", "exponential", "exponential_minus_one", "log",
      "log_plus_one", "logistic", "tanh", "sqrt", "rsqrt", "cbrt", "sine", "cosine", "tan",
      "floor", "ceil", "round_nearest_even", "round_nearest_afz", "sign", "is_finite",
      "convert", "bitcast_convert", "compare", "select", "clamp", "real", "imag", "complex",
      "popcnt", "count_leading_zeros", "reduce_precision", "erf", "erf_inv", "square"};
  return k.count(n) > 0;
}

// Ops XLA fuses into their consumers without writing the result to HBM.
bool fusible_producer(std::string_view n) {
  return is_elementwise(n) || n == "broadcast_in_dim" || n == "constant" || n == "iota" ||
         n == "reshape" || n == "region-arg";
}
bool fusing_consumer(std::string_view n) {
  // Calls and returns of private functions are inlined by XLA before fusion.
  return is_elementwise(n) || n == "broadcast_in_dim" || n == "reshape" || n == "reduce" ||
         n == "func.call" || n == "func.return" || n == "call";
}

struct Collected {
  std::vector<int> users_count;
  std::vector<std::string_view> producer;   // short op name producing each value
  std::vector<bool> all_users_fuse;
  std::vector<const Op*> first_user;
};

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

class Builder {
 public:
  explicit Builder(const Module& m) : m_(m) {
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

  // Backward pass: the sharding a value will be asked for by a later sharding constraint,
  // carried back through elementwise ops (what Shardy's backward propagation would give it).
  void hints(const Block& b) {
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

  Result<PredictionDag> run() {
    const Func* f = m_.entry();
    if (!f) return Error{"the module has no entry function", "", 0, 0};
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
    if (auto e = walk(f->body, 1.0, f); !e.message.empty()) return e;
    dag_.peak_activation_bytes = peak_;
    dag_.peak_line = peak_line_;
    for (const std::string& w : warned_) dag_.warnings.push_back(w);
    return std::move(dag_);
  }

 private:
  TensorSharding normalize(const std::optional<TensorSharding>& s, size_t rank) const {
    TensorSharding t = s ? *s : replicated(mesh_, rank);
    if (t.mesh.empty() || !dag_.meshes.find(t.mesh) || dag_.meshes.find(t.mesh)->axes.empty()) t.mesh = mesh_;
    t.dims.resize(rank);
    t.manual = false;
    return t;
  }
  const TensorType& type(int v) const { return m_.values[static_cast<size_t>(v)].type; }
  ShardState& state(int v) {
    auto& s = st_[static_cast<size_t>(v)];
    if (!s) {
      ShardState r;
      r.sharding = replicated(mesh_, type(v).shape.size());
      s = r;
    }
    return *s;
  }
  double lbytes(int v) { return local_bytes(dag_.meshes, type(v), state(v)); }
  bool materialized(int v) const {
    std::string_view p = col_.producer[static_cast<size_t>(v)];
    return !(fusible_producer(p) && col_.all_users_fuse[static_cast<size_t>(v)]);
  }
  void warn(const std::string& what) { warned_.insert(what); }

  // ---- memory along the schedule ----
  void alloc(int v, double bytes) {
    if (live_.count(v)) live_total_ -= live_[v];
    live_[v] = bytes;
    live_total_ += bytes;
    remaining_[v] = col_.users_count[static_cast<size_t>(v)];
    if (remaining_[v] == 0) free_value(v);
  }
  void free_value(int v) {
    auto it = live_.find(v);
    if (it == live_.end()) return;
    live_total_ -= it->second;
    live_.erase(it);
  }
  void note_peak(int line) {
    if (live_total_ + extra_ > peak_) {
      peak_ = live_total_ + extra_;
      peak_line_ = line;
    }
  }
  void used(const Op& op, const std::set<int>& keep = {}) {
    for (int v : op.operands) {
      auto it = remaining_.find(v);
      if (it == remaining_.end()) continue;
      if (--it->second <= 0 && !keep.count(v)) free_value(v);
    }
  }

  // ---- node emission ----
  int emit(DagNode n, double repeat, const Op& op, const std::vector<int>& deps) {
    n.op = op.name;
    n.line = op.line;
    n.repeat = repeat;
    for (int d : deps)
      if (d >= 0) n.deps.push_back(d);
    dag_.nodes.push_back(std::move(n));
    return static_cast<int>(dag_.nodes.size()) - 1;
  }
  int compute(const Op& op, double repeat, double flops, double bytes, bool opaque = false,
              std::vector<cost::Matmul> matmuls = {}) {
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
  // Brings operand v to sharding `to` (resolving partial sums), emitting the implicit
  // communication. Returns the resulting state; the value itself keeps its state, since
  // other users may want it differently (a temporary holds the resharded copy).
  ShardState bring(int v, const TensorSharding& to, const Op& op, double repeat, CommOrigin origin,
                   int* dep) {
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
      extra_ += local_bytes(dag_.meshes, type(v), out);  // the resharded copy, live until the op is done
      temp_ += local_bytes(dag_.meshes, type(v), out);
    }
    return out;
  }
  // A value whose pending partial sums are resolved in place (the partitioner inserts the
  // all-reduce right after the producer when no consumer asks for a scattered result).
  void resolve_partial(int v, const TensorSharding* want, const Op& op, double repeat) {
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
    const double extra = extra_, temp = temp_;
    ShardState r = bring(v, to, op, repeat, CommOrigin::kContraction, &dep);
    extra_ = extra;  // resolved in place: no extra copy
    temp_ = temp;
    if (live_.count(v) && live_[v] > 0) {  // the value now has its resolved size
      double b = local_bytes(dag_.meshes, type(v), r);
      live_total_ += b - live_[v];
      live_[v] = b;
    }
    st_[static_cast<size_t>(v)] = r;
    node_of_[static_cast<size_t>(v)] = dep;
  }

  void define(int v, ShardState s, int node) {
    s.sharding = s.manual ? s.sharding : normalize(s.sharding, type(v).shape.size());
    st_[static_cast<size_t>(v)] = s;
    node_of_[static_cast<size_t>(v)] = node;
    alloc(v, materialized(v) ? local_bytes(dag_.meshes, type(v), s) : 0.0);
  }
  void define_alias(int v, ShardState s, int node) {
    s.sharding = s.manual ? s.sharding : normalize(s.sharding, type(v).shape.size());
    st_[static_cast<size_t>(v)] = s;
    node_of_[static_cast<size_t>(v)] = node;
  }

  bool inputs_only(const Op& op) {
    for (int v : op.operands)
      if (!state(v).from_inputs) return false;
    return true;
  }

  // ---- the walk ----
  // Walks a block; on a terminator (return) fills *returned with operand value ids.
  Error walk(const Block& b, double repeat, const Func* func, std::vector<int>* returned = nullptr) {
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
      extra_ = 0;
      temp_ = 0;
      if (auto e = visit(op, n, repeat); !e.message.empty()) return e;
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
      note_peak(op.line);
      extra_ = 0;
      used(op);
    }
    return Error{};
  }

  Error visit(const Op& op, std::string_view n, double repeat) {
    const bool manual = !op.operands.empty() && state(op.operands[0]).manual;
    if (n == "constant" || n == "iota") {
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
      return Error{};
    }
    const bool sdy_collective = op.name.starts_with("sdy.") && op.name != "sdy.manual_computation" &&
                                op.attrs.find("out_sharding=<") != std::string::npos;
    if (op.name == "sdy.sharding_constraint" || op.name == "sdy.reshard" || sdy_collective ||
        (n == "custom_call" && op.callee == "Sharding")) {
      int v = op.operands.at(0), r = op.results.at(0);
      const auto& ann = m_.values[static_cast<size_t>(r)].sharding;
      if (ann && ann->manual) {
        ShardState s = state(v);
        s.manual = true;
        define_alias(r, s, node_of_[static_cast<size_t>(v)]);
        return Error{};
      }
      TensorSharding want = normalize(ann, type(r).shape.size());
      int dep;
      ShardState s = bring(v, want, op, repeat,
                           sdy_collective ? CommOrigin::kExplicit : CommOrigin::kReshard, &dep);
      define(r, s, dep);
      return Error{};
    }
    if (n == "custom_call" && (op.callee == "SPMDFullToShardShape" || op.callee == "SPMDShardToFullShape")) {
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
      alloc(r, local_bytes(dag_.meshes, type(r), s));
      return Error{};
    }
    if (n == "optimization_barrier") {
      for (size_t k = 0; k < op.results.size() && k < op.operands.size(); ++k) {
        resolve_partial(op.operands[k], nullptr, op, repeat);
        define(op.results[k], state(op.operands[k]), node_of_[static_cast<size_t>(op.operands[k])]);
      }
      return Error{};
    }
    if (n == "partition_id" || n == "replica_id") {
      for (int r : op.results) define(r, ShardState{replicated(mesh_, 0), {}, false, true}, -1);
      return Error{};
    }
    if (op.name == "func.call") return call(op, repeat);
    if (n == "while") return while_loop(op, repeat);
    if (n == "case" || n == "if") return case_op(op, repeat);
    if (op.name == "sdy.manual_computation") return manual_computation(op, repeat);
    if (n == "all_reduce" || n == "all_gather" || n == "reduce_scatter" || n == "all_to_all" ||
        n == "collective_permute" || n == "collective_broadcast")
      return collective(op, n, repeat);
    if (manual) {
      // Inside shard_map: types are per device already; no propagation, no implicit comm.
      double bytes = 0, flops = 0;
      for (int r : op.results) flops += static_cast<double>(type(r).num_elements());
      if (n == "reshape" || n == "bitcast_convert") {
        bytes = 0;  // a bitcast
      } else if (n == "slice" || n == "dynamic_slice" || n == "gather") {
        for (int r : op.results) bytes += 2 * type(r).bytes();  // reads only what it keeps
      } else if ((n == "dynamic_update_slice" || n == "scatter") && op.operands.size() > 1) {
        bytes = 2 * type(op.operands[1]).bytes();  // in place: the update is read and written
      } else {
        for (int v : op.operands) bytes += materialized(v) ? type(v).bytes() : 0;
        for (int r : op.results) bytes += materialized(r) ? type(r).bytes() : 0;
      }
      std::vector<cost::Matmul> matmuls;
      if (n == "dot_general") {
        matmuls = {dot_matmul(op, nullptr)};
        flops = cost::matmul_flops(matmuls[0]);
      }
      if (n == "reduce") flops = static_cast<double>(type(op.operands[0]).num_elements());
      if (!is_elementwise(n) && n != "dot_general" && n != "reduce") flops = 0;
      if (auto call = splash_call(op, [&](int v) -> const TensorType& { return type(v); })) {
        flops = cost::splash_flops(*call);  // a Pallas attention kernel (shlo/kernel_call.h)
        bytes = cost::splash_bytes(*call);
        matmuls = cost::splash_matmuls(*call);
      }
      int node = compute(op, repeat, flops, bytes, false, std::move(matmuls));
      for (int r : op.results) {
        ShardState s;
        s.manual = true;
        s.from_inputs = inputs_only(op);
        define(r, s, node);
      }
      return Error{};
    }
    if (n == "dot_general") return dot(op, repeat);
    if (n == "reduce") return reduce(op, repeat);
    if (n == "broadcast_in_dim") return broadcast(op, repeat);
    if (n == "transpose") return transpose(op, repeat);
    if (n == "reshape") return reshape(op, repeat);
    if (n == "custom_call") return opaque(op, repeat);
    if (is_elementwise(n)) return elementwise(op, repeat);
    return shape_op(op, n, repeat);
  }

  // The dot as the MXU runs it, per device: the result's dims are the batch dims, then
  // lhs's free dims, then rhs's; the contraction is read from lhs. Its flops are
  // 2 x (result elements) x (contracted elements).
  cost::Matmul dot_matmul(const Op& op, const std::vector<TensorSharding>* sh) {
    const TensorType& lt = type(op.operands[0]);
    auto lc = attr_int_list(op.attrs, "contracting_dims", 0);
    if (!lc) lc = attr_int_list(op.attrs, "lhs_contracting_dimensions");
    auto lb = attr_int_list(op.attrs, "batching_dims", 0);
    if (!lb) lb = attr_int_list(op.attrs, "lhs_batching_dimensions");
    cost::Matmul mm{1, 1, 1, 1};
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

  Error dot(const Op& op, double repeat) {
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
    const cost::Matmul mm = dot_matmul(op, &sh);
    ShardState out;
    out.sharding = rule.result;
    out.partial = rule.partial;
    out.from_inputs = sl.from_inputs && sr.from_inputs;
    double bytes = local_bytes(dag_.meshes, type(l), sl) + local_bytes(dag_.meshes, type(r), sr) +
                   local_bytes(dag_.meshes, type(res), out);
    DagNode c;
    c.flops = cost::matmul_flops(mm);
    c.matmuls = {mm};
    c.bytes = bytes;
    int node = emit(std::move(c), repeat, op, {dl, dr});
    define(res, out, node);
    origin_of_partial_[res] = CommOrigin::kContraction;
    return Error{};
  }

  Error reduce(const Op& op, double repeat) {
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
    return Error{};
  }

  Error broadcast(const Op& op, double repeat) {
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
    int node = compute(op, repeat, 0, materialized(r) ? local_bytes(dag_.meshes, type(r), out) : 0);
    define(r, out, node >= 0 ? node : node_of_[static_cast<size_t>(v)]);
    return Error{};
  }

  Error transpose(const Op& op, double repeat) {
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
    return Error{};
  }

  Error reshape(const Op& op, double repeat) {
    int v = op.operands.at(0), r = op.results.at(0);
    resolve_partial(v, nullptr, op, repeat);
    ReshapeRule rule = reshape_rule(dag_.meshes, state(v).sharding, type(v).shape, type(r).shape);
    int dep;
    ShardState s = bring(v, rule.operand, op, repeat, CommOrigin::kReshard, &dep);
    ShardState out = s;
    out.sharding = rule.result;
    define(r, out, dep);
    return Error{};
  }

  Error elementwise(const Op& op, double repeat) {
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
    return Error{};
  }

  // slice, pad, concatenate, dynamic_slice, gather, ...: dims that keep their size keep their
  // sharding; a sharded dim that changes size is gathered first.
  Error shape_op(const Op& op, std::string_view n, double repeat) {
    if (op.results.empty()) return Error{};
    int r = op.results.at(0);
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
    return Error{};
  }
  static bool is_known_shape_op(std::string_view n) {
    return n == "gather" || n == "scatter" || n == "dynamic_slice" || n == "dynamic_update_slice" ||
           n == "slice" || n == "pad" || n == "concatenate" || n == "sort" || n == "reduce_window" ||
           n == "rng_bit_generator" || n == "rng" || n == "get_tuple_element" || n == "tuple";
  }

  Error opaque(const Op& op, double repeat) {
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
    return Error{};
  }

  // Mesh axes a group of device ids spans, from each axis' stride in the device order.
  std::vector<std::string> axes_of_group(const std::vector<int64_t>& g, int64_t* size) {
    std::vector<std::string> out;
    const Mesh* mesh = dag_.meshes.find(mesh_);
    *size = static_cast<int64_t>(g.size());
    if (!mesh) return out;
    int64_t stride = 1;
    std::vector<std::pair<std::string, std::pair<int64_t, int64_t>>> axes;  // name, stride, size
    for (size_t k = mesh->axes.size(); k-- > 0;) {
      const MeshAxis& a = mesh->axes[k];
      int64_t st = stride;
      if (a.name.size() > 1 && a.name[0] == 's' && a.name.find('x') != std::string::npos)
        st = std::atoll(a.name.c_str() + 1);  // GSPMD synthetic axis: stride in the name
      axes.push_back({a.name, {st, a.size}});
      stride *= a.size;
    }
    for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
      auto [st, sz] = it->second;
      for (int64_t id : g)
        if ((id / st) % sz != (g[0] / st) % sz) {
          out.push_back(it->first);
          break;
        }
    }
    return out;
  }

  Error collective(const Op& op, std::string_view n, double repeat) {
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
          for (const std::string& a : axes_of_group(p, &sz)) ax.insert(a);
      }
      c.axes.assign(ax.begin(), ax.end());
      c.group_size = 2;
      c.overlappable = true;
    } else {
      c.comm = n == "all_reduce" ? CommKind::kAllReduce
             : n == "all_gather" ? CommKind::kAllGather
             : n == "reduce_scatter" ? CommKind::kReduceScatter
             : n == "all_to_all" ? CommKind::kAllToAll : CommKind::kCollectiveBroadcast;
      auto groups = attr_dense_2d(op.attrs, "replica_groups").value_or(std::vector<std::vector<int64_t>>{});
      if (!groups.empty()) c.axes = axes_of_group(groups[0], &c.group_size);
      else c.group_size = dag_.num_devices;
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
    return Error{};
  }

  Error call(const Op& op, double repeat) {
    const Func* f = m_.find_func(op.callee);
    if (!f) return Error{"call to unknown function @" + op.callee, "", op.line, op.column};
    if (++depth_ > 64) return Error{"call depth over 64 at @" + op.callee, "", op.line, op.column};
    for (size_t k = 0; k < f->args.size() && k < op.operands.size(); ++k)
      define_alias(f->args[k], state(op.operands[k]), node_of_[static_cast<size_t>(op.operands[k])]);
    std::vector<int> ret;
    if (auto e = walk(f->body, repeat, f, &ret); !e.message.empty()) return e;
    --depth_;
    bind_results(op, ret);
    return Error{};
  }
  void bind_results(const Op& op, const std::vector<int>& ret) {
    for (size_t k = 0; k < op.results.size() && k < ret.size(); ++k) {
      int inner = ret[k];
      double b = live_.count(inner) ? live_[inner] : 0;
      free_value(inner);
      define_alias(op.results[k], state(inner), node_of_[static_cast<size_t>(inner)]);
      live_[op.results[k]] = b;
      live_total_ += b;
      remaining_[op.results[k]] = col_.users_count[static_cast<size_t>(op.results[k])];
    }
  }

  // The trip count of a stablehlo.while whose condition compares its counter with a
  // constant, or nullopt.
  std::optional<int64_t> trip_count(const Op& op) {
    if (op.regions.size() < 2) return std::nullopt;
    const Block& cond = op.regions[0];
    std::map<int, int64_t> consts;
    for (const Op& c : cond.ops) {
      if (short_name(c.name) == "constant" && !c.results.empty()) {
        size_t k = c.attrs.find("dense<");
        if (k != std::string::npos) consts[c.results[0]] = std::atoll(c.attrs.c_str() + k + 6);
      }
      if (short_name(c.name) == "compare" && c.operands.size() == 2) {
        int a = c.operands[0], b = c.operands[1];
        auto arg = std::find(cond.args.begin(), cond.args.end(), a);
        if (arg == cond.args.end() || !consts.count(b)) continue;
        size_t idx = static_cast<size_t>(arg - cond.args.begin());
        int64_t init = 0;
        if (idx < op.operands.size() && const_int_[static_cast<size_t>(op.operands[idx])])
          init = *const_int_[static_cast<size_t>(op.operands[idx])];
        int64_t limit = consts[b];
        bool le = c.attrs.find("LE") != std::string::npos;
        int64_t trips = limit - init + (le ? 1 : 0);
        if (c.attrs.find("LT") != std::string::npos || le) return std::max<int64_t>(trips, 0);
      }
    }
    return std::nullopt;
  }

  Error while_loop(const Op& op, double repeat) {
    if (op.regions.size() < 2) return Error{"while without cond and body", "", op.line, op.column};
    // Counting an unknown loop once would make the candidate look many times cheaper than
    // it is (a 40-layer scan 40x): it cannot be priced.
    const std::optional<int64_t> known_trips = trip_count(op);
    if (!known_trips)
      return Error{"a while loop whose trip count is unknown (its condition is not a counter "
                   "compared with a constant): the candidate cannot be priced",
                   "", op.line, op.column};
    const int64_t trips = *known_trips;
    const Block& body = op.regions[1];
    // Which carried values the body passes through unchanged (loop-invariant, e.g. stacked
    // weights): they stay prefetchable.
    std::vector<bool> invariant(body.args.size(), false);
    if (!body.ops.empty()) {
      const Op& ret = body.ops.back();
      for (size_t k = 0; k < ret.operands.size() && k < body.args.size(); ++k)
        invariant[k] = ret.operands[k] == body.args[k];
    }
    for (size_t k = 0; k < body.args.size() && k < op.operands.size(); ++k) {
      resolve_partial(op.operands[k], nullptr, op, repeat);
      ShardState s = state(op.operands[k]);
      s.from_inputs = s.from_inputs && (invariant[k] || type(body.args[k]).shape.empty());
      define_alias(body.args[k], s, node_of_[static_cast<size_t>(op.operands[k])]);
    }
    for (size_t k = 0; k < op.regions[0].args.size() && k < body.args.size(); ++k)
      define_alias(op.regions[0].args[k], state(body.args[k]), -1);
    std::vector<int> ret;
    if (auto e = walk(body, repeat * static_cast<double>(trips), nullptr, &ret); !e.message.empty()) return e;
    // The carry must come back in the sharding it went in with.
    if (!body.ops.empty()) {
      const Op& term = body.ops.back();
      for (size_t k = 0; k < ret.size() && k < body.args.size(); ++k) {
        int dep;
        ShardState s = bring(ret[k], state(body.args[k]).sharding, term, repeat * static_cast<double>(trips),
                             CommOrigin::kReshard, &dep);
        (void)s;
      }
    }
    std::vector<int> outs;
    for (size_t k = 0; k < op.results.size(); ++k) outs.push_back(k < ret.size() ? ret[k] : op.operands[k]);
    bind_results(op, outs);
    for (size_t k = 0; k < op.results.size() && k < body.args.size(); ++k) {
      ShardState s = state(body.args[k]);
      s.from_inputs = state(op.results[k]).from_inputs && invariant[k];
      st_[static_cast<size_t>(op.results[k])] = s;
    }
    return Error{};
  }

  Error case_op(const Op& op, double repeat) {
    // One branch runs: keep the costliest (most FLOPs, then bytes).
    size_t start = dag_.nodes.size();
    std::vector<DagNode> best_nodes;
    std::vector<int> best_ret;
    double best_cost = -1;
    for (int v : op.operands) resolve_partial(v, nullptr, op, repeat);
    for (const Block& br : op.regions) {
      std::vector<int> ret;
      if (auto e = walk(br, repeat, nullptr, &ret); !e.message.empty()) return e;
      double cost = 0;
      for (size_t k = start; k < dag_.nodes.size(); ++k)
        cost += dag_.nodes[k].flops * 1e3 + dag_.nodes[k].bytes + dag_.nodes[k].operand_bytes;
      if (cost > best_cost) {
        best_cost = cost;
        best_nodes.assign(dag_.nodes.begin() + static_cast<long>(start), dag_.nodes.end());
        best_ret = ret;
      }
      dag_.nodes.resize(start);
    }
    for (DagNode& nd : best_nodes) dag_.nodes.push_back(std::move(nd));
    bind_results(op, best_ret);
    return Error{};
  }

  Error manual_computation(const Op& op, double repeat) {
    if (op.regions.empty()) return Error{"sdy.manual_computation without a body", "", op.line, op.column};
    const Block& body = op.regions[0];
    // in_shardings=[<@mesh, ...>, ...]
    std::vector<TensorSharding> ins;
    size_t k = op.attrs.find("in_shardings=[");
    if (k != std::string::npos) {
      size_t pos = k + 14;
      while (pos < op.attrs.size() && op.attrs[pos] != ']') {
        size_t open = op.attrs.find('<', pos);
        if (open == std::string::npos) break;
        int depth = 0;
        size_t j = open;
        for (; j < op.attrs.size(); ++j) {
          if (op.attrs[j] == '<') ++depth;
          if (op.attrs[j] == '>' && --depth == 0) break;
        }
        Result<TensorSharding> s = parse_sdy_sharding(std::string_view(op.attrs).substr(open, j - open + 1));
        if (!s.ok()) return Error{"bad in_shardings: " + s.error().message, "", op.line, op.column};
        ins.push_back(*s);
        pos = j + 1;
        while (pos < op.attrs.size() && (op.attrs[pos] == ',' || op.attrs[pos] == ' ')) ++pos;
      }
    }
    for (size_t a = 0; a < body.args.size() && a < op.operands.size(); ++a) {
      int v = op.operands[a];
      int dep = node_of_[static_cast<size_t>(v)];
      ShardState s = state(v);
      if (a < ins.size()) {
        TensorSharding want = normalize(ins[a], type(v).shape.size());
        resolve_partial(v, &want, op, repeat);
        s = bring(v, want, op, repeat, CommOrigin::kReshard, &dep);
      }
      s.manual = true;
      s.partial.clear();
      define_alias(body.args[a], s, dep);
    }
    std::vector<int> ret;
    if (auto e = walk(body, repeat, nullptr, &ret); !e.message.empty()) return e;
    std::vector<int> outs = ret;
    bind_results(op, outs);
    for (size_t r = 0; r < op.results.size(); ++r) {
      ShardState s;
      s.sharding = normalize(m_.values[static_cast<size_t>(op.results[r])].sharding, type(op.results[r]).shape.size());
      s.from_inputs = false;
      st_[static_cast<size_t>(op.results[r])] = s;
    }
    return Error{};
  }

  const Module& m_;
  PredictionDag dag_;
  std::string mesh_;
  std::vector<std::optional<ShardState>> st_;
  std::vector<int> node_of_;
  std::vector<std::optional<int64_t>> const_int_;
  std::vector<std::optional<TensorSharding>> hint_;
  std::map<int, CommOrigin> origin_of_partial_;
  Collected col_;
  std::map<int, double> live_;
  std::map<int, int> remaining_;
  double live_total_ = 0, extra_ = 0, temp_ = 0, peak_ = 0;
  int peak_line_ = 0;
  int depth_ = 0;
  std::set<std::string> warned_;
};

}  // namespace

Result<PredictionDag> build_dag(const Module& module) { return Builder(module).run(); }

}  // namespace aoizora::shlo
