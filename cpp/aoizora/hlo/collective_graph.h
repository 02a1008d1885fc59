// The collective graph of one compiled SPMD program: what Stage 2 (Q2, placement search)
// and the simulator consume. It is the contract between hlo/ (which builds it from compiled
// HLO text), cost/ and sim/ (which evaluate it under a placement). Plain data, no behaviour
// beyond small derived totals.
//
// Device ids are *partition ids* (JAX compiles with 1 replica and N partitions, and id i is
// mesh.devices.flat[i]), so one graph can be evaluated under every physical placement.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aoizora/base/status.h"
#include "aoizora/compute/mxu.h"
#include "aoizora/compute/splash_kernel.h"

namespace aoizora::hlo {

enum class CollectiveKind {
  kAllGather,
  kAllReduce,
  kReduceScatter,
  kAllToAll,
  kCollectivePermute,
  kCollectiveBroadcast,
  kRaggedAllToAll,
};

// "all-gather", "all-reduce", ... (the HLO opcode without -start/-done).
std::string_view to_string(CollectiveKind kind);

// One collective instruction (a sync op, or a -start/-done pair counted once).
//
// Payload bytes are per device:
//   all-gather:       operand = the local shard, result = the gathered array
//   reduce-scatter:   operand = the full local array, result = the local shard
//   all-reduce:       operand = result = the array reduced
//   all-to-all:       operand = result = the local buffer (split evenly over the group)
//   collective-permute / broadcast: operand = bytes each source sends to each target
struct Collective {
  std::string name;  // HLO name of the sync op or of the -start op
  CollectiveKind kind = CollectiveKind::kAllReduce;
  // Groups of partition ids, resolved from every replica_groups form. For a permute this is
  // empty and source_target_pairs is set.
  std::vector<std::vector<int>> groups;
  std::vector<std::pair<int, int>> source_target_pairs;
  int64_t operand_bytes = 0;
  int64_t result_bytes = 0;
  bool async = false;       // a -start/-done pair (or async-start wrapping)
  int64_t repeat = 1;       // executions per program run (product of enclosing trip counts)
  int region = 0;           // index into CollectiveGraph::regions
  int start_op = 0;         // index of the sync or -start op in that region
  int done_op = 0;          // index of the -done op; == start_op when synchronous
  // The region of the -done op when it is not `region`: an async collective that spans a
  // nested loop (started before it, completed after it, as the TPU compiler's continuation
  // fusions do); done_op then indexes that region. -1: the same region.
  int done_region = -1;
  // The opcode of the collective instruction itself ("all-reduce", "all-gather-start", ...).
  // It differs from `kind` where the TPU compiler fused a collective: an all-reduce inside an
  // all-reduce-scatter fusion (whose result is a slice of the reduced array) is a
  // kReduceScatter whose result_bytes is the fusion's result.
  std::string opcode;
  int64_t channel_id = -1;  // -1 when absent
};

enum class OpKind {
  kCompute,          // anything that is not a collective (incl. fusions, custom-calls)
  kCollective,       // a synchronous collective
  kCollectiveStart,  // -start / async-start of a collective
  kCollectiveDone,   // -done / async-done of a collective
};

// One instruction of the schedule, with its per-device cost.
struct ScheduledOp {
  std::string name;
  std::string opcode;
  OpKind kind = OpKind::kCompute;
  double flops = 0;        // per device; multiply-add = 2
  double bytes = 0;        // HBM bytes read + written, per device
  bool opaque = false;     // a custom-call whose cost was estimated from its shapes
  std::vector<compute::Matmul> matmuls;  // the matmuls among its flops (compute/mxu.h prices them)
  std::optional<compute::SplashCall> kernel;  // a Pallas attention kernel (compute/splash_kernel.h)
  int collective = -1;     // index into CollectiveGraph::collectives for collective ops
  // Every collective this op performs or completes (a fusion may wrap several); when not
  // empty, collectives.front() == collective.
  std::vector<int> collectives;
  std::vector<int> deps;   // indices of earlier ops in the same region whose results it reads
};

// A straight-line piece of the schedule. The entry computation is cut into regions at while
// loops: [ops before], [loop body], [ops after]; a loop nested in a body cuts the body the
// same way. `repeat` is how often the region runs per program run (the product of the
// enclosing trip counts); CollectiveGraph::loops says how the regions nest, which matters to
// whoever follows one execution (the simulator): an outer loop runs its whole body, nested
// loops included, once per trip.
// A `call` is inlined where it stands; a `conditional` stays one op, costed as its most
// expensive branch, whose collectives are attributed to it. Collectives inside any other
// called computation (fusions, async-start wrappers, custom-calls) are attributed to the
// scheduled op that calls them. Loop conditions are not scheduled (a compare per trip).
struct Region {
  std::string name;        // "entry", or the while body's computation name
  int64_t repeat = 1;
  bool trip_count_known = true;  // false: a loop whose trip count was not found counts once
  std::vector<ScheduledOp> ops;
};

// A while loop of the schedule. Its body is the contiguous regions
// [first_region, last_region], nested loops' regions included, run `trip_count` times per
// execution of the enclosing loop (`parent`, -1 for the entry computation). Loops are listed
// in schedule order, an outer loop before the loops nested in it, so parent < own index.
struct Loop {
  std::string name;               // the while body's computation name
  int64_t trip_count = 1;         // per execution of the parent; 1 when not known
  bool trip_count_known = true;   // false: the trip count was not found (counted once)
  int parent = -1;
  int first_region = 0;
  int last_region = 0;
};

struct CollectiveGraph {
  int num_partitions = 1;
  int replica_count = 1;
  // Where the two counts came from: "header", "given" (the caller's device count), or
  // "inferred from replica groups" (the header left one out; device_count.h).
  std::string device_count_source = "header";
  std::vector<Region> regions;
  std::vector<Collective> collectives;
  // How regions nest. Empty in graphs built by hand: then each region with repeat != 1 is a
  // loop of its own (schedule_loops() in this header makes that explicit).
  std::vector<Loop> loops;

  double total_flops() const;              // sum of op flops x region repeat
  double total_bytes() const;              // sum of op bytes x region repeat
  // Sum of op flops with every op counted once (loop bodies once): the convention of XLA's
  // cost_analysis()["flops"], for checking against it.
  double static_flops() const;
  int64_t collective_bytes(CollectiveKind kind) const;  // sum of operand bytes x repeat
};

// graph.loops, or, when it is empty, one loop per region whose repeat is not 1 (trip count =
// repeat), so that hand-built graphs of flat regions keep their meaning.
std::vector<Loop> schedule_loops(const CollectiveGraph& graph);

// The names of the loops whose trip count was not found (empty when every count is known).
std::vector<std::string> unknown_trip_count_loops(const CollectiveGraph& graph);

// `replicas` copies of one SPMD program run side by side as one program of
// num_partitions x replicas partitions: copy k's partition p is k x n + p (n =
// graph.num_partitions), each group and source-target pair of copy k offset by k x n, so no
// collective crosses copies. A collective that names no group (all partitions) gets one group
// per copy, since it synchronises its own program only. Regions, ops, loops and costs are
// the graph's. Simulated under the copies' device orders concatenated, this is the copies
// running together on one slice and sharing its links (docs/serving.md). Fails when replicas
// < 1 or the graph has more than one replica (its ids would not be partition ids).
Result<CollectiveGraph> replicated(const CollectiveGraph& graph, int replicas);

}  // namespace aoizora::hlo
