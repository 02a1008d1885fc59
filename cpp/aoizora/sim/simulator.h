// Flow-level discrete-event simulation of one compiled SPMD program on every chip of a
// topology under a placement. The fidelity reference next to Q2: it models time, skew,
// step-by-step collective phases and link sharing as it happens.
//
// The model, per chip (the chip of partition p is placement.device_of[p]):
//   - ops run in schedule order; a compute op takes its roofline time, its matmuls padded
//     to the MXU at the profile's efficiency (compute/mxu.h; cost::op_seconds, as in Q2);
//   - a collective starts on a group once every member has reached it (its sync op or its
//     -start op); it then waits its fixed latency (SimOptions::collective_overhead, else the profile's
//     collective_latency of its kind) and plays the flows of
//     cost::expand step by step: a chip sends its step-s flows once every step-(s-1) flow
//     of the same lane into it has been delivered and (steps_wait_for_sends) its own
//     step-(s-1) flows of that lane have drained (lanes: cost/flow.h);
//   - a flow drains at its max-min fair rate over the links of its route (rates recomputed
//     whenever a flow starts or drains) and is delivered `hops x hop latency` later;
//   - a chip's part of a collective is over when every flow it sends or receives has been
//     delivered; a sync op blocks its chip until then, a -start op does not block, its
//     -done blocks until then;
//   - regions run in order and loops (hlo::schedule_loops) as nested: an outer loop runs its
//     whole body, inner loops and async collectives spanning them included, once per trip,
//     so an L-trip loop costs L times one trip. A loop of more than max_iterations trips runs
//     max_iterations trips for real; each chip then skips the remaining trips at the period
//     of its last simulated one (steady state extrapolation), and the last simulated trip's
//     time, stats, link bytes and critical path are counted (trips - max_iterations + 1)
//     times (a product over nested loops). Exact when the trips have reached a steady state
//     (tested against full simulation);
//   - a run in which some chip never finishes (a collective some member never reaches) is
//     an error naming the chip, the op and the collective it waits on.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "aoizora/base/status.h"
#include "aoizora/cost/flow.h"
#include "aoizora/hlo/collective_graph.h"
#include "aoizora/place/placement.h"
#include "aoizora/sim/timeline.h"
#include "aoizora/topo/topology.h"

namespace aoizora::sim {

struct SimOptions {
  // Seconds per link hop added to each flow's delivery. < 0: each link's own latency
  // (Link::latency, or spec.hop_latency where that is 0).
  double hop_latency = -1;
  // Fixed cost of every collective execution (launch and synchronisation), seconds.
  // < 0: the chip spec's collective_latency for the collective's kind (the hardware
  // profile's figure, 1e-6 in every shipped profile).
  double collective_overhead = -1;
  // A chip starts step s of a collective once its step s-1 inflows are delivered (the rule
  // of cost/flow.h) and, when set, its own step s-1 sends have drained too, as
  // step-synchronous implementations (send and receive, then the next step) do. Without it a
  // chip with no inflow in a step runs ahead and its consecutive steps share its links.
  bool steps_wait_for_sends = true;
  // Iterations of a repeated region simulated before extrapolating; <= 0 simulates all.
  int max_iterations = 3;
  // Keep per-chip op slices and link rate samples in SimResult::timeline (for the trace).
  bool record_timeline = false;
  // How many critical path contributors to report.
  int top_contributors = 10;
};

// Where a chip's step time went. compute + comm + idle == SimResult::step_seconds.
struct ChipTime {
  double compute = 0;  // running compute ops
  double comm = 0;     // blocked on a collective that has started (all members arrived)
  double idle = 0;     // blocked waiting for group members, or done before the slowest chip
  // Seconds from the start of the run until this chip's last op ended (extrapolated trips
  // included); 0 for a chip that runs no partition. step_seconds - finish is the part of idle
  // spent done before the slowest chip. Several programs run as one (hlo::replicated) each
  // end at the max finish over their own chips, which step_seconds alone cannot tell.
  double finish = 0;
};

// One entry of the critical path: the time the longest chain of dependencies spent in an
// op (by HLO name), summed over its executions.
struct Contributor {
  std::string name;
  std::string kind;    // "compute" or the collective kind ("all-gather", ...)
  double seconds = 0;
};

struct SimResult {
  double step_seconds = 0;          // the program's latency: the last chip's finish time
  double compute_bound_seconds = 0; // the slowest chip's compute time alone (a lower bound)
  std::vector<ChipTime> chips;      // indexed by chip id
  std::vector<double> link_bytes;   // indexed by link id; bytes carried per program run
  std::vector<double> link_utilization;  // link_bytes / (bandwidth * step_seconds)
  std::vector<Contributor> critical_path;  // largest first
  double critical_path_seconds = 0; // sum over the whole critical path (== step_seconds)
  int64_t events = 0;               // events processed (compute ops, flow starts/ends, ...)
  int64_t flows = 0;                // flows simulated (not counting extrapolated ones)
  int64_t collectives = 0;          // group-collective executions simulated
  bool extrapolated = false;        // some region was extrapolated
  Timeline timeline;                // filled when SimOptions::record_timeline
};

// How collectives become flows and flows become links. simulate() uses cost::expand and
// Topology::route; tests may substitute their own.
struct FlowModel {
  std::function<cost::CollectiveFlows(const hlo::Collective&)> expand;
  std::function<std::vector<int>(int src, int dst)> route;  // directed link ids
};

// Simulates `graph` with placement.device_of[p] the chip of partition p. Preconditions (see
// check_inputs): device_of has graph.num_partitions distinct valid chip ids, every group
// member is a partition id. Deterministic. Fails only on a simulated deadlock.
Result<SimResult> simulate(const hlo::CollectiveGraph& graph, const topo::Topology& topology,
                   const place::Placement& placement, const SimOptions& options = {});

// simulate() after check_inputs(); what bindings and tools call.
Result<SimResult> simulate_checked(const hlo::CollectiveGraph& graph,
                                   const topo::Topology& topology,
                                   const place::Placement& placement,
                                   const SimOptions& options = {});

// The engine behind simulate(), with the flow model given.
Result<SimResult> simulate_with(const hlo::CollectiveGraph& graph, const topo::Topology& topology,
                        const place::Placement& placement, const SimOptions& options,
                        const FlowModel& model);

// An error naming the first violated precondition of simulate(), or true.
Status check_inputs(const hlo::CollectiveGraph& graph, const topo::Topology& topology,
                    const place::Placement& placement);

}  // namespace aoizora::sim
