#include "aoizora/shlo/memory_tracker.h"

namespace aoizora::shlo {

void MemoryTracker::alloc(int v, double bytes, int users) {
  if (live_.count(v)) live_total_ -= live_[v];
  live_[v] = bytes;
  live_total_ += bytes;
  remaining_[v] = users;
  if (remaining_[v] == 0) free_value(v);
}

void MemoryTracker::free_value(int v) {
  auto it = live_.find(v);
  if (it == live_.end()) return;
  live_total_ -= it->second;
  live_.erase(it);
}

void MemoryTracker::adopt(int v, double bytes, int users) {
  live_[v] = bytes;
  live_total_ += bytes;
  remaining_[v] = users;
}

void MemoryTracker::resize(int v, double bytes) {
  live_total_ += bytes - live_[v];
  live_[v] = bytes;
}

void MemoryTracker::note_peak(int line) {
  if (live_total_ + extra_ > peak_) {
    peak_ = live_total_ + extra_;
    peak_line_ = line;
  }
}

void MemoryTracker::used(const Op& op, const std::set<int>& keep) {
  for (int v : op.operands) {
    auto it = remaining_.find(v);
    if (it == remaining_.end()) continue;
    if (--it->second <= 0 && !keep.count(v)) free_value(v);
  }
}

double MemoryTracker::live_bytes(int v) const {
  auto it = live_.find(v);
  return it == live_.end() ? 0 : it->second;
}

}  // namespace aoizora::shlo
