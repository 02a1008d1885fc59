// A collective of the program lowered to what the engine plays: its groups (a permute's are
// the connected components of its source-target pairs; no groups means everyone), each
// member's chip, and every flow cost::expand gives it, with its route (RouteTable) and its
// delivery latency (hops x the link's latency). Flows from a chip outside every group are
// dropped. Built once per collective, on first use (engine.cpp); deterministic.
#pragma once

#include <functional>
#include <vector>

#include "aoizora/hlo/collective_graph.h"
#include "aoizora/sim/simulator.h"
#include "aoizora/topo/topology.h"

namespace aoizora::sim {

// One flow of a collective's expansion, with its route resolved.
struct FlowSpec {
  int src = 0;          // chip
  int dst = 0;          // chip
  int src_member = 0;   // index of src in the group's members
  int dst_member = -1;  // index of dst in the group's members, -1 if outside the group
  int src_track = 0;    // src_member's sequence of steps for the flow's lane (GroupPlan)
  int dst_track = -1;   // dst_member's, -1 if outside the group
  int step = 0;
  double bytes = 0;
  int route = 0;        // RouteTable id
  double latency = 0;   // seconds from drained to delivered
};

// A member steps through each lane of the collective's flows (cost::Flow::lane) on its own:
// track member * lanes + lane. A track's step s starts once its step s-1 inflows are in.
struct GroupPlan {
  std::vector<int> members;                        // chips
  int num_steps = 0;
  int lanes = 1;
  std::vector<std::vector<std::vector<int>>> out;  // [track][step] -> flow ids
  std::vector<std::vector<int>> in_count;          // [track][step]
  std::vector<std::vector<int>> out_count;         // [track][step]
  std::vector<int> member_flows;                   // [member]: flows it sends or receives
  int num_flows = 0;
};

struct CollectivePlan {
  std::vector<int> group_of_partition;   // -1: not a participant
  std::vector<int> member_of_partition;  // its index in its group's members
  std::vector<GroupPlan> groups;
  std::vector<FlowSpec> flows;
  int label = 0;                         // the engine's label of the collective's name
  double overhead = 0;                   // fixed seconds before the first flow
};

// Routes between chips, each resolved once: an id per (src, dst) pair.
class RouteTable {
 public:
  RouteTable(int num_devices, std::function<std::vector<int>(int, int)> route)
      : num_devices_(num_devices), route_(std::move(route)),
        id_of_pair_(static_cast<size_t>(num_devices) * num_devices, -1) {}
  int id(int src, int dst);
  const std::vector<int>& links(int id) const { return routes_[id]; }  // directed link ids

 private:
  int num_devices_;
  std::function<std::vector<int>(int, int)> route_;
  std::vector<int> id_of_pair_;
  std::vector<std::vector<int>> routes_;
};

// Lowers collective `c` of a program of `num_partitions` partitions placed by `device_of`
// (partition_of_chip its inverse, -1 for a free chip). `label` is left 0.
CollectivePlan lower_collective(const hlo::Collective& c, int num_partitions,
                                const std::vector<int>& device_of,
                                const std::vector<int>& partition_of_chip,
                                const topo::Topology& topology, const SimOptions& options,
                                const FlowModel& model, RouteTable& routes);

}  // namespace aoizora::sim
