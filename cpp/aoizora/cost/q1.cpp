#include "aoizora/cost/q1.h"

#include <algorithm>
#include <limits>

#include "aoizora/compute/mxu.h"
#include "aoizora/compute/splash_kernel.h"

namespace aoizora::cost {

double best_axis_bandwidth(int64_t k, const Q1Params& p) {
  if (k <= 1) return std::numeric_limits<double>::infinity();
  const double link = p.chip.link_bandwidth;
  for (int d = 0; d < 3; ++d)
    if (p.slice_dims[d] == k && p.slice_wrap[d]) return 2 * link;
  if (k >= 4 && k % 2 == 0) {
    // A sub-grid a x b (a, b >= 2) of the slice holds a Hamiltonian cycle.
    for (int d = 0; d < 3; ++d)
      for (int e = d + 1; e < 3; ++e)
        for (int64_t a = 2; a <= p.slice_dims[d]; ++a)
          if (k % a == 0 && k / a >= 2 && k / a <= p.slice_dims[e]) return 2 * link;
  }
  return link;
}

namespace {

double axis_bw(const std::string& axis, int64_t k, const Q1Params& p) {
  auto it = p.axis_bandwidth.find(axis);
  if (it != p.axis_bandwidth.end()) return it->second;
  return best_axis_bandwidth(k, p);
}

}  // namespace

double collective_seconds(const shlo::DagNode& n, const shlo::MeshTable& meshes,
                          const std::string& mesh, const Q1Params& p) {
  using shlo::CommKind;
  const double k = static_cast<double>(std::max<int64_t>(n.group_size, 1));
  if (k <= 1 && n.comm != CommKind::kCollectivePermute) return 0;
  if (p.group_costs && k > 1) {
    CoreAxis core = CoreAxis::kAny;
    if (!p.core_axis.empty()) {
      core = CoreAxis::kAvoids;
      for (const shlo::AxisRef& a : n.axes)
        if (a.name == p.core_axis) core = CoreAxis::kSpans;
    }
    // A ring step's permute runs over every link of its cycle at once (on TPU7x a ring
    // over the chips' cores crosses ICI as well as the die-to-die links), not one pair's.
    const int64_t group = n.comm == CommKind::kCollectivePermute ? n.cycle_length
                                                                 : static_cast<int64_t>(k);
    return p.group_costs->get(to_hlo_kind(n.comm), static_cast<int>(group), core)
        .seconds(node_volume(n));
  }
  double bw = 0;
  const shlo::Mesh* m = meshes.find(mesh);
  for (const shlo::AxisRef& a : n.axes) {
    int64_t size = m ? m->axis_size(a.name) : 0;
    if (size <= 0) size = static_cast<int64_t>(k);
    bw += axis_bw(shlo::axis_label(a), size, p);
  }
  if (bw <= 0 || n.axes.empty()) bw = best_axis_bandwidth(static_cast<int64_t>(k), p);
  const double frac = (k - 1) / k;
  switch (n.comm) {
    case CommKind::kAllGather: return n.result_bytes * frac / bw + p.chip.hop_latency * (k - 1);
    case CommKind::kReduceScatter: return n.operand_bytes * frac / bw + p.chip.hop_latency * (k - 1);
    case CommKind::kAllReduce: return 2 * n.operand_bytes * frac / bw + p.chip.hop_latency * 2 * (k - 1);
    case CommKind::kAllToAll: return n.operand_bytes * k / (4 * bw) + p.chip.hop_latency * (k - 1);
    case CommKind::kCollectivePermute:
    case CommKind::kCollectiveBroadcast: return n.operand_bytes / p.chip.link_bandwidth + p.chip.hop_latency;
  }
  return 0;
}

double compute_seconds(const shlo::DagNode& n, const Q1Params& p) {
  if (n.kernel) return compute::splash_time(*n.kernel, p.chip).seconds;  // per grid step
  return compute::compute_seconds(n.flops, n.bytes, n.matmuls, p.chip);
}

namespace {

bool is_ring_step(const shlo::DagNode& x) {
  return x.kind == shlo::DagNode::Kind::kComm && x.origin == shlo::CommOrigin::kExplicit &&
         x.comm == shlo::CommKind::kCollectivePermute && x.overlappable;
}

// Where each ring step's permutes may start: after the producer of the K/V the ring's first
// step sends (a step that sends what a permute received starts where that one could).
std::vector<long> ring_chain_start(const std::vector<shlo::DagNode>& nodes) {
  std::vector<long> lo(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!is_ring_step(nodes[i])) continue;
    long l = static_cast<long>(i);
    while (l > 0 && nodes[static_cast<size_t>(l - 1)].repeat >= nodes[i].repeat) --l;
    for (int d : nodes[i].deps)
      if (d >= 0 && static_cast<size_t>(d) < i)
        l = std::max(l, is_ring_step(nodes[static_cast<size_t>(d)]) ? lo[static_cast<size_t>(d)]
                                                                   : static_cast<long>(d) + 1);
    lo[i] = l;
  }
  return lo;
}

// Ring steps that send on what an earlier ring step received before the compute of their
// step reads it (tokamax's ring: send, then kernel): some compute node after the step
// depends on the same received value.
std::vector<char> ring_steps_issued_first(const std::vector<shlo::DagNode>& nodes) {
  std::vector<long> last_compute_user(nodes.size(), -1);
  for (size_t j = 0; j < nodes.size(); ++j)
    if (nodes[j].kind == shlo::DagNode::Kind::kCompute)
      for (int d : nodes[j].deps)
        if (d >= 0 && static_cast<size_t>(d) < nodes.size())
          last_compute_user[static_cast<size_t>(d)] = static_cast<long>(j);
  std::vector<char> first(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!is_ring_step(nodes[i])) continue;
    for (int d : nodes[i].deps)
      if (d >= 0 && static_cast<size_t>(d) < i && is_ring_step(nodes[static_cast<size_t>(d)]) &&
          last_compute_user[static_cast<size_t>(d)] > static_cast<long>(i))
        first[i] = 1;
  }
  return first;
}

// The compute seconds a ring step's permute (node i) hides, per execution, taken from
// `spare` so that compute hides permutes once, not once per permute (K and V share the links
// and the kernels). Two schedules, as the TPU compiler makes them (libtpu 0.0.42.1, read off
// the compiled HLO on v5e):
//  - a step that sends on what the previous one received *after* working on it (jax's ring
//    of splash calls: kernel, then send) has its chain issued back to back as soon as K/V
//    exist; only the last step's permutes run alongside the ring's kernels. So a permute
//    whose result is sent on that way (`forwarded`) hides nothing, and the last one hides
//    under the compute from the chain's start to its consumer;
//  - a step that sends *before* working on it (tokamax's ring: send, then kernel) is issued
//    when the previous permute is done, and runs alongside its own step's work (`issued_first`:
//    the window starts at the permute itself).
// A permute with no later consumer (a rolled loop whose result is carried to the next
// iteration) runs alongside the rest of its loop body: the nodes repeated at least as often,
// contiguous with it.
double ring_step_window(const std::vector<shlo::DagNode>& nodes, size_t i, int consumer,
                        long chain_start, bool forwarded, bool issued_first,
                        const std::vector<double>& t, std::vector<double>& spare) {
  if (forwarded) return 0;
  const shlo::DagNode& x = nodes[i];
  const long n = static_cast<long>(nodes.size());
  long lo = issued_first ? static_cast<long>(i) : chain_start, hi = static_cast<long>(i);
  if (consumer > static_cast<int>(i)) {
    hi = consumer - 1;
  } else {
    while (lo > 0 && nodes[static_cast<size_t>(lo - 1)].repeat >= x.repeat) --lo;
    while (hi + 1 < n && nodes[static_cast<size_t>(hi + 1)].repeat >= x.repeat) ++hi;
  }
  double need = t[i], window = 0;
  for (long j = lo; j <= hi && need > window; ++j) {
    const shlo::DagNode& y = nodes[static_cast<size_t>(j)];
    if (y.kind != shlo::DagNode::Kind::kCompute) continue;
    const double scale = y.repeat / x.repeat;  // y's executions per execution of the permute
    const double take = std::min(spare[static_cast<size_t>(j)] * scale, need - window);
    spare[static_cast<size_t>(j)] -= take / scale;
    window += take;
  }
  return window;
}

}  // namespace

namespace {

// Seconds of one execution of each node; sets (*consumer_of)[d] to the first node that reads
// d, and adds the compute seconds (and the count of collectives with no placed group) to *out.
std::vector<double> node_seconds(const shlo::PredictionDag& dag, const Q1Params& p,
                                 std::vector<int>* consumer_of, Q1Breakdown* out) {
  using Kind = shlo::DagNode::Kind;
  const std::vector<shlo::DagNode>& nodes = dag.nodes;
  const size_t n = nodes.size();
  std::vector<double> t(n);
  std::vector<int>& consumer = *consumer_of;
  Q1Breakdown& b = *out;
  for (size_t i = 0; i < n; ++i) {
    const shlo::DagNode& x = nodes[i];
    for (int d : x.deps)
      if (d >= 0 && static_cast<size_t>(d) < n && consumer[static_cast<size_t>(d)] < 0)
        consumer[static_cast<size_t>(d)] = static_cast<int>(i);
    if (x.kind == Kind::kCompute) {
      t[i] = compute_seconds(x, p);
      b.compute += t[i] * x.repeat;
    } else {
      const GroupCost* placed = p.placed_groups ? p.placed_groups->get(i) : nullptr;
      if (placed) {
        t[i] = placed->seconds(node_volume(x));
      } else {
        t[i] = collective_seconds(x, dag.meshes, dag.mesh, p);
        if (p.placed_groups) ++b.unplaced_collectives;
      }
    }
  }
  return t;
}

// Ring steps whose result is sent on after the work (a later step not issued first reads it).
std::vector<char> forwarded_ring_steps(const std::vector<shlo::DagNode>& nodes,
                                       const std::vector<char>& issued_first) {
  const size_t n = nodes.size();
  std::vector<char> forwarded(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (is_ring_step(nodes[i]) && !issued_first[i])
      for (int d : nodes[i].deps)
        if (d >= 0 && static_cast<size_t>(d) < n && is_ring_step(nodes[static_cast<size_t>(d)]))
          forwarded[static_cast<size_t>(d)] = 1;
  return forwarded;
}

// An all-gather runs as an async collective fusion alongside one matmul: the last one
// before its consumer that hides no other gather and that XLA may schedule after the
// gathered value is ready (any, for a weight; else one in the same loop body that the
// value does not depend on). Its window: seconds per execution of node i that the matmul
// hides; 0 when none is free.
double gather_window(const std::vector<shlo::DagNode>& nodes, size_t i, long consumer,
                     const std::vector<double>& t, std::vector<char>* used) {
  using Kind = shlo::DagNode::Kind;
  const shlo::DagNode& x = nodes[i];
  const long end = consumer >= 0 ? consumer : static_cast<long>(i);
  long lo = 0;
  std::vector<char> ancestor;
  if (!x.overlappable) {
    lo = static_cast<long>(i);
    while (lo > 0 && nodes[static_cast<size_t>(lo - 1)].repeat >= x.repeat) --lo;
    ancestor.assign(i - static_cast<size_t>(lo) + 1, 0);
    std::vector<int> stack(x.deps.begin(), x.deps.end());
    while (!stack.empty()) {
      const int d = stack.back();
      stack.pop_back();
      if (d < lo || d >= static_cast<long>(i) || ancestor[static_cast<size_t>(d - lo)]) continue;
      ancestor[static_cast<size_t>(d - lo)] = 1;
      for (int e : nodes[static_cast<size_t>(d)].deps) stack.push_back(e);
    }
  }
  for (long j = end - 1; j >= lo; --j) {
    const shlo::DagNode& y = nodes[static_cast<size_t>(j)];
    if (y.kind != Kind::kCompute || y.op != "stablehlo.dot_general" ||
        (*used)[static_cast<size_t>(j)])
      continue;
    if (!ancestor.empty() && j < static_cast<long>(i) && ancestor[static_cast<size_t>(j - lo)])
      continue;
    (*used)[static_cast<size_t>(j)] = 1;
    return t[static_cast<size_t>(j)] * y.repeat / x.repeat;
  }
  return 0;
}

}  // namespace

Q1Breakdown q1(const shlo::PredictionDag& dag, const Q1Params& p) {
  using Kind = shlo::DagNode::Kind;
  const std::vector<shlo::DagNode>& nodes = dag.nodes;
  const size_t n = nodes.size();
  std::vector<int> consumer(n, -1);
  Q1Breakdown b;
  const std::vector<double> t = node_seconds(dag, p, &consumer, &b);  // one execution
  std::vector<char> used(n, 0);  // matmuls already hiding a weight gather
  std::vector<double> spare = t;  // compute seconds not yet hiding a ring step's permute
  const std::vector<long> chain_start = ring_chain_start(nodes);
  const std::vector<char> issued_first = ring_steps_issued_first(nodes);
  const std::vector<char> forwarded = forwarded_ring_steps(nodes, issued_first);
  for (size_t i = 0; i < n; ++i) {
    const shlo::DagNode& x = nodes[i];
    if (x.kind != Kind::kComm) continue;
    const double total = t[i] * x.repeat;
    b.comm += total;
    for (const shlo::AxisRef& a : x.axes)
      b.comm_by_axis[shlo::axis_label(a)] += total / static_cast<double>(x.axes.size());
    // What XLA can overlap: ring permutes (explicit, in shard_map) and all-gathers (async
    // collective fusions: weight gathers and activation gathers alike). Reductions of partial
    // sums, all-to-alls and the rest are needed at once: barriers.
    const bool ring_step = is_ring_step(x);
    if (!ring_step && x.comm != shlo::CommKind::kAllGather) {
      b.barrier_comm += total;
      continue;
    }
    b.overlappable_comm += total;
    double window = 0;  // compute seconds it runs alongside, per execution
    if (ring_step)
      window = ring_step_window(nodes, i, consumer[i], chain_start[i], forwarded[i] != 0,
                                issued_first[i] != 0, t, spare);
    else
      window = gather_window(nodes, i, consumer[i], t, &used);
    b.exposed_comm += std::max(0.0, t[i] - window) * x.repeat;
  }
  b.q1 = b.compute + b.exposed_comm + b.barrier_comm;
  b.core_axis = p.core_axis;
  return b;
}

Q1Breakdown q1_best_core_axis(const shlo::PredictionDag& dag, Q1Params p) {
  const int cores = p.chip.cores_per_chip;
  const shlo::Mesh* mesh = dag.meshes.find(dag.mesh);
  p.core_axis.clear();
  Q1Breakdown best = q1(dag, p);
  if (!p.group_costs || cores < 2 || !mesh) return best;
  bool any = false;
  for (const shlo::MeshAxis& a : mesh->axes) {
    if (a.size < cores || a.size % cores != 0) continue;
    p.core_axis = a.name;
    Q1Breakdown b = q1(dag, p);
    if (!any || b.q1 < best.q1) best = std::move(b);
    any = true;
  }
  return best;
}

}  // namespace aoizora::cost
