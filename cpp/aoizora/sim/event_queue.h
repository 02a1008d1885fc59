// The simulator's clock: timed events, earliest first, events of equal time in the order
// they were pushed, so a run is deterministic. It knows times and two ints per event; what
// an event does is the engine's business (engine.cpp).
#pragma once

#include <cstdint>
#include <limits>
#include <queue>
#include <vector>

namespace aoizora::sim {

enum class EventKind : uint8_t {
  kResume,   // a: chip index; it goes on walking its schedule
  kStart,    // a: group instance; every member arrived and the fixed latency has passed
  kDrained,  // a: instance, b: flow; its bytes have left the sender
  kDeliver,  // a: instance, b: flow; its bytes have arrived
};

struct Event {
  double time = 0;  // seconds
  int64_t seq = 0;  // push order, the tie-break
  EventKind kind = EventKind::kResume;
  int a = 0;
  int b = 0;
  bool operator>(const Event& o) const {
    return time != o.time ? time > o.time : seq > o.seq;
  }
};

class EventQueue {
 public:
  void push(double time, EventKind kind, int a, int b = 0) {
    queue_.push(Event{time, seq_++, kind, a, b});
  }
  bool empty() const { return queue_.empty(); }
  // The time of the earliest event; +infinity when there is none.
  double next_time() const {
    return queue_.empty() ? std::numeric_limits<double>::infinity() : queue_.top().time;
  }
  Event pop() {
    Event e = queue_.top();
    queue_.pop();
    return e;
  }

 private:
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  int64_t seq_ = 0;
};

}  // namespace aoizora::sim
