// The prediction DAG of Stage 1: what one program run costs per device, before XLA has
// compiled it. Compute nodes carry per-device FLOPs and HBM bytes; communication nodes are
// either explicit (collectives the text contains, e.g. inside shard_map) or implicit (where
// the SPMD partitioner will have to insert one: resharding between a producer and a
// consumer, a contraction or reduction over a sharded dimension, an opaque custom-call that
// needs its operands whole). Every communication node names the mesh axes it runs over.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aoizora/compute/mxu.h"
#include "aoizora/compute/splash_kernel.h"

#include "aoizora/shlo/sharding.h"

namespace aoizora::shlo {

enum class CommKind { kAllGather, kAllReduce, kReduceScatter, kAllToAll, kCollectivePermute,
                      kCollectiveBroadcast };
// Spelled like the HLO opcode ("all-gather", ...), so it compares with hlo::to_string.
std::string_view to_string(CommKind kind);

enum class CommOrigin {
  kExplicit,     // a collective op in the text (shard_map body)
  kReshard,      // producer sharding != consumer sharding
  kContraction,  // partial sums of a dot_general contracting over a sharded dim
  kReduction,    // partial results of a reduce over a sharded dim
  kCustomCall,   // operands of an opaque kernel gathered to the sharding it needs
};
std::string_view to_string(CommOrigin origin);

struct DagNode {
  enum class Kind { kCompute, kComm };
  Kind kind = Kind::kCompute;
  std::string op;            // the StableHLO op it comes from
  int line = 0;              // of that op in the text
  double repeat = 1;         // executions per program run (while trip counts multiply)
  std::vector<int> deps;     // earlier node ids whose results it needs
  // Compute (per device).
  double flops = 0;          // multiply-add = 2
  double bytes = 0;          // HBM bytes read + written (fused elementwise chains count once)
  bool opaque = false;       // a custom-call whose FLOPs are unknown
  std::vector<compute::Matmul> matmuls;  // the matmuls among its flops (compute/mxu.h prices them)
  std::optional<compute::SplashCall> kernel;  // a Pallas attention kernel (compute/splash_kernel.h)
  // Communication (per device, the hlo::Collective convention).
  CommKind comm = CommKind::kAllReduce;
  CommOrigin origin = CommOrigin::kExplicit;
  std::vector<AxisRef> axes;  // mesh axes (or Shardy sub-axes) the group spans
  int64_t group_size = 1;
  // A permute: the length of the cycle its source-target pairs form (a ring step over an
  // axis of k devices: k; a swap: 2). Its links are those of the whole cycle.
  int64_t cycle_length = 2;
  // An explicit collective's replica groups (a permute's source-target pairs), partition ids
  // as the text gives them; empty for an implicit one, whose groups its axes give.
  std::vector<std::vector<int64_t>> partition_groups;
  double operand_bytes = 0;
  double result_bytes = 0;
  // True when the data it moves depends only on program inputs (weights), so the
  // scheduler can prefetch it under compute; or for explicit permutes (ring steps).
  bool overlappable = false;
  std::string detail;        // the value and the shardings involved, for reports
};

struct PredictionDag {
  std::string mesh;                 // the mesh shardings refer to
  MeshTable meshes;
  int64_t num_devices = 1;
  std::vector<DagNode> nodes;       // in schedule order
  double param_bytes = 0;           // per device: entry arguments
  double peak_activation_bytes = 0; // per device: peak of live intermediate values
  int peak_line = 0;                // op at which the peak occurs
  std::vector<std::string> warnings;  // ops analysed by a fallback rule, once each
};

}  // namespace aoizora::shlo
