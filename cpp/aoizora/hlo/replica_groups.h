// replica_groups and source_target_pairs of collective instructions, and XLA's group-mode
// rules that turn them into groups of device ids.
//
// Three printed forms of replica_groups are accepted:
//   explicit    {{0,1},{2,3}}            (and {} = one group of everyone)
//   iota        [2,4]<=[4,2]T(1,0)       (arange(8).reshape(4,2).transpose(1,0) -> 2 rows of 4)
//   mesh axes   mesh['x'=2,'y'=4] {'y'}  (optionally `, device_ids=(...)` after the mesh,
//               sub-axes 'x':(pre)size, names quoted or not): devices that differ only along
//               the listed axes form a group, the listed axes ordered as listed.
#pragma once

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "aoizora/base/status.h"

namespace aoizora::hlo {

using Groups = std::vector<std::vector<int>>;

// Parses any of the three forms into groups of the ids as printed. The Error carries only the
// message (and a column within `text`); callers add the file and line.
Result<Groups> parse_replica_groups(std::string_view text);

// {{0,1},{1,2}} -> {(0,1),(1,2)}.
Result<std::vector<std::pair<int, int>>> parse_source_target_pairs(std::string_view text);

// How the ids in replica_groups are to be read (xla::CollectiveOpGroupMode).
enum class GroupMode {
  kCrossReplica,              // no channel_id: replica ids, within each partition
  kCrossPartition,            // channel_id, no use_global_device_ids attribute: partition ids
  kCrossReplicaAndPartition,  // channel_id, use_global_device_ids=false: replica ids x all partitions
  kFlattenedId,               // channel_id, use_global_device_ids=true: replica*P + partition
};

// XLA's rule: `has_use_global_device_ids` is whether the op kind has the attribute at all
// (all-reduce, all-gather, reduce-scatter do; all-to-all, collective-permute do not).
GroupMode group_mode(bool has_channel_id, bool has_use_global_device_ids,
                     bool use_global_device_ids);

// Expands groups as printed into groups of global device ids (replica * num_partitions +
// partition; with one replica these are partition ids). Empty `groups` means one group of
// all replicas or partitions, per the mode. Ids out of range give an Error.
Result<Groups> resolve_groups(const Groups& groups, GroupMode mode, int replica_count,
                              int num_partitions);

}  // namespace aoizora::hlo
