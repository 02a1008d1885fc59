// How many replicas and partitions a module runs on, when its header does not say.
//
// XLA reads a header without replica_count / num_partitions as 1 and 1, so every replica
// group id >= 1 would be out of range. Dumps and hand-written tests often leave them out
// (`replica_groups=[1,8]<=[8]` with no num_partitions). This pass takes the header's counts
// when it gives either (the other is then 1, XLA's default), else the caller's device count
// as the partition count, else the smallest counts that make every replica_groups /
// source_target_pairs id valid under its group mode (replica_groups.h). It reads only attributes; it never fails (groups it cannot
// read are left for the loader to report).
#pragma once

#include <string>

#include "aoizora/hlo/hlo_module.h"

namespace aoizora::hlo {

struct DeviceCount {
  int replica_count = 1;
  int num_partitions = 1;
  // "header" (both counts from the header), "given" (num_partitions from the caller),
  // or "inferred from replica groups" (a count absent from the header was inferred).
  std::string source = "header";
};

// `num_devices` > 0: the caller's device count, used as num_partitions when the header has
// neither count. 0: infer.
DeviceCount device_count(const HloModule& m, int num_devices = 0);

}  // namespace aoizora::hlo
