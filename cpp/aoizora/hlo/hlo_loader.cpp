// The loader's walk: the entry computation in schedule order, cut into regions at while
// loops (trip counts multiplied through nesting), calls inlined, every op priced (op_cost.h);
// collectives read where they are scheduled (collective_instruction.h), async pairs and
// async-updates stitched, fusion chains joined (async_chains.h).
#include "aoizora/hlo/hlo_loader.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "aoizora/hlo/async_chains.h"
#include "aoizora/hlo/attribute_text.h"
#include "aoizora/hlo/collective_instruction.h"
#include "aoizora/hlo/device_count.h"
#include "aoizora/hlo/hlo_module.h"
#include "aoizora/hlo/hlo_parser.h"
#include "aoizora/hlo/op_cost.h"
#include "aoizora/hlo/trip_count.h"

namespace aoizora::hlo {
namespace {

constexpr int kMaxCallDepth = 32;

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
    RETURN_IF_ERROR(walk(m_.entry, 1, "entry", true, 0));
    if (g_.regions.size() > 1 && g_.regions.back().ops.empty()) g_.regions.pop_back();
    return std::move(g_);
  }

 private:
  Error error_at(const Instruction& ins, std::string msg) {
    return Error::parse("instruction '" + std::string(ins.name) + "': " + std::move(msg), filename_,
                        ins.line);
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
  Status walk(int c, int64_t repeat, const std::string& region_name, bool known, int depth) {
    if (depth > kMaxCallDepth) {
      return Error::unsupported("calls nest deeper than " + std::to_string(kMaxCallDepth) +
                                    " levels (or recurse) at computation '" +
                                    std::string(m_.computations[c].name) + "'",
                                filename_);
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
        // The while's result, for deps; no cost of its own. Cannot fail: add_op fails only
        // on a collective, and a while carries none itself.
        (void)add_op(c, static_cast<int>(i));
        continue;
      }
      if (ins.opcode == "call" && !ins.called.empty()) {
        int callee = ins.called[0];
        const Computation& cc = m_.computations[callee];
        // Parameters of the callee stand for the call's operands.
        for (size_t k = 0; k < cc.instructions.size(); ++k) {
          if (cc.instructions[k].opcode != "parameter") continue;
          auto p = attribute_int(cc.instructions[k].raw_operands);
          if (p && *p >= 0 && static_cast<size_t>(*p) < ins.operands.size() &&
              ins.operands[*p] >= 0)
            where_[callee][k] = where_[c][ins.operands[*p]];
        }
        RETURN_IF_ERROR(walk_inlined(callee, repeat, region_name, known, depth + 1));
        (void)add_op(c, static_cast<int>(i));  // a call carries no collective: cannot fail
        continue;
      }
      RETURN_IF_ERROR(add_op(c, static_cast<int>(i)));
    }
    return Status::success();
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
  Status walk_inlined(int c, int64_t repeat, const std::string& region_name, bool known,
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

  // The scheduled op of instruction i of computation c (its cost and its dependencies in
  // the region), placed at (region_index, op_index).
  ScheduledOp make_op(int c, int i, int region_index, int op_index) {
    const Instruction& ins = m_.computations[c].instructions[i];
    ScheduledOp op;
    op.name = std::string(ins.name);
    op.opcode = std::string(ins.opcode);
    if (ins.opcode != "while" && ins.opcode != "call") {
      OpCost cost = cost_.cost(c, i);
      op.flops = cost.flops;
      op.bytes = cost.bytes;
      op.opaque = cost.opaque;
      op.matmuls = std::move(cost.matmuls);
      op.kernel = cost.kernel;
    }
    for (int k : ins.operands) {
      if (k < 0) continue;
      auto [r, o] = where_[c][k];
      if (r == region_index && o >= 0 &&
          std::find(op.deps.begin(), op.deps.end(), o) == op.deps.end())
        op.deps.push_back(o);
    }
    where_[c][i] = {region_index, op_index};
    return op;
  }

  // A -done (or async-done) completes the collectives its start began; an async-update
  // only passes them on (they stay in flight): it is a compute op of no cost, and a later
  // async-done of it completes them.
  void complete_in_flight(int c, const Instruction& ins, bool done, int region_index,
                          int op_index, ScheduledOp* op) {
    auto [r, o] = where_[c][ins.operands[0]];
    auto in_flight = r >= 0 && o >= 0 ? in_flight_.find({r, o}) : in_flight_.end();
    if (in_flight == in_flight_.end()) return;
    const std::vector<int> colls = in_flight->second;
    if (!done) {
      in_flight_[{region_index, op_index}] = colls;
      return;
    }
    op->collectives = colls;
    op->collective = colls.front();
    op->kind = OpKind::kCollectiveDone;
    for (int ci : colls) {
      Collective& col = g_.collectives[ci];
      col.done_op = op_index;
      if (col.region != region_index) col.done_region = region_index;
      if (col.kind != CollectiveKind::kAllToAll &&
          col.kind != CollectiveKind::kCollectivePermute &&
          col.kind != CollectiveKind::kCollectiveBroadcast && ins.opcode != "async-done")
        col.result_bytes = ins.shape.byte_size();
    }
  }

  // The collectives instruction i of computation c runs: itself, or those in the
  // computations it calls (a conditional's most expensive branch); *async when it starts
  // them without waiting.
  std::vector<Found> collectives_of(int c, int i, bool* async) {
    const Instruction& ins = m_.computations[c].instructions[i];
    std::vector<Found> found;
    *async = false;
    if (collective_kind(ins.opcode)) {
      found.push_back({c, i});
      *async = is_async_start(ins.opcode);
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
      *async = ins.opcode == "async-start";
    }
    return found;
  }

  // Appends instruction i of computation c to the current region.
  Status add_op(int c, int i) {
    const Computation& comp = m_.computations[c];
    const Instruction& ins = comp.instructions[i];
    if (skip_parameter(c, ins)) return Status::success();
    Region& region = g_.regions.back();
    const int region_index = static_cast<int>(g_.regions.size()) - 1;
    const int op_index = static_cast<int>(region.ops.size());
    ScheduledOp op = make_op(c, i, region_index, op_index);

    const bool done = is_collective_done(ins.opcode) || ins.opcode == "async-done";
    if ((done || ins.opcode == "async-update") && !ins.operands.empty() &&
        ins.operands[0] >= 0) {
      complete_in_flight(c, ins, done, region_index, op_index, &op);
      region.ops.push_back(std::move(op));
      return Status::success();
    }

    bool async = false;
    std::vector<Found> found = collectives_of(c, i, &async);
    if (!async && ins.opcode == "fusion" && !found.empty()) {
      std::vector<int> chained = chains_.chained(m_, found, g_);
      if (!chained.empty()) {
        chains_.continue_chain(ins, chained, std::move(op), g_);
        return Status::success();
      }
    }
    const CollectiveSite site{region_index, op_index, region.repeat, g_.replica_count,
                              g_.num_partitions};
    for (const Found& f : found) {
      ASSIGN_OR_RETURN(auto col, read_collective(m_, f, ins, async, site, filename_));
      chains_.scheduled(static_cast<int>(g_.collectives.size()), region_index, op_index);
      op.collectives.push_back(static_cast<int>(g_.collectives.size()));
      g_.collectives.push_back(std::move(col));
    }
    if (!op.collectives.empty()) {
      op.collective = op.collectives.front();
      op.kind = async ? OpKind::kCollectiveStart : OpKind::kCollective;
      if (async) in_flight_[{region_index, op_index}] = op.collectives;
      if (ins.opcode == "fusion" && !async)
        for (int ci : op.collectives)
          if (g_.collectives[ci].channel_id >= 0) chains_.open(g_.collectives[ci].channel_id, ci);
    }
    region.ops.push_back(std::move(op));
    return Status::success();
  }

  const HloModule& m_;
  CostModel cost_;
  std::string filename_;
  CollectiveGraph g_;
  // (region, op) of every instruction placed in the schedule; (-1,-1) when not placed.
  std::vector<std::vector<std::pair<int, int>>> where_;
  std::vector<int> inlined_;  // computations being inlined by `call`
  std::vector<int> loops_;    // the loops being walked, outermost first
  AsyncChains chains_;
  // The collectives in flight after each -start or async-update op, by (region, op): what a
  // -done, async-done or async-update of it continues.
  std::map<std::pair<int, int>, std::vector<int>> in_flight_;
};

}  // namespace

Result<CollectiveGraph> collective_graph_from_text(std::string_view text, std::string filename,
                                                   const LoadOptions& options) {
  ASSIGN_OR_RETURN(auto module, parse_hlo_module(text, filename));
  if (module.entry < 0) return Error::parse("no ENTRY computation", filename);
  const DeviceCount devices = device_count(module, options.num_devices);
  return Builder(module, devices, std::move(filename)).build();
}

Result<CollectiveGraph> collective_graph_from_file(const std::string& path,
                                                   const LoadOptions& options) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error::not_found("cannot open the file", path);
  std::string text;
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) return Error::not_found("cannot read the file", path);
  text.resize(static_cast<size_t>(size));
  in.seekg(0, std::ios::beg);
  in.read(text.data(), size);
  if (!in) return Error::not_found("cannot read the file", path);
  return collective_graph_from_text(text, path, options);
}

}  // namespace aoizora::hlo
