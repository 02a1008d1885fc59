// One collective instruction of compiled HLO read into a Collective (collective_graph.h): its
// kind, bytes, channel and groups resolved into partition ids, or a permute's source-target
// pairs. The instruction may be the collective itself (sync or -start), or be wrapped by
// the op the schedule runs (`caller`: a fusion, an async-start): the Collective takes the
// caller's name, and a TPU all-reduce fused with the slice of its result is a
// reduce-scatter. Internal to hlo/ (hlo_loader.cpp, async_chains.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "aoizora/base/status.h"
#include "aoizora/hlo/collective_graph.h"
#include "aoizora/hlo/hlo_module.h"

namespace aoizora::hlo {

// The collective kind of an opcode (sync or -start), or nullopt.
std::optional<CollectiveKind> collective_kind(std::string_view opcode);
// A -start of a collective ("all-gather-start", ...).
bool is_async_start(std::string_view opcode);
// A -done of a collective ("all-gather-done", ...); not async-done.
bool is_collective_done(std::string_view opcode);

// A collective instruction found somewhere in the module: computation and index.
struct Found {
  int comp;
  int index;
};

// Where the collective is scheduled and how the program runs it.
struct CollectiveSite {
  int region = 0;
  int op = 0;
  int64_t repeat = 1;  // the region's executions per program run
  int replica_count = 1;
  int num_partitions = 1;
};

// The Collective of instruction `f`, run by `caller` (f's own instruction when not wrapped)
// at `site`; `async` when the caller is a -start or async-start. Fails on malformed
// replica_groups or source_target_pairs, with `filename` and the instruction's line.
Result<Collective> read_collective(const HloModule& m, const Found& f, const Instruction& caller,
                                   bool async, const CollectiveSite& site,
                                   const std::string& filename);

}  // namespace aoizora::hlo
