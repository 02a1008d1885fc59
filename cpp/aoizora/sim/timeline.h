// What happened when, for a trace: per-chip op slices and per-link rate samples, recorded
// by the simulator when SimOptions::record_timeline is set.
#pragma once

#include <string>
#include <vector>

namespace aoizora::sim {

enum class SliceKind { kCompute, kCollectiveWait, kCollectiveComm, kExtrapolated };

struct Slice {
  int chip = 0;
  double start = 0;   // seconds
  double end = 0;
  SliceKind kind = SliceKind::kCompute;
  int label = 0;      // index into Timeline::labels (op name)
};

// The total rate on a link from `time` until its next sample.
struct LinkSample {
  int link = 0;
  double time = 0;
  double bytes_per_second = 0;
};

struct Timeline {
  std::vector<std::string> labels;
  std::vector<Slice> slices;        // per chip in time order
  std::vector<LinkSample> links;    // in time order
};

}  // namespace aoizora::sim
