// Control flow in the walk: a func.call is inlined (its body walked in place, as XLA inlines
// calls, without the ops nothing live at that call site reads: XLA's dead-code elimination
// drops them after inlining), a while body is walked once and counted trip-count times (an unknown trip count is
// an error: the candidate cannot be priced), a case keeps its costliest branch, and an
// sdy.manual_computation body is walked as per-device code after its operands are brought to
// in_shardings. Results alias the values the body returns, and take over their memory.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <unordered_set>
#include <utility>

#include "aoizora/shlo/dag_builder_impl.h"
#include "aoizora/shlo/propagate.h"
#include "aoizora/shlo/sharding.h"

namespace aoizora::shlo::detail {

Status Builder::call(const Op& op, double repeat) {
  const Func* f = m_.find_func(op.callee);
  if (!f) return Error::parse("call to unknown function @" + op.callee, "", op.line, op.column);
  if (++depth_ > 64) return Error::unsupported("call depth over 64 at @" + op.callee, "", op.line, op.column);
  for (size_t k = 0; k < f->args.size() && k < op.operands.size(); ++k)
    define_alias(f->args[k], state(op.operands[k]), node_of_[static_cast<size_t>(op.operands[k])]);
  std::unordered_set<const Op*> dead = dead_at_call(*f, op);
  std::swap(dead, dead_);  // the callee's own dead ops; the caller's come back after
  std::vector<int> ret;
  Status e = walk(f->body, repeat, f, &ret);
  std::swap(dead, dead_);
  if (!e.ok()) return e;
  --depth_;
  bind_results(op, ret);
  return Status::success();
}

namespace {

// Every value an op reads, its nested regions' reads included (they may use outer values).
void reads_of(const Op& op, std::unordered_set<int>* out) {
  for (int v : op.operands) out->insert(v);
  for (const Block& r : op.regions)
    for (const Op& inner : r.ops) reads_of(inner, out);
}

}  // namespace

std::unordered_set<const Op*> Builder::dead_at_call(const Func& f, const Op& call) const {
  std::unordered_set<const Op*> dead;
  const Block& b = f.body;
  if (b.ops.empty()) return dead;
  const Op& ret = b.ops.back();
  std::unordered_set<int> live;
  for (size_t k = 0; k < ret.operands.size(); ++k)
    if (k >= call.results.size() || col_.users_count[static_cast<size_t>(call.results[k])] > 0)
      live.insert(ret.operands[k]);
  for (auto it = b.ops.rbegin() + 1; it != b.ops.rend(); ++it) {
    const Op& op = *it;
    bool needed = op.results.empty();  // kept for its effects
    for (int r : op.results) needed = needed || live.count(r) > 0;
    if (needed) reads_of(op, &live);
    else dead.insert(&op);
  }
  return dead;
}

void Builder::bind_results(const Op& op, const std::vector<int>& ret) {
  for (size_t k = 0; k < op.results.size() && k < ret.size(); ++k) {
    int inner = ret[k];
    double b = mem_.live_bytes(inner);
    mem_.free_value(inner);
    define_alias(op.results[k], state(inner), node_of_[static_cast<size_t>(inner)]);
    mem_.adopt(op.results[k], b, col_.users_count[static_cast<size_t>(op.results[k])]);
  }
}

namespace {

// The integer constants a block defines (`stablehlo.constant dense<4>`), by value id.
std::map<int, int64_t> block_constants(const Block& block) {
  std::map<int, int64_t> consts;
  for (const Op& c : block.ops)
    if (short_name(c.name) == "constant" && !c.results.empty()) {
      size_t k = c.attrs.find("dense<");
      if (k != std::string::npos) consts[c.results[0]] = std::atoll(c.attrs.c_str() + k + 6);
    }
  return consts;
}

}  // namespace

std::optional<int64_t> Builder::induction_step(const Op& op, size_t idx) const {
  const Block& body = op.regions[1];
  if (body.ops.empty() || idx >= body.args.size()) return std::nullopt;
  const Op& ret = body.ops.back();
  if (idx >= ret.operands.size()) return std::nullopt;
  const std::map<int, int64_t> consts = block_constants(body);
  auto constant = [&](int v) -> std::optional<int64_t> {
    if (auto it = consts.find(v); it != consts.end()) return it->second;
    return const_int_[static_cast<size_t>(v)];
  };
  const int counter = body.args[idx];
  for (const Op& u : body.ops) {
    if (u.results.empty() || u.results[0] != ret.operands[idx] || u.operands.size() != 2) continue;
    const std::string_view n = short_name(u.name);
    if (n == "add" && u.operands[0] == counter) return constant(u.operands[1]);
    if (n == "add" && u.operands[1] == counter) return constant(u.operands[0]);
    if (n == "subtract" && u.operands[0] == counter)
      if (auto c = constant(u.operands[1])) return -*c;
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<int64_t> Builder::trip_count(const Op& op) {
  if (op.regions.size() < 2) return std::nullopt;
  const Block& cond = op.regions[0];
  const std::map<int, int64_t> consts = block_constants(cond);
  for (const Op& c : cond.ops) {
    if (short_name(c.name) == "compare" && c.operands.size() == 2) {
      int a = c.operands[0], b = c.operands[1];
      auto arg = std::find(cond.args.begin(), cond.args.end(), a);
      if (arg == cond.args.end() || !consts.count(b)) continue;
      size_t idx = static_cast<size_t>(arg - cond.args.begin());
      // The counter's first value: a constant (else the count is unknown).
      if (idx >= op.operands.size() || !const_int_[static_cast<size_t>(op.operands[idx])])
        return std::nullopt;
      const int64_t init = *const_int_[static_cast<size_t>(op.operands[idx])];
      const int64_t limit = consts.at(b);
      const bool le = c.attrs.find("LE") != std::string::npos;
      if (c.attrs.find("LT") == std::string::npos && !le) continue;
      // The counter's step, from the body: a constant added (else, or moving away from the
      // limit, the count is unknown).
      const std::optional<int64_t> step = induction_step(op, idx);
      if (!step || *step <= 0) return std::nullopt;
      const int64_t span = limit - init + (le ? 1 : 0);
      return span > 0 ? (span + *step - 1) / *step : 0;
    }
  }
  return std::nullopt;
}

Status Builder::while_loop(const Op& op, double repeat) {
  if (op.regions.size() < 2) return Error::parse("while without cond and body", "", op.line, op.column);
  // Counting an unknown loop once would make the candidate look many times cheaper than
  // it is (a 40-layer scan 40x): it cannot be priced.
  const std::optional<int64_t> known_trips = trip_count(op);
  if (!known_trips)
    return Error::unsupported("a while loop whose trip count is unknown (its condition is not a "
                              "counter compared with a constant): the candidate cannot be priced",
                              "", op.line, op.column);
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
  RETURN_IF_ERROR(walk(body, repeat * static_cast<double>(trips), nullptr, &ret));
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
  return Status::success();
}

Status Builder::case_op(const Op& op, double repeat) {
  // One branch runs: keep the costliest (most FLOPs, then bytes).
  size_t start = dag_.nodes.size();
  std::vector<DagNode> best_nodes;
  std::vector<int> best_ret;
  double best_cost = -1;
  for (int v : op.operands) resolve_partial(v, nullptr, op, repeat);
  for (const Block& br : op.regions) {
    std::vector<int> ret;
    RETURN_IF_ERROR(walk(br, repeat, nullptr, &ret));
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
  return Status::success();
}

Status Builder::manual_computation(const Op& op, double repeat) {
  if (op.regions.empty()) return Error::parse("sdy.manual_computation without a body", "", op.line, op.column);
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
  RETURN_IF_ERROR(walk(body, repeat, nullptr, &ret));
  std::vector<int> outs = ret;
  bind_results(op, outs);
  for (size_t r = 0; r < op.results.size(); ++r) {
    ShardState s;
    s.sharding = normalize(m_.values[static_cast<size_t>(op.results[r])].sharding, type(op.results[r]).shape.size());
    s.from_inputs = false;
    st_[static_cast<size_t>(op.results[r])] = s;
  }
  return Status::success();
}

}  // namespace aoizora::shlo::detail
