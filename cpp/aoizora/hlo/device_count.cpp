#include "aoizora/hlo/device_count.h"

#include <algorithm>

#include "aoizora/hlo/replica_groups.h"

namespace aoizora::hlo {
namespace {

constexpr int kMaxDevices = 1 << 20;

bool is_grouped_collective(std::string_view op) {
  for (std::string_view c : {"all-gather", "all-reduce", "reduce-scatter", "all-to-all",
                             "collective-broadcast", "ragged-all-to-all"})
    if (op == c || (op.size() == c.size() + 6 && op.substr(0, c.size()) == c &&
                    op.substr(c.size()) == "-start"))
      return true;
  return false;
}

// The ids each collective needs: replicas, partitions, and flattened ids (replica*P + p).
struct Needs {
  int replicas = 1, partitions = 1, flattened = 1;
};

void note(const Instruction& ins, Needs* n) {
  const bool permute = ins.opcode.substr(0, 18) == "collective-permute";
  if (!permute && !is_grouped_collective(ins.opcode)) return;
  const bool has_channel = !ins.attr("channel_id").empty();
  int top = -1;
  if (permute) {
    auto pairs = parse_source_target_pairs(ins.attr("source_target_pairs"));
    if (!pairs.ok()) return;
    for (auto [a, b] : *pairs) top = std::max({top, a, b});
  } else {
    auto groups = parse_replica_groups(ins.attr("replica_groups"));
    if (!groups.ok()) return;
    for (const auto& g : *groups)
      for (int id : g) top = std::max(top, id);
  }
  if (top < 0) return;
  const int need = std::min(top + 1, kMaxDevices);
  const bool ugdi = ins.opcode.find("all-gather") == 0 || ins.opcode.find("all-reduce") == 0 ||
                    ins.opcode.find("reduce-scatter") == 0;
  const GroupMode mode = permute ? (has_channel ? GroupMode::kCrossPartition
                                                : GroupMode::kCrossReplica)
                                 : group_mode(has_channel, ugdi,
                                              ins.attr("use_global_device_ids") == "true");
  switch (mode) {
    case GroupMode::kCrossReplica:
    case GroupMode::kCrossReplicaAndPartition: n->replicas = std::max(n->replicas, need); break;
    case GroupMode::kCrossPartition: n->partitions = std::max(n->partitions, need); break;
    case GroupMode::kFlattenedId: n->flattened = std::max(n->flattened, need); break;
  }
}

}  // namespace

DeviceCount device_count(const HloModule& m, int num_devices) {
  DeviceCount out;
  out.replica_count = static_cast<int>(m.replica_count);
  out.num_partitions = static_cast<int>(m.num_partitions);
  const bool has_r = m.header.has_replica_count, has_p = m.header.has_num_partitions;
  // One count in the header means the other is XLA's default (1), as JAX prints modules.
  if (has_r || has_p) return out;
  if (num_devices > 0) {
    out.num_partitions = std::min(num_devices, kMaxDevices);
    out.source = "given";
    return out;
  }
  Needs n;
  for (const Computation& c : m.computations)
    for (const Instruction& ins : c.instructions) note(ins, &n);
  out.replica_count = n.replicas;
  out.num_partitions = n.partitions;
  // Flattened ids need replicas x partitions of them: grow the partitions.
  if (static_cast<int64_t>(out.replica_count) * out.num_partitions < n.flattened)
    out.num_partitions = (n.flattened + out.replica_count - 1) / out.replica_count;
  if (out.replica_count != m.replica_count || out.num_partitions != m.num_partitions)
    out.source = "inferred from replica groups";
  return out;
}

}  // namespace aoizora::hlo
