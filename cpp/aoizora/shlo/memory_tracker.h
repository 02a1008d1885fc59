// Per-device memory along the schedule Stage 1 walks. Every value the walk defines is live,
// with its bytes per device, from its definition until the last op that reads it has run;
// "extra" is the transient bytes of the op being walked (the resharded copies of its
// operands). The peak is the largest live total + extra seen after any op, and its line is
// the source line of the first op that reached it. Bytes are whatever the caller passes
// (the DAG builder: local bytes, 0 for a value XLA fuses away).
#pragma once

#include <map>
#include <set>

#include "aoizora/shlo/ir.h"

namespace aoizora::shlo {

class MemoryTracker {
 public:
  // v is defined with `bytes` per device and `users` reads still to come; a value nobody
  // reads is freed at once. Redefining v replaces its bytes.
  void alloc(int v, double bytes, int users);
  // v is no longer live (no-op if it is not).
  void free_value(int v);
  // v takes over `bytes` freed from the value it stands for (a call's, loop's or branch's
  // result after the inner value is freed): live with `users` reads to come.
  void adopt(int v, double bytes, int users);
  // v's bytes change in place (a partial sum resolved to its final size); v must be live.
  void resize(int v, double bytes);
  // The op has read its operands: one read less each; those with none left (and not in
  // keep) are freed.
  void used(const Op& op, const std::set<int>& keep = {});
  // Records the live total + extra as the peak, at `line`, if it is higher than the peak.
  void note_peak(int line);

  // v's live bytes, 0 if it is not live.
  double live_bytes(int v) const;
  double extra() const { return extra_; }
  void set_extra(double bytes) { extra_ = bytes; }
  void add_extra(double bytes) { extra_ += bytes; }
  double peak() const { return peak_; }
  int peak_line() const { return peak_line_; }

 private:
  std::map<int, double> live_;
  std::map<int, int> remaining_;
  double live_total_ = 0, extra_ = 0, peak_ = 0;
  int peak_line_ = 0;
};

}  // namespace aoizora::shlo
