// The communication the SPMD partitioner inserts to turn a value from one sharding into
// another, per device: reduce-scatter / all-reduce for pending partial sums, all-to-all for
// an axis that moves between dimensions, all-gather for an axis that is dropped. Adding an
// axis is a local slice and costs nothing.
#pragma once

#include <vector>

#include "aoizora/shlo/dag.h"
#include "aoizora/shlo/ir.h"
#include "aoizora/shlo/shard_state.h"
#include "aoizora/shlo/sharding.h"

namespace aoizora::shlo {

// Communication nodes (kind, axes, group size, operand/result bytes; origin left to the
// caller) that bring `from` to sharding `to` with no pending partial sums. Empty when
// nothing has to move.
std::vector<DagNode> reshard(const MeshTable& meshes, const TensorType& type,
                             const ShardState& from, const TensorSharding& to);

// Bytes each device sends for the nodes on a ring (all-gather: result x (k-1)/k,
// all-reduce: 2 x operand x (k-1)/k, others operand x (k-1)/k): what options are compared by.
double moved_bytes(const std::vector<DagNode>& nodes);

}  // namespace aoizora::shlo
