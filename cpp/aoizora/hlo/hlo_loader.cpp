#include "aoizora/hlo/hlo_loader.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "aoizora/hlo/device_count.h"
#include "aoizora/hlo/hlo_module.h"
#include "aoizora/hlo/hlo_parser.h"
#include "aoizora/hlo/op_cost.h"
#include "aoizora/hlo/replica_groups.h"
#include "aoizora/hlo/trip_count.h"

namespace aoizora::hlo {
namespace {

constexpr int kMaxCallDepth = 32;

// The collective kind of an opcode (sync or -start), or nullopt.
std::optional<CollectiveKind> collective_kind(std::string_view op) {
  constexpr std::string_view kStart = "-start";
  if (op.size() > kStart.size() && op.substr(op.size() - kStart.size()) == kStart)
    op.remove_suffix(kStart.size());
  if (op == "all-gather") return CollectiveKind::kAllGather;
  if (op == "all-reduce") return CollectiveKind::kAllReduce;
  if (op == "reduce-scatter") return CollectiveKind::kReduceScatter;
  if (op == "all-to-all") return CollectiveKind::kAllToAll;
  if (op == "collective-permute") return CollectiveKind::kCollectivePermute;
  if (op == "collective-broadcast") return CollectiveKind::kCollectiveBroadcast;
  if (op == "ragged-all-to-all") return CollectiveKind::kRaggedAllToAll;
  return std::nullopt;
}

bool is_async_start(std::string_view op) {
  return op.size() > 6 && op.substr(op.size() - 6) == "-start" && collective_kind(op);
}

bool is_collective_done(std::string_view op) {
  return op == "all-gather-done" || op == "all-reduce-done" ||
         op == "collective-permute-done" || op == "reduce-scatter-done" ||
         op == "all-to-all-done";
}

std::optional<int64_t> to_int(std::string_view s) {
  int64_t v;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

// A collective instruction found somewhere in the module: computation and index.
struct Found {
  int comp;
  int index;
};

class Builder {
 public:
  Builder(const HloModule& m, const DeviceCount& devices, std::string filename)
      : m_(m), cost_(m), filename_(std::move(filename)) {
    g_.num_partitions = devices.num_partitions;
    g_.replica_count = devices.replica_count;
    g_.device_count_source = devices.source;
    where_.resize(m.computations.size());
    for (size_t c = 0; c < m.computations.size(); ++c)
      where_[c].assign(m.computations[c].instructions.size(), {-1, -1});
  }

  Result<CollectiveGraph> build() {
    start_region("entry", 1, true);
    auto r = walk(m_.entry, 1, "entry", true, 0);
    if (!r.ok()) return r.error();
    if (g_.regions.size() > 1 && g_.regions.back().ops.empty()) g_.regions.pop_back();
    return std::move(g_);
  }

 private:
  Error error_at(const Instruction& ins, std::string msg) {
    return Error{"instruction '" + std::string(ins.name) + "': " + std::move(msg), filename_,
                 ins.line, 0};
  }

  // Starts a region, reusing the current one when it has no ops yet.
  void start_region(std::string name, int64_t repeat, bool known) {
    if (g_.regions.empty() || !g_.regions.back().ops.empty()) g_.regions.emplace_back();
    Region& r = g_.regions.back();
    r.name = std::move(name);
    r.repeat = repeat;
    r.trip_count_known = known;
  }

  // Walks computation `c` in schedule order, executed `repeat` times per program run.
  Result<bool> walk(int c, int64_t repeat, const std::string& region_name, bool known,
                    int depth) {
    if (depth > kMaxCallDepth) {
      return Error{"calls nest deeper than " + std::to_string(kMaxCallDepth) +
                       " levels (or recurse) at computation '" +
                       std::string(m_.computations[c].name) + "'",
                   filename_, 0, 0};
    }
    const Computation& comp = m_.computations[c];
    for (size_t i = 0; i < comp.instructions.size(); ++i) {
      const Instruction& ins = comp.instructions[i];
      if (ins.opcode == "while") {
        int body = ins.callee("body");
        if (body < 0) return error_at(ins, "a while without a body=");
        std::optional<int64_t> trip = while_trip_count(m_, c, static_cast<int>(i));
        int64_t inner = repeat;
        if (trip && __builtin_mul_overflow(repeat, *trip, &inner)) inner = INT64_MAX / 2;
        const bool body_known = known && trip.has_value();
        const std::string body_name(m_.computations[body].name);
        start_region(body_name, trip ? inner : repeat, body_known);
        Loop loop{body_name, trip.value_or(1), trip.has_value(), loops_.empty() ? -1 : loops_.back(),
                  static_cast<int>(g_.regions.size()) - 1, 0};
        const int loop_index = static_cast<int>(g_.loops.size());
        g_.loops.push_back(loop);
        loops_.push_back(loop_index);
        auto r = walk(body, trip ? inner : repeat, body_name, body_known, depth + 1);
        loops_.pop_back();
        if (!r.ok()) return r;
        end_loop(loop_index);
        start_region(region_name, repeat, known);
        add_op(c, static_cast<int>(i));  // the while's result, for deps; no cost of its own
        continue;
      }
      if (ins.opcode == "call" && !ins.called.empty()) {
        int callee = ins.called[0];
        const Computation& cc = m_.computations[callee];
        // Parameters of the callee stand for the call's operands.
        for (size_t k = 0; k < cc.instructions.size(); ++k) {
          if (cc.instructions[k].opcode != "parameter") continue;
          auto p = to_int(cc.instructions[k].raw_operands);
          if (p && *p >= 0 && static_cast<size_t>(*p) < ins.operands.size() &&
              ins.operands[*p] >= 0)
            where_[callee][k] = where_[c][ins.operands[*p]];
        }
        auto r = walk_inlined(callee, repeat, region_name, known, depth + 1);
        if (!r.ok()) return r;
        add_op(c, static_cast<int>(i));
        continue;
      }
      auto r = add_op(c, static_cast<int>(i));
      if (!r.ok()) return r;
    }
    return true;
  }

  // Closes loop `index` after its body was walked: its last region is the current one. A
  // body without ops (nothing scheduled) is no loop: its region is reused by what follows.
  void end_loop(int index) {
    Loop& loop = g_.loops[index];
    loop.last_region = static_cast<int>(g_.regions.size()) - 1;
    if (loop.last_region == loop.first_region && g_.regions.back().ops.empty())
      g_.loops.resize(index);  // loops nested in it were empty too
  }

  // Like walk, but parameters are already mapped to the caller's ops.
  Result<bool> walk_inlined(int c, int64_t repeat, const std::string& region_name, bool known,
                            int depth) {
    inlined_.push_back(c);
    auto r = walk(c, repeat, region_name, known, depth);
    inlined_.pop_back();
    return r;
  }

  bool skip_parameter(int c, const Instruction& ins) const {
    return ins.opcode == "parameter" && !inlined_.empty() && inlined_.back() == c;
  }

  // Collectives in computation c and everything it calls, in text order.
  void find_collectives(int c, std::vector<Found>* out, std::vector<bool>* seen) {
    if (c < 0 || (*seen)[c]) return;
    (*seen)[c] = true;
    const Computation& comp = m_.computations[c];
    for (size_t i = 0; i < comp.instructions.size(); ++i) {
      const Instruction& ins = comp.instructions[i];
      if (collective_kind(ins.opcode)) out->push_back({c, static_cast<int>(i)});
      for (int k : ins.called) find_collectives(k, out, seen);
    }
  }

  // Appends instruction i of computation c to the current region.
  Result<bool> add_op(int c, int i) {
    const Computation& comp = m_.computations[c];
    const Instruction& ins = comp.instructions[i];
    if (skip_parameter(c, ins)) return true;
    Region& region = g_.regions.back();
    const int region_index = static_cast<int>(g_.regions.size()) - 1;
    const int op_index = static_cast<int>(region.ops.size());
    ScheduledOp op;
    op.name = std::string(ins.name);
    op.opcode = std::string(ins.opcode);
    if (ins.opcode != "while" && ins.opcode != "call") {
      OpCost cost = cost_.cost(c, i);
      op.flops = cost.flops;
      op.bytes = cost.bytes;
      op.opaque = cost.opaque;
      op.matmuls = std::move(cost.matmuls);
    }
    for (int k : ins.operands) {
      if (k < 0) continue;
      auto [r, o] = where_[c][k];
      if (r == region_index && o >= 0 &&
          std::find(op.deps.begin(), op.deps.end(), o) == op.deps.end())
        op.deps.push_back(o);
    }
    where_[c][i] = {region_index, op_index};

    // A -done (or async-done) completes the collectives its start began; an async-update
    // only passes them on (they stay in flight): it is a compute op of no cost, and a later
    // async-done of it completes them.
    const bool done = is_collective_done(ins.opcode) || ins.opcode == "async-done";
    if ((done || ins.opcode == "async-update") && !ins.operands.empty() &&
        ins.operands[0] >= 0) {
      auto [r, o] = where_[c][ins.operands[0]];
      auto in_flight = r >= 0 && o >= 0 ? in_flight_.find({r, o}) : in_flight_.end();
      if (in_flight != in_flight_.end()) {
        const std::vector<int> colls = in_flight->second;
        if (!done) {
          in_flight_[{region_index, op_index}] = colls;
        } else {
          op.collectives = colls;
          op.collective = colls.front();
          op.kind = OpKind::kCollectiveDone;
          for (int ci : colls) {
            Collective& col = g_.collectives[ci];
            col.done_op = op_index;
            if (col.region != region_index) col.done_region = region_index;
            if (col.kind != CollectiveKind::kAllToAll &&
                col.kind != CollectiveKind::kCollectivePermute &&
                col.kind != CollectiveKind::kCollectiveBroadcast &&
                ins.opcode != "async-done")
              col.result_bytes = ins.shape.byte_size();
          }
        }
      }
      region.ops.push_back(std::move(op));
      return true;
    }

    std::vector<Found> found;
    bool async = false;
    if (collective_kind(ins.opcode)) {
      found.push_back({c, i});
      async = is_async_start(ins.opcode);
    } else if (!ins.called.empty() && ins.opcode != "while" && ins.opcode != "call") {
      std::vector<bool> seen(m_.computations.size(), false);
      if (ins.opcode == "conditional") {
        // The most expensive branch stands for the conditional.
        int best = -1;
        double best_flops = -1;
        for (int k : ins.called) {
          double f = cost_.computation_flops(k);
          if (f > best_flops) best = k, best_flops = f;
        }
        find_collectives(best, &found, &seen);
      } else {
        for (int k : ins.called) find_collectives(k, &found, &seen);
      }
      async = ins.opcode == "async-start";
    }
    if (!async && ins.opcode == "fusion" && !found.empty()) {
      std::vector<int> chained = chained_collectives(found);
      if (!chained.empty()) {
        continue_chain(ins, chained, std::move(op));
        return true;
      }
    }
    for (const Found& f : found) {
      auto col = make_collective(f, ins, async, region_index, op_index);
      if (!col.ok()) return col.error();
      tail_.emplace_back(region_index, op_index);
      op.collectives.push_back(static_cast<int>(g_.collectives.size()));
      g_.collectives.push_back(std::move(*col));
    }
    if (!op.collectives.empty()) {
      op.collective = op.collectives.front();
      op.kind = async ? OpKind::kCollectiveStart : OpKind::kCollective;
      if (async) in_flight_[{region_index, op_index}] = op.collectives;
      if (ins.opcode == "fusion" && !async)
        for (int ci : op.collectives)
          if (g_.collectives[ci].channel_id >= 0) open_[g_.collectives[ci].channel_id] = ci;
    }
    region.ops.push_back(std::move(op));
    return true;
  }

  // The TPU compiler prints one asynchronous collective as a chain of fusions that each wrap
  // the same collective (same channel_id): a start, continuation fusions (compute that runs
  // while the collective is in flight; a backend_config continuation_config), possibly inside
  // a nested loop, and a done. Counting every link would move the data once per link and
  // serialise the continuations' compute. A fusion-wrapped collective opens a chain; a later
  // fusion wrapping a collective of the same channel, kind and size continues it, and closes
  // it unless it is a continuation. Returns the collectives `ins` continues, or {}.
  std::vector<int> chained_collectives(const std::vector<Found>& found) const {
    std::vector<int> chained;
    for (const Found& f : found) {
      const Computation& comp = m_.computations[f.comp];
      const Instruction& inner = comp.instructions[f.index];
      auto channel = to_int(inner.attr("channel_id"));
      auto it = channel ? open_.find(*channel) : open_.end();
      if (it == open_.end()) return {};
      int64_t operand_bytes = 0;
      for (int k : inner.operands)
        if (k >= 0) operand_bytes += comp.instructions[k].shape.byte_size();
      const Collective& col = g_.collectives[it->second];
      if (col.kind != *collective_kind(inner.opcode) || col.operand_bytes != operand_bytes)
        return {};
      chained.push_back(it->second);
    }
    return chained;
  }

  // Appends a link of a chain: the previous link becomes the start (if it was the first) or
  // plain compute (a continuation), and this one the done until a later link continues it.
  void continue_chain(const Instruction& ins, const std::vector<int>& chained, ScheduledOp op) {
    const int region_index = static_cast<int>(g_.regions.size()) - 1;
    const int op_index = static_cast<int>(g_.regions.back().ops.size());
    const bool continuation = is_continuation_fusion(ins);
    for (int ci : chained) {
      Collective& col = g_.collectives[ci];
      ScheduledOp& prev = g_.regions[tail_[ci].first].ops[tail_[ci].second];
      if (tail_[ci] == std::pair{col.region, col.start_op}) {
        prev.kind = OpKind::kCollectiveStart;
        col.async = true;
      } else {
        prev.kind = OpKind::kCompute;
        prev.collective = -1;
        prev.collectives.clear();
      }
      col.done_op = op_index;
      col.done_region = col.region == region_index ? -1 : region_index;
      tail_[ci] = {region_index, op_index};
      if (!continuation) open_.erase(col.channel_id);
    }
    op.collectives = chained;
    op.collective = chained.front();
    op.kind = OpKind::kCollectiveDone;
    g_.regions.back().ops.push_back(std::move(op));
  }

  Result<Collective> make_collective(const Found& f, const Instruction& caller, bool async,
                                     int region_index, int op_index) {
    const Computation& comp = m_.computations[f.comp];
    const Instruction& ins = comp.instructions[f.index];
    Collective col;
    col.kind = *collective_kind(ins.opcode);
    col.name = std::string(caller.name);
    col.opcode = std::string(ins.opcode);
    col.async = async;
    col.repeat = g_.regions[region_index].repeat;
    col.region = region_index;
    col.start_op = col.done_op = op_index;
    std::string_view channel = ins.attr("channel_id");
    if (!channel.empty()) {
      if (auto v = to_int(channel)) col.channel_id = *v;
    }
    for (int k : ins.operands)
      if (k >= 0) col.operand_bytes += comp.instructions[k].shape.byte_size();
    if (async && ins.opcode != caller.opcode) {
      col.result_bytes = ins.shape.byte_size();  // inside an async-start wrapper
    } else if (is_async_start(ins.opcode)) {
      col.result_bytes = col.operand_bytes;       // set from the -done's shape when it comes
    } else {
      col.result_bytes = ins.shape.byte_size();
    }
    if (col.kind == CollectiveKind::kAllToAll || col.kind == CollectiveKind::kRaggedAllToAll ||
        col.kind == CollectiveKind::kCollectivePermute ||
        col.kind == CollectiveKind::kCollectiveBroadcast) {
      if (col.kind != CollectiveKind::kRaggedAllToAll) col.result_bytes = col.operand_bytes;
    }
    // An all-reduce fused with the slice of its result is a reduce-scatter (TPU's
    // all-reduce-scatter fusion): its result is the fusion's result.
    if (col.kind == CollectiveKind::kAllReduce && caller.opcode == "fusion" &&
        &caller != &ins) {
      int64_t fused_result = caller.shape.byte_size();
      if (fused_result > 0 && fused_result < col.result_bytes) {
        col.kind = CollectiveKind::kReduceScatter;
        col.result_bytes = fused_result;
      }
    }
    if (col.kind == CollectiveKind::kCollectivePermute) {
      std::string_view pairs = ins.attr("source_target_pairs");
      if (!pairs.empty()) {
        auto p = parse_source_target_pairs(pairs);
        if (!p.ok()) return error_at(ins, "source_target_pairs: " + p.error().message);
        col.source_target_pairs = std::move(*p);
      }
      return col;
    }
    Groups raw;
    std::string_view rg = ins.attr("replica_groups");
    if (!rg.empty()) {
      auto parsed = parse_replica_groups(rg);
      if (!parsed.ok()) return error_at(ins, "replica_groups: " + parsed.error().message);
      raw = std::move(*parsed);
    }
    const bool has_ugdi = col.kind == CollectiveKind::kAllGather ||
                          col.kind == CollectiveKind::kAllReduce ||
                          col.kind == CollectiveKind::kReduceScatter;
    GroupMode mode = group_mode(!channel.empty(), has_ugdi,
                                ins.attr("use_global_device_ids") == "true");
    auto groups = resolve_groups(raw, mode, g_.replica_count, g_.num_partitions);
    if (!groups.ok()) return error_at(ins, groups.error().message);
    col.groups = std::move(*groups);
    return col;
  }

  const HloModule& m_;
  CostModel cost_;
  std::string filename_;
  CollectiveGraph g_;
  // (region, op) of every instruction placed in the schedule; (-1,-1) when not placed.
  std::vector<std::vector<std::pair<int, int>>> where_;
  std::vector<int> inlined_;  // computations being inlined by `call`
  std::vector<int> loops_;    // the loops being walked, outermost first
  // Async collective fusion chains: the open chain of each channel_id (its collective), and
  // the (region, op) of each collective's latest link.
  std::map<int64_t, int> open_;
  // The collectives in flight after each -start or async-update op, by (region, op): what a
  // -done, async-done or async-update of it continues.
  std::map<std::pair<int, int>, std::vector<int>> in_flight_;
  std::vector<std::pair<int, int>> tail_;
};

}  // namespace

Result<CollectiveGraph> collective_graph_from_text(std::string_view text, std::string filename,
                                                   const LoadOptions& options) {
  auto module = parse_hlo_module(text, filename);
  if (!module.ok()) return module.error();
  if (module->entry < 0) return Error{"no ENTRY computation", filename, 0, 0};
  const DeviceCount devices = device_count(*module, options.num_devices);
  return Builder(*module, devices, std::move(filename)).build();
}

Result<CollectiveGraph> collective_graph_from_file(const std::string& path,
                                                   const LoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{"cannot open the file", path, 0, 0};
  std::string text;
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) return Error{"cannot read the file", path, 0, 0};
  text.resize(static_cast<size_t>(size));
  in.seekg(0, std::ios::beg);
  in.read(text.data(), size);
  if (!in) return Error{"cannot read the file", path, 0, 0};
  return collective_graph_from_text(text, path, options);
}

}  // namespace aoizora::hlo
