// The event engine behind simulate() (simulator.h has the model): it wires chips walking
// their schedules (chip_schedule.h), collectives lowered to group plans of routed flows
// (collective_lowering.h) and played as group instances (group_instance.h), flows sharing
// links (flow_network.h), all in the order of one event queue (event_queue.h); then the
// results and the critical path (critical_path.h). A "chip" here is a device: one
// TensorCore, two per chip on TPU7x (topo/topology.h).
#include <algorithm>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "aoizora/cost/q2.h"
#include "aoizora/sim/chip_schedule.h"
#include "aoizora/sim/collective_lowering.h"
#include "aoizora/sim/critical_path.h"
#include "aoizora/sim/event_queue.h"
#include "aoizora/sim/flow_network.h"
#include "aoizora/sim/group_instance.h"
#include "aoizora/sim/simulator.h"

namespace aoizora::sim {

namespace {

class Engine {
 public:
  Engine(const hlo::CollectiveGraph& g, const topo::Topology& t, const place::Placement& p,
         const SimOptions& o, const FlowModel& m)
      : graph_(g), topo_(t), place_(p), opt_(o), model_(m),
        schedule_(g, o.max_iterations),
        routes_(t.num_devices(), m.route),
        network_(t, routes_, o.record_timeline ? &result_.timeline : nullptr),
        plans_(g.collectives.size()),
        planned_(g.collectives.size(), 0) {
    partition_of_chip_.assign(t.num_devices(), -1);
    for (int p2 = 0; p2 < static_cast<int>(p.device_of.size()); ++p2)
      partition_of_chip_[p.device_of[p2]] = p2;
    op_labels_.resize(g.regions.size());
    for (size_t r = 0; r < g.regions.size(); ++r)
      for (const auto& op : g.regions[r].ops) op_labels_[r].push_back(label(op.name));
    result_.link_bytes.assign(t.links.size(), 0.0);
  }

  Result<SimResult> run();

 private:
  int label(const std::string& name) {
    auto [it, fresh] = label_ids_.try_emplace(name, static_cast<int>(labels_.size()));
    if (fresh) labels_.push_back(name);
    return it->second;
  }
  const CollectivePlan& plan(int c);
  void run_chip(int ci, double now);
  void end_region(ChipState& s, double now);
  Error deadlock() const;
  int arrive(ChipState& s, int coll, double now);
  void start_instance(int inst, double now);
  void release(int inst, int track, double now);
  void start_flow(int inst, int flow, double now);
  void drained(int inst, int flow, double now);
  void deliver(int inst, int flow, double now);
  void complete(int inst, double now);
  void member_complete(int inst, int member, double now);
  bool member_done(int inst, int chip_index) const;
  void fill_results();
  void fill_timeline();

  const hlo::CollectiveGraph& graph_;
  const topo::Topology& topo_;
  const place::Placement& place_;
  const SimOptions& opt_;
  const FlowModel& model_;
  SimResult result_;  // before network_, which records into its timeline

  ChipSchedule schedule_;
  RouteTable routes_;
  FlowNetwork network_;
  EventQueue queue_;
  std::vector<CollectivePlan> plans_;
  std::vector<char> planned_;
  std::vector<int> partition_of_chip_;
  std::vector<std::vector<int>> op_labels_;
  std::vector<std::string> labels_;
  std::unordered_map<std::string, int> label_ids_;

  std::vector<ChipState> chips_;
  std::vector<Instance> instances_;
  // Instances some members have arrived at, by (collective, group, execution): every chip
  // walks the same loops, so a group's members agree on how often each collective ran.
  std::map<std::tuple<int, int, int64_t>, int> open_instances_;
};

const CollectivePlan& Engine::plan(int ci) {
  CollectivePlan& cp = plans_[ci];
  if (planned_[ci]) return cp;
  planned_[ci] = 1;
  const hlo::Collective& c = graph_.collectives[ci];
  cp = lower_collective(c, graph_.num_partitions, place_.device_of, partition_of_chip_, topo_,
                        opt_, model_, routes_);
  cp.label = label(c.name);
  return cp;
}

// A chip whose next op lies after an extrapolated span is parked (op -1) until a resume
// event at its end.
void Engine::end_region(ChipState& s, double now) {
  const double t = schedule_.end_region(s, now, &result_.extrapolated);
  if (s.finished || t <= now) return;
  queue_.push(t, EventKind::kResume, static_cast<int>(&s - chips_.data()));
  s.op = -1;
}

// The collectives an op performs or completes.
std::span<const int> op_collectives(const hlo::ScheduledOp& op) {
  if (!op.collectives.empty()) return op.collectives;
  if (op.collective >= 0) return {&op.collective, 1};
  return {};
}

// Runs chip ci from `now` until it blocks. Compute ops touch nothing shared, so a run of them
// is played inline on the chip's own clock; the chip goes back through the event queue only
// before its next collective op, so that arrivals and -done checks happen in global time order.
void Engine::run_chip(int ci, double now) {
  ChipState& s = chips_[ci];
  const double entry = now;
  if (s.op < 0) s.op = 0;  // back from an extrapolation jump
  while (!s.finished) {
    const hlo::Region& region = graph_.regions[s.region];
    if (s.op >= static_cast<int>(region.ops.size())) {
      end_region(s, now);
      if (s.op < 0) return;
      continue;
    }
    const hlo::ScheduledOp& op = region.ops[s.op];
    if (op.kind == hlo::OpKind::kCompute && !s.computed) {
      s.computed = true;
      const double d = cost::op_seconds(op, topo_.spec);
      if (d > 0) {
        s.segments.push_back({now, now + d, SegKind::kCompute, op_labels_[s.region][s.op],
                              s.weight});
        s.stats.compute += d;
        now += d;
        ++result_.events;
      }
    }
    const std::span<const int> colls = op_collectives(op);
    if (!colls.empty() && now > entry) {
      queue_.push(now, EventKind::kResume, ci);  // s.computed stays set: resume at the collective part
      return;
    }
    s.computed = false;
    // Collectives: a sync op (or a compute op that carries collectives, e.g. a conditional)
    // arrives and waits; a -start arrives; a -done waits for what its -start began.
    s.waiting = 0;
    s.blocked_t0 = -1;
    for (int c : colls) {
      int inst = -1;
      if (op.kind == hlo::OpKind::kCollectiveDone) {
        inst = s.open[c];
        s.open[c] = -1;
      } else {
        inst = arrive(s, c, now);
        if (op.kind == hlo::OpKind::kCollectiveStart) {
          s.open[c] = inst;
          continue;
        }
      }
      if (inst >= 0 && !member_done(inst, ci)) {
        ++s.waiting;
        instances_[inst].waiters.push_back(ci);
      }
    }
    if (s.waiting > 0) {
      s.blocked_since = now;
      return;
    }
    ++s.op;
  }
}

int Engine::arrive(ChipState& s, int coll, double now) {
  const CollectivePlan& cp = plan(coll);
  const int g = cp.group_of_partition[s.partition];
  if (g < 0) return -1;
  auto key = std::make_tuple(coll, g, s.arrivals[coll]++);
  auto [it, fresh] = open_instances_.try_emplace(key, static_cast<int>(instances_.size()));
  if (fresh) {
    Instance in;
    in.collective = coll;
    in.group = g;
    in.weight = s.weight;
    instances_.push_back(std::move(in));
  }
  const int id = it->second;
  Instance& in = instances_[id];
  ++in.arrived;
  if (now > in.last_arrival || in.last_arriver < 0) {
    in.last_arrival = now;
    in.last_arriver = s.chip;
  }
  if (in.arrived == static_cast<int>(cp.groups[g].members.size())) {
    open_instances_.erase(it);
    in.t0 = now;
    queue_.push(now + cp.overhead, EventKind::kStart, id);
  }
  return id;
}

void Engine::start_instance(int id, double now) {
  ++result_.collectives;
  Instance& in = instances_[id];
  const GroupPlan& gp = plans_[in.collective].groups[in.group];
  in.flows_left = gp.num_flows;
  in.next_step.assign(gp.out.size(), 0);
  in.pending = gp.in_count;
  in.unsent = gp.out_count;
  in.member_left = gp.member_flows;
  in.member_done.assign(gp.members.size(), 0);
  for (size_t m = 0; m < gp.members.size(); ++m)
    if (gp.member_flows[m] == 0) member_complete(id, static_cast<int>(m), now);
  if (gp.num_flows == 0) {
    complete(id, now);
    return;
  }
  for (size_t k = 0; k < gp.out.size(); ++k) release(id, static_cast<int>(k), now);
}

// Starts the steps of track m (a member's lane) whose previous step is over.
void Engine::release(int id, int m, double now) {
  const GroupPlan& gp = plans_[instances_[id].collective].groups[instances_[id].group];
  while (true) {
    Instance& in = instances_[id];
    const int s = in.next_step[m];
    if (s >= gp.num_steps) break;
    if (s > 0 && (in.pending[m][s - 1] > 0 ||
                  (opt_.steps_wait_for_sends && in.unsent[m][s - 1] > 0)))
      break;
    ++in.next_step[m];
    for (int f : gp.out[m][s]) start_flow(id, f, now);
  }
}

void Engine::start_flow(int id, int f, double now) {
  const FlowSpec& fs = plans_[instances_[id].collective].flows[f];
  const std::vector<int>& links = routes_.links(fs.route);
  ++result_.flows;
  const double w = instances_[id].weight;
  for (int l : links) result_.link_bytes[l] += fs.bytes * w;
  if (links.empty() || fs.bytes <= 0) {
    queue_.push(now, EventKind::kDrained, id, f);
    queue_.push(now + fs.latency, EventKind::kDeliver, id, f);
    return;
  }
  network_.add(id, f, fs.route, fs.bytes);
}

// The flow's bytes have left its sender.
void Engine::drained(int id, int f, double now) {
  const FlowSpec& fs = plans_[instances_[id].collective].flows[f];
  if (--instances_[id].unsent[fs.src_track][fs.step] == 0 && opt_.steps_wait_for_sends)
    release(id, fs.src_track, now);
}

void Engine::deliver(int id, int f, double now) {
  const FlowSpec& fs = plans_[instances_[id].collective].flows[f];
  Instance& in = instances_[id];
  --in.flows_left;
  if (fs.dst_track >= 0 && --in.pending[fs.dst_track][fs.step] == 0)
    release(id, fs.dst_track, now);
  if (--instances_[id].member_left[fs.src_member] == 0) member_complete(id, fs.src_member, now);
  if (fs.dst_member >= 0 && fs.dst_member != fs.src_member &&
      --instances_[id].member_left[fs.dst_member] == 0)
    member_complete(id, fs.dst_member, now);
  if (instances_[id].flows_left == 0) complete(id, now);
}

bool Engine::member_done(int id, int ci) const {
  const Instance& in = instances_[id];
  if (in.done) return true;
  if (in.member_done.empty()) return false;  // not started
  const int m = plans_[in.collective].member_of_partition[chips_[ci].partition];
  return m >= 0 && in.member_done[m];
}

// A member's part is over once every flow it sends or receives has been delivered: it may go
// on while the rest of its group still communicates.
void Engine::member_complete(int id, int m, double now) {
  Instance& in = instances_[id];
  in.member_done[m] = 1;
  const int chip = plans_[in.collective].groups[in.group].members[m];
  size_t keep = 0;
  for (size_t i = 0; i < in.waiters.size(); ++i) {
    const int ci = in.waiters[i];
    if (chips_[ci].chip != chip) {
      in.waiters[keep++] = ci;
      continue;
    }
    ChipState& s = chips_[ci];
    s.blocked_t0 = std::max(s.blocked_t0, in.t0);
    if (--s.waiting > 0) continue;
    const double b = s.blocked_since;
    s.stats.idle += std::max(0.0, std::min(s.blocked_t0, now) - b);
    s.stats.comm += now - std::max(b, s.blocked_t0);
    if (now > b) s.segments.push_back({b, now, SegKind::kWait, id, s.weight});
    ++s.op;
    queue_.push(now, EventKind::kResume, ci);
  }
  in.waiters.resize(keep);
}

void Engine::complete(int id, double now) {
  Instance& in = instances_[id];
  for (size_t m = 0; m < in.member_done.size(); ++m)
    if (!in.member_done[m]) member_complete(id, static_cast<int>(m), now);
  in.done = true;
  in.end = now;
  in.waiters.clear();
  in.waiters.shrink_to_fit();
  in.pending.clear();
  in.pending.shrink_to_fit();
  in.unsent.clear();
  in.unsent.shrink_to_fit();
  in.next_step.clear();
  in.next_step.shrink_to_fit();
  in.member_left.clear();
  in.member_left.shrink_to_fit();
  in.member_done.clear();
  in.member_done.shrink_to_fit();
}

Result<SimResult> Engine::run() {
  const int n = graph_.num_partitions;
  chips_.resize(n);
  for (int p = 0; p < n; ++p) {
    ChipState& s = chips_[p];
    s.chip = place_.device_of[p];
    s.partition = p;
    s.open.assign(graph_.collectives.size(), -1);
    s.arrivals.assign(graph_.collectives.size(), 0);
    schedule_.enter_region(s, 0, 0.0);
    if (!s.finished) queue_.push(0.0, EventKind::kResume, p);
  }

  double last = 0;  // time active flows were last advanced to
  std::vector<ActiveFlow> finished;
  while (true) {
    const double t = std::min(network_.next_drain(last), queue_.next_time());
    if (t == std::numeric_limits<double>::infinity()) break;
    finished.clear();
    network_.advance(t - last, t, finished);
    last = t;
    for (const ActiveFlow& a : finished) {
      ++result_.events;
      const FlowSpec& fs = plans_[instances_[a.inst].collective].flows[a.flow];
      queue_.push(t + fs.latency, EventKind::kDeliver, a.inst, a.flow);
      drained(a.inst, a.flow, t);
    }
    while (!queue_.empty() && queue_.next_time() <= t) {
      const Event e = queue_.pop();
      ++result_.events;
      switch (e.kind) {
        case EventKind::kResume: run_chip(e.a, e.time); break;
        case EventKind::kStart: start_instance(e.a, e.time); break;
        case EventKind::kDrained: drained(e.a, e.b, e.time); break;
        case EventKind::kDeliver: deliver(e.a, e.b, e.time); break;
      }
    }
    network_.solve_if_changed(t);
  }

  for (const ChipState& s : chips_)
    if (!s.finished) return deadlock();
  fill_results();
  if (opt_.record_timeline) fill_timeline();
  return std::move(result_);
}

void Engine::fill_results() {
  const int n = graph_.num_partitions;
  result_.chips.assign(topo_.num_devices(), ChipTime{});
  double step = 0;
  for (const ChipState& s : chips_) step = std::max(step, s.finish);
  result_.step_seconds = step;
  for (int c = 0; c < topo_.num_devices(); ++c) result_.chips[c].idle = step;
  for (const ChipState& s : chips_) {
    ChipTime t = s.stats;
    t.idle += step - s.finish;
    t.finish = s.finish;
    result_.chips[s.chip] = t;
  }
  double compute = 0;
  for (const hlo::Region& r : graph_.regions) {
    double per_iter = 0;
    for (const hlo::ScheduledOp& op : r.ops) per_iter += cost::op_seconds(op, topo_.spec);
    compute += per_iter * static_cast<double>(std::max<int64_t>(r.repeat, 0));
  }
  result_.compute_bound_seconds = n > 0 ? compute : 0;
  result_.link_utilization.assign(topo_.links.size(), 0.0);
  const std::vector<double>& cap = network_.capacity();
  for (size_t l = 0; l < topo_.links.size(); ++l)
    if (step > 0 && cap[l] > 0) result_.link_utilization[l] = result_.link_bytes[l] / (cap[l] * step);
  CriticalPath path = critical_path(chips_, instances_, plans_, labels_, graph_,
                                    topo_.num_devices(), opt_.top_contributors);
  result_.critical_path_seconds = path.seconds;
  result_.critical_path = std::move(path.contributors);
}

// Every chip's segments as trace slices; a wait splits where its group's last member arrived.
void Engine::fill_timeline() {
  Timeline& tl = result_.timeline;
  for (const ChipState& s : chips_)
    for (const Segment& seg : s.segments) {
      if (seg.kind == SegKind::kCompute) {
        tl.slices.push_back({s.chip, seg.start, seg.end, SliceKind::kCompute, seg.label});
      } else if (seg.kind == SegKind::kJump) {
        tl.slices.push_back({s.chip, seg.start, seg.end, SliceKind::kExtrapolated,
                             label(schedule_.loops()[seg.label].name)});
      } else {
        const Instance& in = instances_[seg.label];
        const int lab = plans_[in.collective].label;
        const double split = std::clamp(in.t0, seg.start, seg.end);
        if (split > seg.start)
          tl.slices.push_back({s.chip, seg.start, split, SliceKind::kCollectiveWait, lab});
        if (seg.end > split)
          tl.slices.push_back({s.chip, split, seg.end, SliceKind::kCollectiveComm, lab});
      }
    }
  tl.labels = labels_;  // with the extrapolated loops' names
}

// The error for a run that ended with chips still blocked: the first such chip, the op it
// waits at and the collective it waits on, with how many members had arrived.
Error Engine::deadlock() const {
  for (const ChipState& s : chips_) {
    if (s.finished) continue;
    const hlo::Region& region = graph_.regions[s.region];
    std::string where = "region '" + region.name + "'";
    std::string what = "no collective";
    if (s.op >= 0 && s.op < static_cast<int>(region.ops.size())) {
      const hlo::ScheduledOp& op = region.ops[s.op];
      where = "op '" + op.name + "' of " + where;
      for (int c : op_collectives(op)) {
        what = "collective '" + graph_.collectives[c].name + "'";
        for (const auto& [key, inst] : open_instances_)
          if (std::get<0>(key) == c) {
            const CollectivePlan& cp = plans_[c];
            what += " (" + std::to_string(instances_[inst].arrived) + " of " +
                    std::to_string(cp.groups[instances_[inst].group].members.size()) +
                    " members arrived)";
            break;
          }
        break;
      }
    }
    return Error::internal("simulated deadlock: partition " + std::to_string(s.partition) +
                           " (chip " + std::to_string(s.chip) + ") never finished; it waits at " +
                           where + " on " + what);
  }
  return Error::internal("simulated deadlock");
}

}  // namespace

Result<SimResult> simulate_with(const hlo::CollectiveGraph& graph,
                                const topo::Topology& topology,
                                const place::Placement& placement, const SimOptions& options,
                                const FlowModel& model) {
  Engine engine(graph, topology, placement, options, model);
  return engine.run();
}

}  // namespace aoizora::sim
