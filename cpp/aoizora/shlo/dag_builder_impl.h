// The DAG builder behind build_dag (dag_builder.h), internal to its .cpp files. One Builder
// per module: it walks the entry function once (dag_builder.cpp: the walk and the dispatch
// on op names; control_flow.cpp: calls, loops, branches, shard_map bodies), prices each op
// with its sharding rule (op_rules.cpp), keeps every value's sharding state and producing
// node and emits the implicit communication between them (value_states.cpp), and tracks
// per-device memory along the schedule (memory_tracker.h). Not for use outside shlo/.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "aoizora/base/status.h"
#include "aoizora/compute/mxu.h"
#include "aoizora/shlo/dag.h"
#include "aoizora/shlo/ir.h"
#include "aoizora/shlo/memory_tracker.h"
#include "aoizora/shlo/propagate.h"

namespace aoizora::shlo::detail {

inline std::string_view short_name(std::string_view op) {
  for (std::string_view p : {"stablehlo.", "mhlo.", "chlo."})
    if (op.starts_with(p)) return op.substr(p.size());
  return op;
}

inline bool is_elementwise(std::string_view n) {
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

struct Collected {
  std::vector<int> users_count;
  std::vector<std::string_view> producer;   // short op name producing each value
  std::vector<bool> all_users_fuse;
  std::vector<const Op*> first_user;
};

class Builder {
 public:
  // dag_builder.cpp
  explicit Builder(const Module& m);
  // Backward pass: the sharding a value will be asked for by a later sharding constraint,
  // carried back through elementwise ops (what Shardy's backward propagation would give it).
  void hints(const Block& b);
  Result<PredictionDag> run();

 private:
  // value_states.cpp
  TensorSharding normalize(const std::optional<TensorSharding>& s, size_t rank) const;
  const TensorType& type(int v) const { return m_.values[static_cast<size_t>(v)].type; }
  ShardState& state(int v);
  double lbytes(int v);
  bool materialized(int v) const;
  // True for an all-gather's result read by one op only: XLA's layout assignment may give
  // the collective that op's layout (a transpose after it costs no HBM pass).
  bool gathered_for_layout(int v) const;
  void warn(const std::string& what) { warned_.insert(what); }

  // ---- node emission ----
  int emit(DagNode n, double repeat, const Op& op, const std::vector<int>& deps);
  int compute(const Op& op, double repeat, double flops, double bytes, bool opaque = false,
              std::vector<compute::Matmul> matmuls = {});
  // Brings operand v to sharding `to` (resolving partial sums), emitting the implicit
  // communication. Returns the resulting state; the value itself keeps its state, since
  // other users may want it differently (a temporary holds the resharded copy).
  ShardState bring(int v, const TensorSharding& to, const Op& op, double repeat, CommOrigin origin,
                   int* dep);
  // A value whose pending partial sums are resolved in place (the partitioner inserts the
  // all-reduce right after the producer when no consumer asks for a scattered result).
  void resolve_partial(int v, const TensorSharding* want, const Op& op, double repeat);
  void define(int v, ShardState s, int node);
  void define_alias(int v, ShardState s, int node);
  bool inputs_only(const Op& op);

  // ---- the walk ----  (dag_builder.cpp)
  // Walks a block; on a terminator (return) fills *returned with operand value ids.
  Status walk(const Block& b, double repeat, const Func* func, std::vector<int>* returned = nullptr);
  Status visit(const Op& op, std::string_view n, double repeat);
  // visit's steps, by the kind of op.
  void constant(const Op& op, std::string_view n);
  Status sharding_op(const Op& op, double repeat, bool sdy_collective);
  Status spmd_shape(const Op& op);
  Status manual_op(const Op& op, std::string_view n, double repeat);

  // ---- per-op sharding and cost rules ----  (op_rules.cpp)
  // The dot as the MXU runs it, per device: the result's dims are the batch dims, then
  // lhs's free dims, then rhs's; the contraction is read from lhs. Its flops are
  // 2 x (result elements) x (contracted elements).
  compute::Matmul dot_matmul(const Op& op, const std::vector<TensorSharding>* sh);
  Status dot(const Op& op, double repeat);
  Status reduce(const Op& op, double repeat);
  Status broadcast(const Op& op, double repeat);
  Status transpose(const Op& op, double repeat);
  Status reshape(const Op& op, double repeat);
  Status elementwise(const Op& op, double repeat);
  // slice, pad, concatenate, dynamic_slice, gather, ...: dims that keep their size keep their
  // sharding; a sharded dim that changes size is gathered first.
  Status shape_op(const Op& op, std::string_view n, double repeat);
  static bool is_known_shape_op(std::string_view n);
  // True for an op XLA's algebraic simplifier makes a bitcast: a broadcast_in_dim that only
  // inserts unit dims (it replicates nothing), a pad or slice that keeps the shape it reads.
  // It moves no bytes.
  bool moves_nothing(const Op& op, std::string_view n) const;
  Status opaque(const Op& op, double repeat);
  // Mesh axes a group of device ids spans, from each axis' stride in the device order.
  std::vector<AxisRef> axes_of_group(const std::vector<int64_t>& g, int64_t* size);
  Status collective(const Op& op, std::string_view n, double repeat);

  // ---- control flow ----  (control_flow.cpp)
  Status call(const Op& op, double repeat);
  // The ops of `f`'s body that nothing live reads at this call site (a result the caller
  // never uses, and what only it needs): XLA removes them once the call is inlined.
  std::unordered_set<const Op*> dead_at_call(const Func& f, const Op& call) const;
  void bind_results(const Op& op, const std::vector<int>& ret);
  // The trip count of a stablehlo.while whose condition compares its counter with a
  // constant, or nullopt.
  std::optional<int64_t> trip_count(const Op& op);
  // What a while's body adds to its loop-carried value `idx` each trip, when it adds (or
  // subtracts) a constant.
  std::optional<int64_t> induction_step(const Op& op, size_t idx) const;
  Status while_loop(const Op& op, double repeat);
  Status case_op(const Op& op, double repeat);
  Status manual_computation(const Op& op, double repeat);

  const Module& m_;
  PredictionDag dag_;
  std::string mesh_;
  std::vector<std::optional<ShardState>> st_;
  std::vector<int> node_of_;
  std::vector<std::optional<int64_t>> const_int_;
  std::vector<std::optional<TensorSharding>> hint_;
  std::map<int, CommOrigin> origin_of_partial_;
  Collected col_;
  // ---- memory along the schedule ----
  MemoryTracker mem_;
  double temp_ = 0;
  int depth_ = 0;
  std::set<std::string> warned_;
  // Ops the walk skips: dead in the inlined call being walked (dead_at_call).
  std::unordered_set<const Op*> dead_;
};

}  // namespace aoizora::shlo::detail
