#include "aoizora/shlo/dag.h"

namespace aoizora::shlo {

std::string_view to_string(CommKind kind) {
  switch (kind) {
    case CommKind::kAllGather: return "all-gather";
    case CommKind::kAllReduce: return "all-reduce";
    case CommKind::kReduceScatter: return "reduce-scatter";
    case CommKind::kAllToAll: return "all-to-all";
    case CommKind::kCollectivePermute: return "collective-permute";
    case CommKind::kCollectiveBroadcast: return "collective-broadcast";
  }
  return "?";
}

std::string_view to_string(CommOrigin origin) {
  switch (origin) {
    case CommOrigin::kExplicit: return "explicit";
    case CommOrigin::kReshard: return "reshard";
    case CommOrigin::kContraction: return "contraction";
    case CommOrigin::kReduction: return "reduction";
    case CommOrigin::kCustomCall: return "custom-call";
  }
  return "?";
}

}  // namespace aoizora::shlo
