// Q1 on the best structured placement. Q1 does not know the placement Stage 2 will choose;
// pricing every collective on its own best box of the slice (best_group.h) lets two mesh axes
// both take a 2x2 of links on a 4x4 slice, which no one placement gives them: tensor
// parallelism over 4 beside a sequence axis over 4 was priced 20-29 % under its simulated
// step (docs/stage1.md). So Q1 is priced on each placement of the pool both stages weigh
// (place/placement_pool.h: JAX's default, row-major, axis orders, snakes, tile cycles), every
// collective on the groups that placement gives it, and the least Q1 is kept. On a slice of
// two cores per chip the pool places the cores too, so this also settles which axis holds
// them (what q1_best_core_axis does alone).
#pragma once

#include "aoizora/cost/q1.h"
#include "aoizora/topo/topology.h"

namespace aoizora::cost {

// The least Q1 over the placement pool of the DAG's mesh on `t` (Q1Breakdown::placement
// names it). When the mesh cannot be placed (placed_groups.h placeable(), or a slice that is
// not a grid), q1_best_core_axis, every collective on its best box, with `placement` empty.
Q1Breakdown q1_best_placement(const shlo::PredictionDag& dag, Q1Params p, const topo::Topology& t);

}  // namespace aoizora::cost
