#include "aoizora/cost/q2.h"

#include <algorithm>
#include <map>

#include "aoizora/cost/algorithm.h"
#include "aoizora/cost/group_cost.h"
#include "aoizora/compute/mxu.h"
#include "aoizora/compute/splash_kernel.h"

namespace aoizora::cost {

double op_seconds(const hlo::ScheduledOp& op, const topo::ChipSpec& spec) {
  if (op.kind != hlo::OpKind::kCompute) return 0;
  // One partition runs on one device: a core's share of the chip (topo/chip_spec.h).
  if (op.kernel) return compute::splash_time(*op.kernel, spec).seconds;  // per grid step
  return compute::compute_seconds(op.flops, op.bytes, op.matmuls, spec);
}

namespace {

// The ops [start, done] a collective's window spans in its own region (`region_end` ops): to
// the end of the region when it completes in a later one.
std::pair<int, int> op_window(const hlo::Collective& c, int region_end) {
  if (c.done_region > c.region) return {c.start_op, region_end};
  return {c.start_op, std::max(c.start_op, c.done_op)};
}

}  // namespace

Q2Evaluator::Q2Evaluator(const hlo::CollectiveGraph& graph, const topo::Topology& topology)
    : graph_(graph), topo_(topology), loads_(topology) {
  group_patterns();
  plan_regions(region_prefix_sums());
  build_route_table();
  find_uniform_latency();
}

void Q2Evaluator::group_patterns() {
  const size_t nc = graph_.collectives.size();
  pattern_of_.assign(nc, -1);
  volume_.assign(nc, 0);
  std::map<std::vector<int>, int> seen;
  for (size_t i = 0; i < nc; ++i) {
    const hlo::Collective& c = graph_.collectives[i];
    auto [it, inserted] = seen.emplace(pattern_key(c), static_cast<int>(patterns_.size()));
    if (inserted) patterns_.push_back(static_cast<int>(i));
    pattern_of_[i] = it->second;
    volume_[i] = collective_volume(c);
  }
  needs_vector_.assign(patterns_.size(), 0);
  cost_.assign(patterns_.size(), PatternCost{});
}

Q2Evaluator::Prefixes Q2Evaluator::region_prefix_sums() const {
  Prefixes prefixes(graph_.regions.size());
  for (size_t r = 0; r < graph_.regions.size(); ++r) {
    const hlo::Region& region = graph_.regions[r];
    std::vector<double>& prefix = prefixes[r];
    prefix.assign(region.ops.size() + 1, 0);
    for (size_t i = 0; i < region.ops.size(); ++i)
      prefix[i + 1] = prefix[i] + op_seconds(region.ops[i], topo_.spec);
  }
  return prefixes;
}

void Q2Evaluator::plan_regions(const Prefixes& prefixes) {
  regions_.resize(graph_.regions.size());
  std::vector<std::vector<int>> by_region(graph_.regions.size());
  for (size_t i = 0; i < graph_.collectives.size(); ++i) {
    const int r = graph_.collectives[i].region;
    if (r >= 0 && static_cast<size_t>(r) < graph_.regions.size()) by_region[static_cast<size_t>(r)].push_back(static_cast<int>(i));
  }
  for (size_t r = 0; r < graph_.regions.size(); ++r) {
    RegionPlan& plan = regions_[r];
    plan.repeat = static_cast<double>(graph_.regions[r].repeat);
    plan.compute = prefixes[r].back();
    plan.clusters = overlap_clusters(r, std::move(by_region[r]), prefixes);
    for (const Cluster& k : plan.clusters)
      if (!k.single_pattern)
        for (int ci : k.collectives) needs_vector_[static_cast<size_t>(pattern_of_[static_cast<size_t>(ci)])] = 1;
  }
}

std::vector<Q2Evaluator::Cluster> Q2Evaluator::overlap_clusters(size_t r, std::vector<int> cs,
                                                                const Prefixes& prefixes) const {
  const int end = static_cast<int>(graph_.regions[r].ops.size());
  auto window = [&](int ci) { return op_window(graph_.collectives[static_cast<size_t>(ci)], end); };
  std::stable_sort(cs.begin(), cs.end(), [&](int a, int b) { return window(a) < window(b); });
  std::vector<Cluster> clusters;
  for (size_t i = 0; i < cs.size();) {
    Cluster k;
    const hlo::Collective& first = graph_.collectives[static_cast<size_t>(cs[i])];
    auto [lo, hi] = window(cs[i]);
    k.collectives.push_back(cs[i]);
    k.async = first.async && (hi > lo || first.done_region > first.region);
    size_t j = i + 1;
    if (k.async) {
      // Async windows that overlap every window of this cluster join it (their flows share
      // links). One that starts after a member's -done does not: it may wait for it (a ring
      // step's permute sends what the previous one received), so a chain of windows, each
      // overlapping the next, runs as a sequence of clusters, not all at once.
      int first_done = hi;
      while (j < cs.size()) {
        const hlo::Collective& c = graph_.collectives[static_cast<size_t>(cs[j])];
        auto [s, d] = window(cs[j]);
        if (!c.async || d <= s || s >= first_done) break;
        k.collectives.push_back(cs[j]);
        hi = std::max(hi, d);
        first_done = std::min(first_done, d);
        ++j;
      }
      k.window_compute = window_compute(k, r, lo, hi, prefixes);
    }
    for (int ci : k.collectives)
      if (pattern_of_[static_cast<size_t>(ci)] != pattern_of_[static_cast<size_t>(k.collectives[0])])
        k.single_pattern = false;
    clusters.push_back(std::move(k));
    i = j;
  }
  return clusters;
}

double Q2Evaluator::window_compute(const Cluster& k, size_t r, int lo, int hi, const Prefixes& prefixes) const {
  const std::vector<double>& prefix = prefixes[r];
  const int nops = static_cast<int>(graph_.regions[r].ops.size());
  const size_t a = static_cast<size_t>(std::clamp(lo + 1, 0, nops));
  const size_t b = static_cast<size_t>(std::clamp(hi, 0, nops));
  const double inside = b > a ? prefix[b] - prefix[a] : 0;
  double later = 0;
  for (int ci : k.collectives) later = std::max(later, later_compute(graph_.collectives[static_cast<size_t>(ci)], prefixes));
  return inside + later;
}

double Q2Evaluator::later_compute(const hlo::Collective& c, const Prefixes& prefixes) const {
  const int r0 = c.region, r1 = c.done_region;
  if (r1 <= r0 || static_cast<size_t>(r1) >= graph_.regions.size()) return 0.0;
  const double own = static_cast<double>(std::max<int64_t>(graph_.regions[static_cast<size_t>(r0)].repeat, 1));
  double t = 0;
  for (int q = r0 + 1; q <= r1; ++q) {
    const std::vector<double>& prefix = prefixes[static_cast<size_t>(q)];
    const size_t upto = q < r1 ? prefix.size() - 1
                               : std::min(prefix.size() - 1, static_cast<size_t>(std::max(c.done_op, 0)));
    t += prefix[upto] * static_cast<double>(graph_.regions[static_cast<size_t>(q)].repeat) / own;
  }
  return t;
}

void Q2Evaluator::build_route_table() {
  // Precomputed routes pay off up to a few hundred chips (a 16x16 torus: 65,536 routes).
  const size_t n = static_cast<size_t>(topo_.num_devices());
  if (n > 512) return;
  route_start_.reserve(n * n + 1);
  route_latency_.reserve(n * n);
  for (size_t a = 0; a < n; ++a)
    for (size_t b = 0; b < n; ++b) {
      route_start_.push_back(static_cast<int>(route_links_.size()));
      double lat = 0;
      topo_.for_each_route_link(static_cast<int>(a), static_cast<int>(b), [&](int l) {
        route_links_.push_back(l);
        lat += topo_.links[static_cast<size_t>(l)].latency;
      });
      route_latency_.push_back(lat);
    }
  route_start_.push_back(static_cast<int>(route_links_.size()));
}

void Q2Evaluator::find_uniform_latency() {
  uniform_latency_ = topo_.links.empty() ? 0 : topo_.links[0].latency;
  for (const topo::Link& l : topo_.links)
    if (l.latency != uniform_latency_) uniform_latency_ = -1;
}

void Q2Evaluator::cost_pattern(int p, std::span<const int> /*device_of*/, bool keep_vector) {
  const hlo::Collective& c = graph_.collectives[static_cast<size_t>(patterns_[static_cast<size_t>(p)])];
  PatternCost& pc = cost_[static_cast<size_t>(p)];
  loads_.clear();
  const size_t n = static_cast<size_t>(topo_.num_devices());
  double latency = 0;  // steps x the longest route's latency
  if (!route_start_.empty()) {
    double max_latency = 0;
    const int steps = generate_flows(c, chip_buf_, topo_, 1.0, /*aggregate=*/true,
                           [&](int src, int dst, double bytes, int first_step, int, int) {
                             const int s = loads_.slot(first_step);
                             const size_t r = static_cast<size_t>(src) * n + static_cast<size_t>(dst);
                             const int end = route_start_[r + 1];
                             for (int i = route_start_[r]; i < end; ++i)
                               loads_.add(s, route_links_[static_cast<size_t>(i)], bytes);
                             max_latency = std::max(max_latency, route_latency_[r]);
                           });
    latency = steps * max_latency;
  } else if (uniform_latency_ >= 0) {
    int max_hops = 0;
    const int steps = generate_flows(c, chip_buf_, topo_, 1.0, /*aggregate=*/true,
                           [&](int src, int dst, double bytes, int first_step, int, int) {
                             const int s = loads_.slot(first_step);
                             int h = 0;
                             topo_.for_each_route_link(src, dst, [&](int l) {
                               loads_.add(s, l, bytes);
                               ++h;
                             });
                             max_hops = std::max(max_hops, h);
                           });
    latency = steps * max_hops * uniform_latency_;
  } else {
    latency = price_collective(c, chip_buf_, topo_, loads_).latency;  // leaves loads_ filled
  }
  pc.unit_seconds = loads_.serial_seconds();
  pc.latency = latency;
  pc.phase.clear();
  pc.links.clear();
  pc.load.clear();
  if (keep_vector)
    loads_.for_each([&](int first_step, int l, double bytes) {
      pc.phase.push_back(first_step);
      pc.links.push_back(l);
      pc.load.push_back(bytes);
    });
}

double Q2Evaluator::cluster_comm(const Cluster& k) {
  if (k.single_pattern) {
    double v = 0;
    for (int ci : k.collectives) v += volume_[static_cast<size_t>(ci)];
    const PatternCost& pc = cost_[static_cast<size_t>(pattern_of_[static_cast<size_t>(k.collectives[0])])];
    return v > 0 ? v * pc.unit_seconds + pc.latency : 0;
  }
  // Collectives in one cluster run at once: phase f of each shares links with phase f of
  // the others.
  loads_.clear();
  double latency = 0;
  for (int ci : k.collectives) {
    const double v = volume_[static_cast<size_t>(ci)];
    if (v <= 0) continue;
    const PatternCost& pc = cost_[static_cast<size_t>(pattern_of_[static_cast<size_t>(ci)])];
    latency = std::max(latency, pc.latency);
    int phase = -1, s = -1;
    for (size_t i = 0; i < pc.links.size(); ++i) {
      if (pc.phase[i] != phase) s = loads_.slot(phase = pc.phase[i]);
      loads_.add(s, pc.links[i], v * pc.load[i]);
    }
  }
  return loads_.serial_seconds() + latency;
}

double Q2Evaluator::seconds(std::span<const int> device_of) {
  chip_buf_.assign(device_of.begin(), device_of.end());
  for (size_t p = 0; p < patterns_.size(); ++p) cost_pattern(static_cast<int>(p), device_of, needs_vector_[p] != 0);
  double total = 0;
  for (const RegionPlan& r : regions_) {
    double t = r.compute;
    for (const Cluster& k : r.clusters) {
      const double comm = cluster_comm(k);
      t += k.async ? std::max(0.0, comm - k.window_compute) : comm;
    }
    total += r.repeat * t;
  }
  return total;
}

Q2Result Q2Evaluator::evaluate(std::span<const int> device_of) {
  chip_buf_.assign(device_of.begin(), device_of.end());
  for (size_t p = 0; p < patterns_.size(); ++p) cost_pattern(static_cast<int>(p), device_of, true);
  Q2Result out;
  out.link_bytes.assign(topo_.links.size(), 0);
  out.collective_seconds.assign(graph_.collectives.size(), 0);
  for (size_t ci = 0; ci < graph_.collectives.size(); ++ci) {
    const PatternCost& pc = cost_[static_cast<size_t>(pattern_of_[ci])];
    const double v = volume_[ci];
    out.collective_seconds[ci] = v > 0 ? v * pc.unit_seconds + pc.latency : 0;
    const int r = graph_.collectives[ci].region;
    const double repeat =
        r >= 0 && static_cast<size_t>(r) < regions_.size() ? regions_[static_cast<size_t>(r)].repeat : 0;
    for (size_t i = 0; i < pc.links.size(); ++i)
      out.link_bytes[static_cast<size_t>(pc.links[i])] += repeat * v * pc.load[i];
  }
  for (const RegionPlan& r : regions_) {
    double exposed = 0, comm_total = 0;
    for (const Cluster& k : r.clusters) {
      const double comm = cluster_comm(k);
      comm_total += comm;
      exposed += k.async ? std::max(0.0, comm - k.window_compute) : comm;
    }
    out.compute_seconds += r.repeat * r.compute;
    out.exposed_comm_seconds += r.repeat * exposed;
    out.comm_seconds += r.repeat * comm_total;
  }
  out.seconds = out.compute_seconds + out.exposed_comm_seconds;
  return out;
}

Q2Result evaluate_q2(const hlo::CollectiveGraph& graph, const topo::Topology& topology,
                     const place::Placement& placement) {
  Q2Evaluator e(graph, topology);
  return e.evaluate(placement.device_of);
}

}  // namespace aoizora::cost
