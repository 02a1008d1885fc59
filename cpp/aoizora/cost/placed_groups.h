// What the collectives of Stage 1's prediction DAG cost under one placement. A node's replica
// groups in partition ids come from the text (an explicit collective's groups or
// source-target pairs) or from the mesh axes it runs over (an implicit one: partition p sits
// at the row-major unravelling of p over the mesh, as Shardy and JAX number them); the
// placement puts them on devices, and group_cost.h prices them. Q1 priced on one placement
// gives every mesh axis the links that placement gives it, and no two axes the same links at
// once.
#pragma once

#include <optional>
#include <vector>

#include "aoizora/cost/group_cost.h"
#include "aoizora/shlo/dag.h"
#include "aoizora/topo/topology.h"

namespace aoizora::cost {

// The HLO collective kind of a DAG node's kind.
hlo::CollectiveKind to_hlo_kind(shlo::CommKind kind);

// A communication node's V (algorithm.h collective_volume's convention): an all-gather's
// gathered result, any other kind's operand.
inline double node_volume(const shlo::DagNode& n) {
  return n.comm == shlo::CommKind::kAllGather ? n.result_bytes : n.operand_bytes;
}

// The node's collective in partition ids, or nullopt when its groups are not known: an axis
// the mesh lacks, or groups whose size is not the node's group size.
std::optional<hlo::Collective> logical_collective(const shlo::DagNode& n, const shlo::Mesh& mesh);

// True when partitions of `mesh` can be placed on `t`: a named (Shardy) mesh of the slice's
// size (a GSPMD mesh's synthetic axes number devices, not mesh positions).
bool placeable(const shlo::Mesh& mesh, const topo::Topology& t);

class PlacedGroupCosts {
 public:
  // The DAG's communication nodes as distinct collectives, found once. Holds a reference to
  // the topology, which must outlive it; the mesh must be placeable.
  PlacedGroupCosts(const topo::Topology& t, const shlo::PredictionDag& dag, const shlo::Mesh& mesh);

  // Prices every distinct collective with partition p on device_of[p].
  void place(const std::vector<int>& device_of);
  // Node i's cost on the last placement, or null when its groups are not known (or it is
  // not a communication node).
  const GroupCost* get(size_t node) const {
    const int k = node < pattern_of_.size() ? pattern_of_[node] : -1;
    return k < 0 ? nullptr : &costs_[static_cast<size_t>(k)];
  }
  size_t distinct_collectives() const { return patterns_.size(); }
  // Every distinct collective's cost on the last placement: placements that price them all
  // alike give the same Q1.
  const std::vector<GroupCost>& costs() const { return costs_; }

 private:
  const topo::Topology& topo_;
  std::vector<int> pattern_of_;           // per DAG node: index into patterns_, or -1
  std::vector<hlo::Collective> patterns_;
  std::vector<GroupCost> costs_;          // per pattern, on the last placement
  PhaseLoads loads_;
};

}  // namespace aoizora::cost
