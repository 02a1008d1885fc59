// The event engine behind simulate(): chips walk their schedules (a "chip" here is a device:
// one TensorCore, two per chip on TPU7x; see topo/topology.h), collectives become group
// instances that play their flows step by step, flows share links max-min fairly.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <unordered_map>

#include "aoizora/cost/q2.h"
#include "aoizora/sim/max_min.h"
#include "aoizora/sim/simulator.h"

namespace aoizora::sim {

namespace {
Error Fail(std::string message) {
  Error e;
  e.message = std::move(message);
  return e;
}
}  // namespace

Result<bool> check_inputs(const hlo::CollectiveGraph& graph, const topo::Topology& topology,
                          const place::Placement& placement) {
  const int n = graph.num_partitions;
  if (static_cast<int>(placement.device_of.size()) != n)
    return Fail("placement has " + std::to_string(placement.device_of.size()) +
                 " devices for a program of " + std::to_string(n) + " partitions");
  std::vector<char> used(topology.num_devices(), 0);
  for (int p = 0; p < n; ++p) {
    const int c = placement.device_of[p];
    if (c < 0 || c >= topology.num_devices())
      return Fail("placement maps partition " + std::to_string(p) + " to device " +
                   std::to_string(c) + ", but " + topology.name + " has devices 0.." +
                   std::to_string(topology.num_devices() - 1));
    if (used[c]++) return Fail("placement maps two partitions to device " + std::to_string(c));
  }
  for (const hlo::Collective& c : graph.collectives) {
    for (const auto& g : c.groups)
      for (int p : g)
        if (p < 0 || p >= n)
          return Fail("collective " + c.name + " names partition " + std::to_string(p) +
                       " outside 0.." + std::to_string(n - 1));
    for (auto [s, d] : c.source_target_pairs)
      if (s < 0 || s >= n || d < 0 || d >= n)
        return Fail("collective " + c.name + " has a source-target pair outside 0.." +
                     std::to_string(n - 1));
    if (c.region < 0 || c.region >= static_cast<int>(graph.regions.size()))
      return Fail("collective " + c.name + " names region " + std::to_string(c.region));
  }
  const int nc = static_cast<int>(graph.collectives.size());
  for (const hlo::Region& r : graph.regions)
    for (const hlo::ScheduledOp& op : r.ops) {
      if (op.kind != hlo::OpKind::kCompute && (op.collective < 0 || op.collective >= nc))
        return Fail("op " + op.name + " names collective " + std::to_string(op.collective));
      for (int c : op.collectives)
        if (c < 0 || c >= nc)
          return Fail("op " + op.name + " names collective " + std::to_string(c));
    }
  return true;
}

namespace {

// The profile's fixed latency of one execution of a collective of this kind.
double fixed_latency(const topo::CollectiveLatency& l, hlo::CollectiveKind kind) {
  using K = hlo::CollectiveKind;
  switch (kind) {
    case K::kAllGather: return l.all_gather;
    case K::kAllReduce: return l.all_reduce;
    case K::kReduceScatter: return l.reduce_scatter;
    case K::kAllToAll:
    case K::kRaggedAllToAll: return l.all_to_all;
    case K::kCollectivePermute: return l.collective_permute;
    case K::kCollectiveBroadcast: return l.collective_broadcast;
  }
  return 0;
}


constexpr double kInf = std::numeric_limits<double>::infinity();

// One flow of a collective's expansion, with its route resolved.
struct FlowSpec {
  int src = 0;       // chip
  int dst = 0;       // chip
  int src_member = 0;   // index of src in the group's members
  int dst_member = -1;  // index of dst in the group's members, -1 if outside the group
  int step = 0;
  double bytes = 0;
  int route = 0;     // index into Engine::routes_
  double latency = 0;
};

struct GroupPlan {
  std::vector<int> members;                   // chips
  int num_steps = 0;
  std::vector<std::vector<std::vector<int>>> out;  // [member][step] -> flow ids
  std::vector<std::vector<int>> in_count;     // [member][step]
  std::vector<std::vector<int>> out_count;    // [member][step]
  std::vector<int> member_flows;              // [member]: flows it sends or receives
  int num_flows = 0;
};

struct CollectivePlan {
  std::vector<int> group_of_partition;        // -1: not a participant
  std::vector<int> member_of_partition;       // its index in its group's members
  std::vector<GroupPlan> groups;
  std::vector<FlowSpec> flows;
  int label = 0;
  double overhead = 0;                        // fixed seconds before the first flow
};

struct Instance {
  int collective = 0;
  int group = 0;
  int arrived = 0;
  double last_arrival = -1;
  int last_arriver = -1;     // chip
  double t0 = -1;            // every member arrived
  std::vector<int> next_step;              // per member
  std::vector<std::vector<int>> pending;   // per member per step: undelivered inflows
  std::vector<std::vector<int>> unsent;    // per member per step: outflows not yet drained
  std::vector<int> member_left;            // per member: its flows not yet delivered
  std::vector<char> member_done;           // per member: its part is over
  int flows_left = 0;
  bool done = false;
  double end = 0;
  double weight = 1;
  std::vector<int> waiters;  // chips blocked on it
};

enum class SegKind : uint8_t { kCompute, kWait, kJump };

struct Segment {
  double start = 0;
  double end = 0;
  SegKind kind = SegKind::kCompute;
  int label = 0;      // op label for compute, instance id for waits
  double weight = 1;
};

// One loop a chip is executing: which iteration, and what steady-state extrapolation needs.
struct LoopFrame {
  int loop = 0;              // index into Engine::loops_
  int64_t trip = 1;
  int64_t iter = 0;          // the iteration being executed
  int64_t sim_iters = 1;     // iterations simulated for real
  double weight = 1;         // how many iterations the current one stands for
  double prev_end = 0;       // end of the previous iteration (or loop start)
  double prev_prev_end = 0;
  ChipTime iter_start_stats;
};

struct ChipState {
  int chip = 0;
  int partition = 0;
  int region = 0;
  int op = 0;
  std::vector<LoopFrame> loops;  // the loops being executed, outermost first
  double weight = 1;         // product of the loops' iteration weights
  ChipTime stats;
  std::vector<int> open;     // per collective: the instance of its last -start
  std::vector<int64_t> arrivals;  // per collective: executions begun so far
  bool finished = false;
  double finish = 0;
  bool computed = false;     // the current op's compute part has run
  double blocked_since = 0;
  int waiting = 0;           // instances still to complete before the chip may go on
  double blocked_t0 = 0;     // latest start among them
  std::vector<Segment> segments;
};

enum class EvKind : uint8_t { kResume, kStart, kDrained, kDeliver };

struct Event {
  double time;
  int64_t seq;
  EvKind kind;
  int a;  // chip or instance
  int b;  // flow id for deliveries
  bool operator>(const Event& o) const {
    return time != o.time ? time > o.time : seq > o.seq;
  }
};

struct ActiveFlow {
  int inst = 0;
  int flow = 0;
  double remaining = 0;
  double rate = 0;
};

class Engine {
 public:
  Engine(const hlo::CollectiveGraph& g, const topo::Topology& t, const place::Placement& p,
         const SimOptions& o, const FlowModel& m)
      : graph_(g), topo_(t), place_(p), opt_(o), model_(m),
        solver_(capacities(t)),
        plans_(g.collectives.size()),
        planned_(g.collectives.size(), 0),
        route_of_pair_(static_cast<size_t>(t.num_devices()) * t.num_devices(), -1) {
    partition_of_chip_.assign(t.num_devices(), -1);
    for (int p2 = 0; p2 < static_cast<int>(p.device_of.size()); ++p2)
      partition_of_chip_[p.device_of[p2]] = p2;
    loops_ = hlo::schedule_loops(g);
    loops_starting_at_.resize(g.regions.size());
    for (size_t l = 0; l < loops_.size(); ++l)
      if (loops_[l].first_region >= 0 && loops_[l].first_region < static_cast<int>(g.regions.size()))
        loops_starting_at_[loops_[l].first_region].push_back(static_cast<int>(l));
    op_labels_.resize(g.regions.size());
    for (size_t r = 0; r < g.regions.size(); ++r)
      for (const auto& op : g.regions[r].ops) op_labels_[r].push_back(label(op.name));
    result_.link_bytes.assign(t.links.size(), 0.0);
    link_load_.assign(t.links.size(), 0.0);
  }

  Result<SimResult> run();

 private:
  static std::vector<double> capacities(const topo::Topology& t) {
    std::vector<double> cap(t.links.size());
    for (size_t i = 0; i < t.links.size(); ++i)
      cap[i] = t.links[i].bandwidth > 0 ? t.links[i].bandwidth : t.spec.link_bandwidth;
    return cap;
  }
  int label(const std::string& name) {
    auto [it, fresh] = label_ids_.try_emplace(name, static_cast<int>(labels_.size()));
    if (fresh) labels_.push_back(name);
    return it->second;
  }
  void push(double time, EvKind kind, int a, int b = 0) {
    queue_.push(Event{time, seq_++, kind, a, b});
  }
  int route_id(int src, int dst);
  const CollectivePlan& plan(int c);
  void run_chip(int ci, double now);
  void enter_region(ChipState& s, int region, double now);
  void end_region(ChipState& s, double now);
  double end_iteration(ChipState& s, LoopFrame& f, double now);
  void update_weight(ChipState& s) const;
  Error deadlock() const;
  int arrive(ChipState& s, int coll, double now);
  void start_instance(int inst, double now);
  void release(int inst, int member, double now);
  void start_flow(int inst, int flow, double now);
  void drained(int inst, int flow, double now);
  void deliver(int inst, int flow, double now);
  void complete(int inst, double now);
  void member_complete(int inst, int member, double now);
  bool member_done(int inst, int chip_index) const;
  void solve_rates(double now);
  void critical_path();

  const hlo::CollectiveGraph& graph_;
  const topo::Topology& topo_;
  const place::Placement& place_;
  const SimOptions& opt_;
  const FlowModel& model_;
  MaxMinSolver solver_;

  std::vector<hlo::Loop> loops_;
  std::vector<std::vector<int>> loops_starting_at_;  // per region, outer loops first
  std::vector<CollectivePlan> plans_;
  std::vector<char> planned_;
  std::vector<int> route_of_pair_;
  std::vector<std::vector<int>> routes_;
  std::vector<int> partition_of_chip_;
  std::vector<std::vector<int>> op_labels_;
  std::vector<std::string> labels_;
  std::unordered_map<std::string, int> label_ids_;

  std::vector<ChipState> chips_;
  std::vector<Instance> instances_;
  // Instances some members have arrived at, by (collective, group, execution): every chip
  // walks the same loops, so a group's members agree on how often each collective ran.
  std::map<std::tuple<int, int, int64_t>, int> open_instances_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> queue_;
  int64_t seq_ = 0;

  std::vector<ActiveFlow> active_;
  bool flows_changed_ = false;
  std::vector<std::span<const int>> span_scratch_;
  std::vector<double> rate_scratch_;
  std::vector<double> link_load_;

  SimResult result_;
};

int Engine::route_id(int src, int dst) {
  int& id = route_of_pair_[static_cast<size_t>(src) * topo_.num_devices() + dst];
  if (id < 0) {
    id = static_cast<int>(routes_.size());
    routes_.push_back(src == dst ? std::vector<int>{} : model_.route(src, dst));
  }
  return id;
}

const CollectivePlan& Engine::plan(int ci) {
  CollectivePlan& cp = plans_[ci];
  if (planned_[ci]) return cp;
  planned_[ci] = 1;
  const hlo::Collective& c = graph_.collectives[ci];
  const int n = graph_.num_partitions;
  cp.label = label(c.name);
  cp.overhead = opt_.collective_overhead >= 0 ? opt_.collective_overhead
                                              : fixed_latency(topo_.spec.collective_latency, c.kind);
  cp.group_of_partition.assign(n, -1);
  cp.member_of_partition.assign(n, -1);
  std::vector<std::vector<int>> groups = c.groups;
  if (!c.source_target_pairs.empty()) {
    // A permute synchronises the partitions its pairs connect: connected components.
    std::vector<int> parent(n);
    for (int i = 0; i < n; ++i) parent[i] = i;
    auto find = [&](int x) {
      while (parent[x] != x) x = parent[x] = parent[parent[x]];
      return x;
    };
    std::vector<char> in(n, 0);
    for (auto [s, d] : c.source_target_pairs) {
      in[s] = in[d] = 1;
      parent[find(s)] = find(d);
    }
    std::map<int, std::vector<int>> comps;
    for (int i = 0; i < n; ++i)
      if (in[i]) comps[find(i)].push_back(i);
    groups.clear();
    for (auto& [root, members] : comps) groups.push_back(members);
    std::sort(groups.begin(), groups.end());
  } else if (groups.empty()) {
    groups.emplace_back();
    for (int i = 0; i < n; ++i) groups.back().push_back(i);
  }
  std::vector<int> member_of_chip(topo_.num_devices(), -1);
  for (size_t g = 0; g < groups.size(); ++g) {
    GroupPlan gp;
    for (int p : groups[g]) {
      cp.group_of_partition[p] = static_cast<int>(g);
      cp.member_of_partition[p] = static_cast<int>(gp.members.size());
      gp.members.push_back(place_.device_of[p]);
    }
    cp.groups.push_back(std::move(gp));
  }
  cost::CollectiveFlows cf = model_.expand(c);
  int num_steps = cf.num_steps;
  for (const cost::Flow& f : cf.flows) num_steps = std::max(num_steps, f.step + 1);
  for (GroupPlan& gp : cp.groups) {
    gp.num_steps = num_steps;
    gp.out.assign(gp.members.size(), std::vector<std::vector<int>>(num_steps));
    gp.in_count.assign(gp.members.size(), std::vector<int>(num_steps, 0));
    gp.out_count.assign(gp.members.size(), std::vector<int>(num_steps, 0));
    gp.member_flows.assign(gp.members.size(), 0);
  }
  for (const cost::Flow& f : cf.flows) {
    const int sp = partition_of_chip_[f.src];
    if (sp < 0 || cp.group_of_partition[sp] < 0) continue;  // not a participant: ignored
    GroupPlan& gp = cp.groups[cp.group_of_partition[sp]];
    FlowSpec fs;
    fs.src = f.src;
    fs.dst = f.dst;
    fs.step = f.step;
    fs.bytes = f.bytes;
    fs.route = route_id(f.src, f.dst);
    for (int l : routes_[fs.route]) {
      const double link_lat = topo_.links[l].latency > 0 ? topo_.links[l].latency
                                                         : topo_.spec.hop_latency;
      fs.latency += opt_.hop_latency >= 0 ? opt_.hop_latency : link_lat;
    }
    const auto src_it = std::find(gp.members.begin(), gp.members.end(), f.src);
    const auto dst_it = std::find(gp.members.begin(), gp.members.end(), f.dst);
    if (dst_it != gp.members.end()) {
      fs.dst_member = static_cast<int>(dst_it - gp.members.begin());
      ++gp.in_count[fs.dst_member][f.step];
    }
    fs.src_member = static_cast<int>(src_it - gp.members.begin());
    ++gp.member_flows[fs.src_member];
    if (fs.dst_member >= 0 && fs.dst_member != fs.src_member) ++gp.member_flows[fs.dst_member];
    const int id = static_cast<int>(cp.flows.size());
    cp.flows.push_back(fs);
    gp.out[fs.src_member][f.step].push_back(id);
    ++gp.out_count[fs.src_member][f.step];
    ++gp.num_flows;
  }
  return cp;
}

// Puts chip s at the first op of `region` at time `now`, entering the loops that begin there
// (those nested in the loop being executed, outermost first). A loop of no trips is skipped,
// and past the last region the chip has finished.
void Engine::enter_region(ChipState& s, int region, double now) {
  const int num_regions = static_cast<int>(graph_.regions.size());
  while (region < num_regions) {
    int skip_to = -1;
    for (int l : loops_starting_at_[region]) {
      const int top = s.loops.empty() ? -1 : s.loops.back().loop;
      if (loops_[l].parent != top) continue;
      if (loops_[l].trip_count <= 0) {
        skip_to = loops_[l].last_region + 1;
        break;
      }
      LoopFrame f;
      f.loop = l;
      f.trip = loops_[l].trip_count;
      f.sim_iters = (opt_.max_iterations <= 0 || f.trip <= opt_.max_iterations)
                        ? f.trip : opt_.max_iterations;
      f.weight = f.sim_iters == 1 && f.trip > 1 ? static_cast<double>(f.trip) : 1.0;
      f.prev_end = f.prev_prev_end = now;
      f.iter_start_stats = s.stats;
      s.loops.push_back(f);
    }
    if (skip_to < 0) break;
    region = skip_to;
  }
  update_weight(s);
  s.region = region;
  s.op = 0;
  if (region >= num_regions) {
    s.finished = true;
    s.finish = now;
  }
}

void Engine::update_weight(ChipState& s) const {
  s.weight = 1;
  for (const LoopFrame& f : s.loops) s.weight *= f.weight;
}

// Ends the current iteration of loop frame f at `now`; returns when the chip goes on (later
// than `now` when the rest of the loop is extrapolated at the period of its last iteration).
double Engine::end_iteration(ChipState& s, LoopFrame& f, double now) {
  f.prev_prev_end = f.prev_end;
  f.prev_end = now;
  ++f.iter;
  double resume = now;
  if (f.iter == f.sim_iters && f.trip > f.sim_iters) {
    const double skipped = static_cast<double>(f.trip - f.sim_iters);
    const double period = f.prev_end - f.prev_prev_end;
    s.stats.compute += skipped * (s.stats.compute - f.iter_start_stats.compute);
    s.stats.comm += skipped * (s.stats.comm - f.iter_start_stats.comm);
    s.stats.idle += skipped * (s.stats.idle - f.iter_start_stats.idle);
    resume = now + skipped * period;
    if (resume > now) s.segments.push_back({now, resume, SegKind::kJump, f.loop, 1.0});
    result_.extrapolated = true;
    f.iter = f.trip;
  }
  if (f.iter < f.trip) {
    f.iter_start_stats = s.stats;
    f.weight = (f.iter == f.sim_iters - 1 && f.trip > f.sim_iters)
                   ? static_cast<double>(f.trip - f.sim_iters + 1) : 1.0;
  }
  return resume;
}

// Called when chip s has run every op of its region at `now`: ends the iterations of the
// loops whose body ends here (innermost first), and goes back to a loop's first region or
// on to the next region. A chip whose next op lies after an extrapolated span is parked
// (op -1) until a resume event at its end.
void Engine::end_region(ChipState& s, double now) {
  double t = now;
  int next = s.region + 1;
  while (!s.loops.empty() && loops_[s.loops.back().loop].last_region == s.region) {
    LoopFrame& f = s.loops.back();
    t = end_iteration(s, f, t);
    if (f.iter < f.trip) {
      next = loops_[f.loop].first_region;
      break;
    }
    s.loops.pop_back();
  }
  enter_region(s, next, t);
  if (s.finished || t <= now) return;
  push(t, EvKind::kResume, static_cast<int>(&s - chips_.data()));
  s.op = -1;  // parked until the resume event
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
      push(now, EvKind::kResume, ci);  // s.computed stays set: resume at the collective part
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
    push(now + cp.overhead, EvKind::kStart, id);
  }
  return id;
}

void Engine::start_instance(int id, double now) {
  ++result_.collectives;
  Instance& in = instances_[id];
  const GroupPlan& gp = plans_[in.collective].groups[in.group];
  in.flows_left = gp.num_flows;
  in.next_step.assign(gp.members.size(), 0);
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
  for (size_t m = 0; m < gp.members.size(); ++m) release(id, static_cast<int>(m), now);
}

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
  const std::vector<int>& links = routes_[fs.route];
  ++result_.flows;
  const double w = instances_[id].weight;
  for (int l : links) result_.link_bytes[l] += fs.bytes * w;
  if (links.empty() || fs.bytes <= 0) {
    push(now, EvKind::kDrained, id, f);
    push(now + fs.latency, EvKind::kDeliver, id, f);
    return;
  }
  active_.push_back(ActiveFlow{id, f, fs.bytes, 0});
  flows_changed_ = true;
}

// The flow's bytes have left its sender.
void Engine::drained(int id, int f, double now) {
  const FlowSpec& fs = plans_[instances_[id].collective].flows[f];
  if (--instances_[id].unsent[fs.src_member][fs.step] == 0 && opt_.steps_wait_for_sends)
    release(id, fs.src_member, now);
}

void Engine::deliver(int id, int f, double now) {
  const FlowSpec& fs = plans_[instances_[id].collective].flows[f];
  Instance& in = instances_[id];
  --in.flows_left;
  if (fs.dst_member >= 0 && --in.pending[fs.dst_member][fs.step] == 0)
    release(id, fs.dst_member, now);
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
    push(now, EvKind::kResume, ci);
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

void Engine::solve_rates(double now) {
  span_scratch_.clear();
  for (const ActiveFlow& a : active_)
    span_scratch_.push_back(routes_[plans_[instances_[a.inst].collective].flows[a.flow].route]);
  solver_.solve(span_scratch_, rate_scratch_);
  for (size_t i = 0; i < active_.size(); ++i) active_[i].rate = rate_scratch_[i];
  if (!opt_.record_timeline) return;
  std::vector<double> load(topo_.links.size(), 0.0);
  for (size_t i = 0; i < active_.size(); ++i)
    for (int l : span_scratch_[i]) load[l] += active_[i].rate;
  for (size_t l = 0; l < load.size(); ++l)
    if (load[l] != link_load_[l]) {
      result_.timeline.links.push_back({static_cast<int>(l), now, load[l]});
      link_load_[l] = load[l];
    }
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
    enter_region(s, 0, 0.0);
    if (!s.finished) push(0.0, EvKind::kResume, p);
  }

  double last = 0;  // time active flows were last advanced to
  std::vector<ActiveFlow> finished;
  while (true) {
    double t_flow = kInf;
    for (const ActiveFlow& a : active_)
      if (a.rate > 0) t_flow = std::min(t_flow, last + a.remaining / a.rate);
    const double t_event = queue_.empty() ? kInf : queue_.top().time;
    const double t = std::min(t_flow, t_event);
    if (t == kInf) break;
    // Advance every active flow to t; those (all but) drained are done.
    const double dt = t - last;
    const double tol = 1e-12 * std::max(t, 1e-9);
    finished.clear();
    size_t keep = 0;
    for (size_t i = 0; i < active_.size(); ++i) {
      ActiveFlow a = active_[i];
      a.remaining -= a.rate * dt;
      if (a.remaining <= 0 || (a.rate > 0 && a.remaining / a.rate <= tol))
        finished.push_back(a);
      else
        active_[keep++] = a;
    }
    active_.resize(keep);
    last = t;
    for (const ActiveFlow& a : finished) {
      ++result_.events;
      flows_changed_ = true;
      const FlowSpec& fs = plans_[instances_[a.inst].collective].flows[a.flow];
      push(t + fs.latency, EvKind::kDeliver, a.inst, a.flow);
      drained(a.inst, a.flow, t);
    }
    while (!queue_.empty() && queue_.top().time <= t) {
      const Event e = queue_.top();
      queue_.pop();
      ++result_.events;
      switch (e.kind) {
        case EvKind::kResume: run_chip(e.a, e.time); break;
        case EvKind::kStart: start_instance(e.a, e.time); break;
        case EvKind::kDrained: drained(e.a, e.b, e.time); break;
        case EvKind::kDeliver: deliver(e.a, e.b, e.time); break;
      }
    }
    if (flows_changed_) {
      solve_rates(t);
      flows_changed_ = false;
    }
  }

  for (const ChipState& s : chips_)
    if (!s.finished) return deadlock();

  // Results.
  result_.chips.assign(topo_.num_devices(), ChipTime{});
  double step = 0;
  for (const ChipState& s : chips_) step = std::max(step, s.finish);
  result_.step_seconds = step;
  for (int c = 0; c < topo_.num_devices(); ++c) result_.chips[c].idle = step;
  for (const ChipState& s : chips_) {
    ChipTime t = s.stats;
    t.idle += step - s.finish;
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
  const std::vector<double>& cap = solver_.capacity();
  for (size_t l = 0; l < topo_.links.size(); ++l)
    if (step > 0 && cap[l] > 0) result_.link_utilization[l] = result_.link_bytes[l] / (cap[l] * step);
  critical_path();
  if (opt_.record_timeline) {
    Timeline& tl = result_.timeline;
    tl.labels = labels_;
    for (const ChipState& s : chips_)
      for (const Segment& seg : s.segments) {
        if (seg.kind == SegKind::kCompute) {
          tl.slices.push_back({s.chip, seg.start, seg.end, SliceKind::kCompute, seg.label});
        } else if (seg.kind == SegKind::kJump) {
          tl.slices.push_back({s.chip, seg.start, seg.end, SliceKind::kExtrapolated,
                               label(loops_[seg.label].name)});
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
    tl.labels = labels_;  // the extrapolation labels may have added names
  }
  return std::move(result_);
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
    return Error{"simulated deadlock: partition " + std::to_string(s.partition) + " (chip " +
                 std::to_string(s.chip) + ") never finished; it waits at " + where + " on " +
                 what, "", 0, 0};
  }
  return Error{"simulated deadlock", "", 0, 0};
}

// Walks back from the last chip to finish: through its compute ops, and through each wait
// into the collective's communication or, when the group started late, to the member that
// arrived last. Extrapolated spans are covered by the weights of the last real iteration.
void Engine::critical_path() {
  if (chips_.empty()) return;
  int ci = 0;
  for (int i = 1; i < static_cast<int>(chips_.size()); ++i)
    if (chips_[i].finish > chips_[ci].finish) ci = i;
  std::vector<int> chip_index(topo_.num_devices(), -1);
  for (int i = 0; i < static_cast<int>(chips_.size()); ++i) chip_index[chips_[i].chip] = i;
  std::vector<double> by_label(labels_.size() + 1, 0.0);
  std::vector<std::string> kind_of(labels_.size() + 1, "compute");
  double t = chips_[ci].finish;
  double total = 0;
  for (int64_t guard = 0; t > 0 && guard < 100000000; ++guard) {
    const std::vector<Segment>& segs = chips_[ci].segments;
    // The last segment that starts before t.
    auto it = std::lower_bound(segs.begin(), segs.end(), t,
                               [](const Segment& s, double v) { return s.start < v; });
    if (it == segs.begin()) break;
    const Segment& seg = *(it - 1);
    const double end = std::min(seg.end, t);
    if (seg.kind == SegKind::kCompute) {
      by_label[seg.label] += (end - seg.start) * seg.weight;
      total += (end - seg.start) * seg.weight;
      t = seg.start;
    } else if (seg.kind == SegKind::kJump) {
      t = seg.start;
    } else {
      const Instance& in = instances_[seg.label];
      const int lab = plans_[in.collective].label;
      kind_of[lab] = std::string(hlo::to_string(graph_.collectives[in.collective].kind));
      const double comm = std::max(0.0, end - std::max(seg.start, in.t0));
      by_label[lab] += comm * seg.weight;
      total += comm * seg.weight;
      if (in.t0 > seg.start && in.last_arriver >= 0 && chip_index[in.last_arriver] != ci) {
        ci = chip_index[in.last_arriver];
        t = in.t0;
      } else {
        t = seg.start;
      }
    }
  }
  result_.critical_path_seconds = total;
  std::vector<Contributor> all;
  for (size_t l = 0; l < labels_.size(); ++l)
    if (by_label[l] > 0) all.push_back({labels_[l], kind_of[l], by_label[l]});
  std::stable_sort(all.begin(), all.end(), [](const Contributor& a, const Contributor& b) {
    return a.seconds != b.seconds ? a.seconds > b.seconds : a.name < b.name;
  });
  if (opt_.top_contributors >= 0 && static_cast<int>(all.size()) > opt_.top_contributors)
    all.resize(opt_.top_contributors);
  result_.critical_path = std::move(all);
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
