// A value's sharding state during Stage 1's analysis (ShardState: its sharding, the mesh
// axes it is still a partial sum over, whether it is manual) and the per-device shape and
// bytes a sharding implies for a tensor type (ceil division). Pure functions over plain
// data; propagate.cpp, reshard.h and the DAG builder share them.
#pragma once

#include <cstdint>
#include <vector>

#include "aoizora/shlo/ir.h"
#include "aoizora/shlo/sharding.h"

namespace aoizora::shlo {

// A value during analysis: its sharding, the axes over which it is still a partial sum
// (result of a contraction or reduction over a sharded dim), and whether it is manual
// (inside shard_map: its type is already per device).
struct ShardState {
  TensorSharding sharding;
  std::vector<AxisRef> partial;
  bool manual = false;
  bool from_inputs = true;   // depends only on program inputs (weights, latents)
};

// Per-device shape of a global type under a sharding (ceil division).
std::vector<int64_t> local_shape(const MeshTable& meshes, const TensorType& type,
                                 const TensorSharding& s);
double local_bytes(const MeshTable& meshes, const TensorType& type, const ShardState& st);

}  // namespace aoizora::shlo
