#include "aoizora/sim/collective_lowering.h"

#include <algorithm>
#include <map>

namespace aoizora::sim {

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

// The groups that synchronise: the collective's own, a permute's connected components of
// its pairs (sorted), or every partition when it names none.
std::vector<std::vector<int>> sync_groups(const hlo::Collective& c, int n) {
  if (c.source_target_pairs.empty()) {
    if (!c.groups.empty()) return c.groups;
    std::vector<std::vector<int>> all(1);
    for (int i = 0; i < n; ++i) all.back().push_back(i);
    return all;
  }
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
  std::vector<std::vector<int>> groups;
  for (auto& [root, members] : comps) groups.push_back(members);
  std::sort(groups.begin(), groups.end());
  return groups;
}

}  // namespace

int RouteTable::id(int src, int dst) {
  int& id = id_of_pair_[static_cast<size_t>(src) * num_devices_ + dst];
  if (id < 0) {
    id = static_cast<int>(routes_.size());
    routes_.push_back(src == dst ? std::vector<int>{} : route_(src, dst));
  }
  return id;
}

CollectivePlan lower_collective(const hlo::Collective& c, int n,
                                const std::vector<int>& device_of,
                                const std::vector<int>& partition_of_chip,
                                const topo::Topology& topology, const SimOptions& options,
                                const FlowModel& model, RouteTable& routes) {
  CollectivePlan cp;
  cp.overhead = options.collective_overhead >= 0
                    ? options.collective_overhead
                    : fixed_latency(topology.spec.collective_latency, c.kind);
  cp.group_of_partition.assign(n, -1);
  cp.member_of_partition.assign(n, -1);
  const std::vector<std::vector<int>> groups = sync_groups(c, n);
  for (size_t g = 0; g < groups.size(); ++g) {
    GroupPlan gp;
    for (int p : groups[g]) {
      cp.group_of_partition[p] = static_cast<int>(g);
      cp.member_of_partition[p] = static_cast<int>(gp.members.size());
      gp.members.push_back(device_of[p]);
    }
    cp.groups.push_back(std::move(gp));
  }
  cost::CollectiveFlows cf = model.expand(c);
  int num_steps = cf.num_steps, lanes = 1;
  for (const cost::Flow& f : cf.flows) {
    num_steps = std::max(num_steps, f.step + 1);
    lanes = std::max(lanes, f.lane + 1);
  }
  for (GroupPlan& gp : cp.groups) {
    gp.num_steps = num_steps;
    gp.lanes = lanes;
    const size_t tracks = gp.members.size() * static_cast<size_t>(lanes);
    gp.out.assign(tracks, std::vector<std::vector<int>>(num_steps));
    gp.in_count.assign(tracks, std::vector<int>(num_steps, 0));
    gp.out_count.assign(tracks, std::vector<int>(num_steps, 0));
    gp.member_flows.assign(gp.members.size(), 0);
  }
  for (const cost::Flow& f : cf.flows) {
    const int sp = partition_of_chip[f.src];
    if (sp < 0 || cp.group_of_partition[sp] < 0) continue;  // not a participant: ignored
    GroupPlan& gp = cp.groups[cp.group_of_partition[sp]];
    FlowSpec fs;
    fs.src = f.src;
    fs.dst = f.dst;
    fs.step = f.step;
    fs.bytes = f.bytes;
    fs.route = routes.id(f.src, f.dst);
    for (int l : routes.links(fs.route)) {
      const double link_lat = topology.links[l].latency > 0 ? topology.links[l].latency
                                                            : topology.spec.hop_latency;
      fs.latency += options.hop_latency >= 0 ? options.hop_latency : link_lat;
    }
    const auto src_it = std::find(gp.members.begin(), gp.members.end(), f.src);
    const auto dst_it = std::find(gp.members.begin(), gp.members.end(), f.dst);
    if (dst_it != gp.members.end()) {
      fs.dst_member = static_cast<int>(dst_it - gp.members.begin());
      fs.dst_track = fs.dst_member * gp.lanes + f.lane;
      ++gp.in_count[fs.dst_track][f.step];
    }
    fs.src_member = static_cast<int>(src_it - gp.members.begin());
    fs.src_track = fs.src_member * gp.lanes + f.lane;
    ++gp.member_flows[fs.src_member];
    if (fs.dst_member >= 0 && fs.dst_member != fs.src_member) ++gp.member_flows[fs.dst_member];
    const int id = static_cast<int>(cp.flows.size());
    cp.flows.push_back(fs);
    gp.out[fs.src_track][f.step].push_back(id);
    ++gp.out_count[fs.src_track][f.step];
    ++gp.num_flows;
  }
  return cp;
}

}  // namespace aoizora::sim
