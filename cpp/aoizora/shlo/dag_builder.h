// Builds the prediction DAG of a parsed module: walks the entry function in order,
// inlining func.call, counting while bodies by their trip count and taking the costlier
// branch of a case, propagates shardings to unannotated values (propagate.h), inserts the
// implicit communication (reshard.h), and tracks per-device memory along the schedule.
#pragma once

#include "aoizora/base/status.h"
#include "aoizora/shlo/dag.h"
#include "aoizora/shlo/ir.h"

namespace aoizora::shlo {

Result<PredictionDag> build_dag(const Module& module);

}  // namespace aoizora::shlo
