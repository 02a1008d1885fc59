#include "aoizora/hlo/collective_graph.h"

namespace aoizora::hlo {

std::string_view to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllGather: return "all-gather";
    case CollectiveKind::kAllReduce: return "all-reduce";
    case CollectiveKind::kReduceScatter: return "reduce-scatter";
    case CollectiveKind::kAllToAll: return "all-to-all";
    case CollectiveKind::kCollectivePermute: return "collective-permute";
    case CollectiveKind::kCollectiveBroadcast: return "collective-broadcast";
    case CollectiveKind::kRaggedAllToAll: return "ragged-all-to-all";
  }
  return "unknown";
}

double CollectiveGraph::total_flops() const {
  double total = 0;
  for (const Region& r : regions)
    for (const ScheduledOp& op : r.ops) total += op.flops * static_cast<double>(r.repeat);
  return total;
}

double CollectiveGraph::static_flops() const {
  double total = 0;
  for (const Region& r : regions)
    for (const ScheduledOp& op : r.ops) total += op.flops;
  return total;
}

double CollectiveGraph::total_bytes() const {
  double total = 0;
  for (const Region& r : regions)
    for (const ScheduledOp& op : r.ops) total += op.bytes * static_cast<double>(r.repeat);
  return total;
}

int64_t CollectiveGraph::collective_bytes(CollectiveKind kind) const {
  int64_t total = 0;
  for (const Collective& c : collectives)
    if (c.kind == kind) total += c.operand_bytes * c.repeat;
  return total;
}

std::vector<Loop> schedule_loops(const CollectiveGraph& graph) {
  if (!graph.loops.empty()) return graph.loops;
  std::vector<Loop> loops;
  for (size_t r = 0; r < graph.regions.size(); ++r) {
    const Region& region = graph.regions[r];
    if (region.repeat == 1) continue;
    Loop loop;
    loop.name = region.name;
    loop.trip_count = region.repeat;
    loop.trip_count_known = region.trip_count_known;
    loop.first_region = loop.last_region = static_cast<int>(r);
    loops.push_back(std::move(loop));
  }
  return loops;
}

std::vector<std::string> unknown_trip_count_loops(const CollectiveGraph& graph) {
  std::vector<std::string> names;
  for (const Loop& loop : graph.loops)
    if (!loop.trip_count_known) names.push_back(loop.name);
  if (graph.loops.empty())
    for (const Region& region : graph.regions)
      if (!region.trip_count_known) names.push_back(region.name);
  return names;
}

}  // namespace aoizora::hlo
