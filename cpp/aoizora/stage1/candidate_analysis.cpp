#include "aoizora/stage1/candidate_analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>
#include <tuple>

#include "aoizora/cost/q1_placement.h"
#include "aoizora/shlo/dag_builder.h"
#include "aoizora/shlo/parser.h"
#include "aoizora/topo/catalog.h"

namespace aoizora::stage1 {

namespace {
std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", bytes / 1e9);
  return buf;
}
}  // namespace

std::vector<PredictedCollective> predicted_collectives(const shlo::PredictionDag& dag) {
  std::vector<PredictedCollective> out;
  using Key = std::tuple<std::string, std::string, std::vector<std::string>, int64_t, double>;
  std::map<Key, size_t> index;
  for (const shlo::DagNode& n : dag.nodes) {
    if (n.kind != shlo::DagNode::Kind::kComm) continue;
    PredictedCollective c;
    c.kind = std::string(shlo::to_string(n.comm));
    c.origin = std::string(shlo::to_string(n.origin));
    c.axes = shlo::axis_labels(n.axes);
    c.group_size = n.group_size;
    c.bytes = n.comm == shlo::CommKind::kAllGather ? n.result_bytes : n.operand_bytes;
    Key key{c.kind, c.origin, c.axes, c.group_size, c.bytes};
    auto [it, fresh] = index.emplace(std::move(key), out.size());
    if (fresh) out.push_back(std::move(c));
    out[it->second].executions += n.repeat;
  }
  return out;
}

Result<Stage1Result> analyze_stablehlo(std::string_view text, const Stage1Options& options) {
  Stage1Options o = options;
  std::optional<topo::Topology> topology;
  if (!o.topology.empty()) {
    ASSIGN_OR_RETURN(topo::Topology t, topo::make_topology(o.topology, o.hardware));
    topology = t;
    o.chip = t.spec;
    o.slice_dims = t.dims;
    o.slice_wrap = t.wrap;
  }
  ASSIGN_OR_RETURN(shlo::Module m, shlo::parse_module(text));
  ASSIGN_OR_RETURN(shlo::PredictionDag dag, shlo::build_dag(m));

  cost::Q1Params p;
  p.chip = o.chip;
  p.slice_dims = o.slice_dims;
  p.slice_wrap = o.slice_wrap;
  // With no slice shape given, assume the devices could form one wrapped ring.
  if (o.slice_dims == std::array<int, 3>{1, 1, 1}) {
    p.slice_dims = {static_cast<int>(dag.num_devices), 1, 1};
    p.slice_wrap = {true, false, false};
  }
  std::optional<cost::BestGroupCosts> group_costs;
  if (topology && topology->num_devices() == dag.num_devices) {
    group_costs.emplace(*topology);
    p.group_costs = &*group_costs;
  }
  cost::Q1Breakdown q = group_costs && o.q1_on_placements
                           ? cost::q1_best_placement(dag, p, *topology)
                           : cost::q1_best_core_axis(dag, p);

  Stage1Result r;
  r.q1_seconds = q.q1;
  r.compute_seconds = q.compute;
  r.comm_seconds = q.comm;
  r.overlappable_comm_seconds = q.overlappable_comm;
  r.barrier_comm_seconds = q.barrier_comm;
  r.comm_seconds_by_axis = q.comm_by_axis;
  r.q1_placement = q.placement;
  r.param_bytes = dag.param_bytes;
  r.peak_activation_bytes = dag.peak_activation_bytes;
  r.num_devices = dag.num_devices;
  r.warnings = dag.warnings;
  if (q.unplaced_collectives > 0)
    r.warnings.push_back(std::to_string(q.unplaced_collectives) +
                         " collectives' groups are not the mesh's axes: Q1 prices them on "
                         "their best box, not on " + q.placement);
  for (const shlo::DagNode& n : dag.nodes) {
    if (n.kind == shlo::DagNode::Kind::kCompute) {
      r.flops += n.flops * n.repeat;
      continue;
    }
    std::string kind(shlo::to_string(n.comm));
    r.comm_bytes_by_kind[kind] += n.operand_bytes * n.repeat;
    r.comm_count_by_kind[kind] += n.repeat;
    r.comm_bytes_by_origin[std::string(shlo::to_string(n.origin))] += n.operand_bytes * n.repeat;
    for (const shlo::AxisRef& a : n.axes)
      r.comm_bytes_by_axis[shlo::axis_label(a)] += n.operand_bytes * n.repeat / static_cast<double>(n.axes.size());
  }
  const double need = r.param_bytes + r.peak_activation_bytes;
  const double have = o.chip.core_hbm_bytes() * o.hbm_usable_fraction;  // one device's HBM
  if (need > have) {
    r.fits = false;
    r.reject_reason = "needs " + gb(need) + " per device (parameters " + gb(r.param_bytes) +
                      " + peak activations " + gb(r.peak_activation_bytes) + ") > " + gb(have) +
                      " usable HBM (" + gb(o.chip.core_hbm_bytes()) + " x " +
                      std::to_string(o.hbm_usable_fraction).substr(0, 4) + ")";
  }
  r.collectives = predicted_collectives(dag);
  r.dag = std::move(dag);
  return r;
}

}  // namespace aoizora::stage1
