// Asynchronous collective fusion chains. The TPU compiler prints one asynchronous collective
// as a chain of fusions that each wrap the same collective (same channel_id): a start,
// continuation fusions (compute that runs while the collective is in flight; a
// backend_config continuation_config), possibly inside a nested loop, and a done. Counting
// every link would move the data once per link and serialise the continuations' compute.
// A fusion-wrapped collective opens a chain; a later fusion wrapping a collective of the
// same channel, kind and size continues it, and closes it unless it is a continuation.
// The loader (hlo_loader.cpp) feeds every collective op here as it schedules it.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "aoizora/hlo/collective_graph.h"
#include "aoizora/hlo/collective_instruction.h"
#include "aoizora/hlo/hlo_module.h"

namespace aoizora::hlo {

class AsyncChains {
 public:
  // Collective `ci` was scheduled at (region, op): the latest link of its chain so far.
  void scheduled(int ci, int region, int op);
  // A synchronous fusion wrapping collective `ci` opens a chain on its channel.
  void open(int64_t channel_id, int ci) { open_[channel_id] = ci; }

  // The collectives a fusion wrapping `found` continues (one per found instruction), or {}.
  std::vector<int> chained(const HloModule& m, const std::vector<Found>& found,
                           const CollectiveGraph& g) const;

  // Appends `op` (fusion `ins`) as the next link of the `chained` collectives to g's last
  // region: the previous link becomes the start (if it was the first) or plain compute (a
  // continuation), and this one the done until a later link continues it.
  void continue_chain(const Instruction& ins, const std::vector<int>& chained, ScheduledOp op,
                      CollectiveGraph& g);

 private:
  std::map<int64_t, int> open_;            // channel_id -> the collective of its open chain
  std::vector<std::pair<int, int>> tail_;  // per collective: (region, op) of its latest link
};

}  // namespace aoizora::hlo
