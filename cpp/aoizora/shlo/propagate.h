// Sharding rules for the ops Stage 1 understands: given operand shardings, the sharding of
// the result and the sharding each operand must be brought to first. Pure functions over
// plain data; the DAG builder turns every "operand must become X" into an implicit
// communication node. Rules follow what Shardy + the SPMD partitioner do in the common
// cases: keep shardings where a dimension maps through unchanged, never shard one mesh axis
// twice, and prefer moving the smaller operand when two shardings conflict.
#pragma once

#include <cstdint>
#include <vector>

#include "aoizora/shlo/ir.h"
#include "aoizora/shlo/shard_state.h"  // ShardState, local_shape: for the rules and their users
#include "aoizora/shlo/sharding.h"

namespace aoizora::shlo {

// Sharding with rank dims, all unsharded, on mesh.
TensorSharding replicated(const std::string& mesh, size_t rank);

// Sharding of the result of a reshape from `in` to `out` shapes, and the operand sharding
// it needs (axes on dimensions that do not map through are dropped).
struct ReshapeRule {
  TensorSharding operand;
  TensorSharding result;
};
ReshapeRule reshape_rule(const MeshTable& meshes, const TensorSharding& s,
                         const std::vector<int64_t>& in, const std::vector<int64_t>& out);

struct DotDims {
  std::vector<int64_t> lhs_batch, rhs_batch, lhs_contract, rhs_contract;
};

// dot_general: operand shardings to reshard to, result sharding and partial axes.
struct DotRule {
  TensorSharding lhs, rhs, result;
  std::vector<AxisRef> partial;
};
// Chooses among (a) keeping both operands, (b) moving one operand's contraction sharding to
// match the other, (c) gathering the contraction, the option with the fewest bytes moved.
DotRule dot_rule(const MeshTable& meshes, const DotDims& dims, const TensorType& lhs_type,
                 const TensorSharding& lhs, const TensorType& rhs_type,
                 const TensorSharding& rhs);

}  // namespace aoizora::shlo
