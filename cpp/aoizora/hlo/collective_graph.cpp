#include "aoizora/hlo/collective_graph.h"

#include <numeric>

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

Result<CollectiveGraph> replicated(const CollectiveGraph& graph, int replicas) {
  if (replicas < 1)
    return Error::invalid("replicated: " + std::to_string(replicas) +
                          " replicas; at least 1 is needed");
  if (graph.replica_count != 1)
    return Error::invalid("replicated: the graph has " + std::to_string(graph.replica_count) +
                          " replicas; only a graph of 1 replica (ids are partition ids) can be "
                          "replicated");
  const int n = graph.num_partitions;
  CollectiveGraph out = graph;
  out.num_partitions = n * replicas;
  for (Collective& c : out.collectives) {
    std::vector<std::vector<int>> groups;
    std::vector<std::pair<int, int>> pairs;
    for (int k = 0; k < replicas; ++k) {
      const int base = k * n;
      if (c.groups.empty() && c.source_target_pairs.empty()) {
        // "Every partition" means every partition of its own copy, not of the whole slice.
        groups.emplace_back(n);
        std::iota(groups.back().begin(), groups.back().end(), base);
      }
      for (const std::vector<int>& g : c.groups) {
        groups.emplace_back(g);
        for (int& p : groups.back()) p += base;
      }
      for (auto [s, t] : c.source_target_pairs) pairs.emplace_back(s + base, t + base);
    }
    c.groups = std::move(groups);
    c.source_target_pairs = std::move(pairs);
  }
  return out;
}

}  // namespace aoizora::hlo
