#include "aoizora/sim/chip_schedule.h"

namespace aoizora::sim {

ChipSchedule::ChipSchedule(const hlo::CollectiveGraph& graph, int max_iterations)
    : graph_(graph), max_iterations_(max_iterations), loops_(hlo::schedule_loops(graph)) {
  loops_starting_at_.resize(graph.regions.size());
  for (size_t l = 0; l < loops_.size(); ++l)
    if (loops_[l].first_region >= 0 &&
        loops_[l].first_region < static_cast<int>(graph.regions.size()))
      loops_starting_at_[loops_[l].first_region].push_back(static_cast<int>(l));
}

void ChipSchedule::enter_region(ChipState& s, int region, double now) const {
  const int num_regions = static_cast<int>(graph_.regions.size());
  while (region < num_regions) {
    int skip_to = -1;
    for (int l : loops_starting_at_[region]) {
      const int top = s.loops.empty() ? -1 : s.loops.back().loop;
      if (loops_[l].parent != top) continue;
      if (loops_[l].trip_count <= 0) {
        skip_to = loops_[l].last_region + 1;
        break;
      }
      LoopFrame f;
      f.loop = l;
      f.trip = loops_[l].trip_count;
      f.sim_iters = (max_iterations_ <= 0 || f.trip <= max_iterations_) ? f.trip
                                                                        : max_iterations_;
      f.weight = f.sim_iters == 1 && f.trip > 1 ? static_cast<double>(f.trip) : 1.0;
      f.prev_end = f.prev_prev_end = now;
      f.iter_start_stats = s.stats;
      s.loops.push_back(f);
    }
    if (skip_to < 0) break;
    region = skip_to;
  }
  update_weight(s);
  s.region = region;
  s.op = 0;
  if (region >= num_regions) {
    s.finished = true;
    s.finish = now;
  }
}

void ChipSchedule::update_weight(ChipState& s) {
  s.weight = 1;
  for (const LoopFrame& f : s.loops) s.weight *= f.weight;
}

// Ends the current iteration of loop frame f at `now`; returns when the chip goes on (later
// than `now` when the rest of the loop is extrapolated at the period of its last iteration).
double ChipSchedule::end_iteration(ChipState& s, LoopFrame& f, double now,
                                   bool* extrapolated) const {
  f.prev_prev_end = f.prev_end;
  f.prev_end = now;
  ++f.iter;
  double resume = now;
  if (f.iter == f.sim_iters && f.trip > f.sim_iters) {
    const double skipped = static_cast<double>(f.trip - f.sim_iters);
    const double period = f.prev_end - f.prev_prev_end;
    s.stats.compute += skipped * (s.stats.compute - f.iter_start_stats.compute);
    s.stats.comm += skipped * (s.stats.comm - f.iter_start_stats.comm);
    s.stats.idle += skipped * (s.stats.idle - f.iter_start_stats.idle);
    resume = now + skipped * period;
    if (resume > now) s.segments.push_back({now, resume, SegKind::kJump, f.loop, 1.0});
    *extrapolated = true;
    f.iter = f.trip;
  }
  if (f.iter < f.trip) {
    f.iter_start_stats = s.stats;
    f.weight = (f.iter == f.sim_iters - 1 && f.trip > f.sim_iters)
                   ? static_cast<double>(f.trip - f.sim_iters + 1) : 1.0;
  }
  return resume;
}

double ChipSchedule::end_region(ChipState& s, double now, bool* extrapolated) const {
  double t = now;
  int next = s.region + 1;
  while (!s.loops.empty() && loops_[s.loops.back().loop].last_region == s.region) {
    LoopFrame& f = s.loops.back();
    t = end_iteration(s, f, t, extrapolated);
    if (f.iter < f.trip) {
      next = loops_[f.loop].first_region;
      break;
    }
    s.loops.pop_back();
  }
  enter_region(s, next, t);
  return t;
}

}  // namespace aoizora::sim
