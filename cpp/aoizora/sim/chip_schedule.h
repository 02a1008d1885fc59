// A chip walking the program's schedule: the region and op it is at, the loops it is in
// (nested as hlo::schedule_loops finds them: an outer loop runs its whole body, inner loops
// included, once per trip) and the steady-state extrapolation of a loop of more than
// max_iterations trips: after its last simulated trip the chip skips the rest at that
// trip's period, and the trip's work stands for the skipped ones (ChipState::weight).
// ChipState also holds the engine's per-chip collective bookkeeping; ChipSchedule touches
// only the walk.
#pragma once

#include <cstdint>
#include <vector>

#include "aoizora/hlo/collective_graph.h"
#include "aoizora/sim/simulator.h"

namespace aoizora::sim {

enum class SegKind : uint8_t { kCompute, kWait, kJump };

// A span of a chip's time, for the critical path and the timeline.
struct Segment {
  double start = 0;
  double end = 0;
  SegKind kind = SegKind::kCompute;
  int label = 0;      // op label for compute, instance id for waits, loop for jumps
  double weight = 1;  // how many executions it stands for
};

// One loop a chip is executing: which iteration, and what steady-state extrapolation needs.
struct LoopFrame {
  int loop = 0;              // index into ChipSchedule::loops()
  int64_t trip = 1;
  int64_t iter = 0;          // the iteration being executed
  int64_t sim_iters = 1;     // iterations simulated for real
  double weight = 1;         // how many iterations the current one stands for
  double prev_end = 0;       // end of the previous iteration (or loop start)
  double prev_prev_end = 0;
  ChipTime iter_start_stats;
};

struct ChipState {
  int chip = 0;
  int partition = 0;
  int region = 0;
  int op = 0;                // -1: parked until a resume event (after an extrapolated span)
  std::vector<LoopFrame> loops;  // the loops being executed, outermost first
  double weight = 1;         // product of the loops' iteration weights
  ChipTime stats;
  std::vector<int> open;     // per collective: the instance of its last -start
  std::vector<int64_t> arrivals;  // per collective: executions begun so far
  bool finished = false;
  double finish = 0;
  bool computed = false;     // the current op's compute part has run
  double blocked_since = 0;
  int waiting = 0;           // instances still to complete before the chip may go on
  double blocked_t0 = 0;     // latest start among them
  std::vector<Segment> segments;
};

class ChipSchedule {
 public:
  ChipSchedule(const hlo::CollectiveGraph& graph, int max_iterations);

  const std::vector<hlo::Loop>& loops() const { return loops_; }

  // Puts chip s at the first op of `region` at time `now`, entering the loops that begin
  // there (those nested in the loop being executed, outermost first). A loop of no trips
  // is skipped, and past the last region the chip has finished.
  void enter_region(ChipState& s, int region, double now) const;

  // Called when chip s has run every op of its region at `now`: ends the iterations of the
  // loops whose body ends here (innermost first) and goes back to a loop's first region or
  // on to the next region. Returns when the chip goes on: later than `now` when the rest of
  // a loop was extrapolated (then *extrapolated is set).
  double end_region(ChipState& s, double now, bool* extrapolated) const;

 private:
  double end_iteration(ChipState& s, LoopFrame& f, double now, bool* extrapolated) const;
  static void update_weight(ChipState& s);

  const hlo::CollectiveGraph& graph_;
  int max_iterations_;
  std::vector<hlo::Loop> loops_;
  std::vector<std::vector<int>> loops_starting_at_;  // per region, outer loops first
};

}  // namespace aoizora::sim
