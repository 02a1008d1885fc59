#include "aoizora/hlo/collective_instruction.h"

#include <utility>

#include "aoizora/hlo/attribute_text.h"
#include "aoizora/hlo/replica_groups.h"

namespace aoizora::hlo {

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

Result<Collective> read_collective(const HloModule& m, const Found& f, const Instruction& caller,
                                   bool async, const CollectiveSite& site,
                                   const std::string& filename) {
  auto error_at = [&](const Instruction& ins, std::string msg, ErrorCode code) {
    return Error{"instruction '" + std::string(ins.name) + "': " + std::move(msg), filename,
                 ins.line, 0, code};
  };
  const Computation& comp = m.computations[f.comp];
  const Instruction& ins = comp.instructions[f.index];
  Collective col;
  col.kind = *collective_kind(ins.opcode);
  col.name = std::string(caller.name);
  col.opcode = std::string(ins.opcode);
  col.async = async;
  col.repeat = site.repeat;
  col.region = site.region;
  col.start_op = col.done_op = site.op;
  std::string_view channel = ins.attr("channel_id");
  if (!channel.empty()) {
    if (auto v = attribute_int(channel)) col.channel_id = *v;
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
      if (!p.ok()) return error_at(ins, "source_target_pairs: " + p.error().message, p.error().code);
      col.source_target_pairs = std::move(*p);
    }
    return col;
  }
  Groups raw;
  std::string_view rg = ins.attr("replica_groups");
  if (!rg.empty()) {
    auto parsed = parse_replica_groups(rg);
    if (!parsed.ok()) return error_at(ins, "replica_groups: " + parsed.error().message, parsed.error().code);
    raw = std::move(*parsed);
  }
  const bool has_ugdi = col.kind == CollectiveKind::kAllGather ||
                        col.kind == CollectiveKind::kAllReduce ||
                        col.kind == CollectiveKind::kReduceScatter;
  GroupMode mode = group_mode(!channel.empty(), has_ugdi,
                              ins.attr("use_global_device_ids") == "true");
  auto groups = resolve_groups(raw, mode, site.replica_count, site.num_partitions);
  if (!groups.ok()) return error_at(ins, groups.error().message, groups.error().code);
  col.groups = std::move(*groups);
  return col;
}

}  // namespace aoizora::hlo
