// Q2: the topology-aware cost of one compiled program under one placement. A ranking
// objective, not an absolute latency (docs/cost-model.md).
//
// Per region of the schedule (x its repeat):
//   compute   = sum over compute ops of max(flops / peak FLOP/s, bytes / HBM bandwidth)
//   clusters  = collectives grouped so that async windows [start, done] that overlap share a
//               cluster (a synchronous collective is a cluster of its own)
//   comm(K)   = sum over phases f of max over links l of
//                 (sum over c in K of bytes of c's phase f on l) / bandwidth(l)
//               + max over c in K of steps(c) x (latency of c's longest route)
//               (phases, the steps an algorithm runs one after another: cost/phase_load.h)
//   exposed(K)= comm(K) for a synchronous collective, else max(0, comm(K) - compute inside
//               the cluster's window)
//   seconds   = sum over regions of repeat x (compute + sum exposed)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "aoizora/cost/phase_load.h"
#include "aoizora/hlo/collective_graph.h"
#include "aoizora/place/placement.h"
#include "aoizora/topo/topology.h"

namespace aoizora::cost {

struct Q2Result {
  double seconds = 0;               // compute + exposed communication, whole program
  double compute_seconds = 0;
  double exposed_comm_seconds = 0;
  double comm_seconds = 0;          // all communication time, hidden or not
  std::vector<double> link_bytes;   // per link id: bytes over the whole program
  std::vector<double> collective_seconds;  // per collective: its own comm time, uncontended
};

// Roofline time of one scheduled op on one chip of `spec` (0 for collective ops).
double op_seconds(const hlo::ScheduledOp& op, const topo::ChipSpec& spec);

Q2Result evaluate_q2(const hlo::CollectiveGraph& graph, const topo::Topology& topology,
                     const place::Placement& placement);

// Evaluates many placements of one graph on one topology: everything that does not depend on
// the placement (compute times, overlap clusters, windows, distinct collective patterns) is
// computed once. Holds references to graph and topology, which must outlive it. seconds()
// reuses scratch buffers: use one evaluator per thread.
class Q2Evaluator {
 public:
  Q2Evaluator(const hlo::CollectiveGraph& graph, const topo::Topology& topology);

  // Q2 seconds of device_of (partition id -> chip id). Equal to evaluate_q2(...).seconds.
  double seconds(std::span<const int> device_of);
  // The full result, with link loads.
  Q2Result evaluate(std::span<const int> device_of);

  int num_patterns() const { return static_cast<int>(patterns_.size()); }
  const topo::Topology& topology() const { return topo_; }
  const hlo::CollectiveGraph& graph() const { return graph_; }

 private:
  struct Cluster {
    std::vector<int> collectives;  // indices into graph.collectives
    double window_compute = 0;     // compute seconds inside the window (async only)
    bool async = false;
    bool single_pattern = true;
  };
  struct RegionPlan {
    double repeat = 1;
    double compute = 0;
    std::vector<Cluster> clusters;
  };
  struct PatternCost {
    double unit_seconds = 0;  // per unit volume: sum over phases of the busiest link's time
    double latency = 0;       // steps x longest route latency
    std::vector<int> phase;   // sparse unit load per phase (only when needed): first step,
    std::vector<int> links;   // link id,
    std::vector<double> load; // bytes per unit volume
  };

  // Per region: compute seconds of its ops [0, i), for i = 0 .. number of ops.
  using Prefixes = std::vector<std::vector<double>>;

  // The constructor's steps, in order.
  void group_patterns();                          // patterns_, pattern_of_, volume_
  Prefixes region_prefix_sums() const;
  void plan_regions(const Prefixes& prefixes);    // regions_, needs_vector_
  void build_route_table();                       // route_start_, route_links_, route_latency_
  void find_uniform_latency();                    // uniform_latency_
  // Region r's collectives (indices) grouped into clusters of overlapping async windows.
  std::vector<Cluster> overlap_clusters(size_t r, std::vector<int> collectives, const Prefixes& prefixes) const;
  // Compute seconds that run alongside cluster k, whose window spans ops [lo, hi] of region r.
  double window_compute(const Cluster& k, size_t r, int lo, int hi, const Prefixes& prefixes) const;
  // Compute that collective c, completed in a later region, runs alongside, per execution of
  // its own region: the following regions up to its -done, each x its repeat.
  double later_compute(const hlo::Collective& c, const Prefixes& prefixes) const;

  void cost_pattern(int p, std::span<const int> device_of, bool keep_vector);
  double cluster_comm(const Cluster& k);

  const hlo::CollectiveGraph& graph_;
  const topo::Topology& topo_;
  std::vector<int> patterns_;        // representative collective index per pattern
  std::vector<int> pattern_of_;      // collective -> pattern
  std::vector<double> volume_;       // collective -> V bytes
  std::vector<char> needs_vector_;   // pattern appears in a multi-pattern cluster
  std::vector<RegionPlan> regions_;
  std::vector<PatternCost> cost_;    // per pattern, for the current placement
  std::vector<int> chip_buf_;
  PhaseLoads loads_;                 // scratch for one pattern or one cluster
  // All routes of a small topology, flattened: links of (s, d) are
  // route_links_[route_start_[s*N+d] .. route_start_[s*N+d+1]). Empty for big topologies,
  // which walk routes instead.
  std::vector<int> route_start_;
  std::vector<int> route_links_;
  std::vector<double> route_latency_;
  double uniform_latency_ = -1;      // every link's latency when all are equal, else -1
};

}  // namespace aoizora::cost
