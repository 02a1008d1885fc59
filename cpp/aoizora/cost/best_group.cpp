#include "aoizora/cost/best_group.h"

#include <algorithm>
#include <array>
#include <vector>

#include "aoizora/cost/algorithm.h"
#include "aoizora/cost/phase_load.h"

namespace aoizora::cost {

namespace {

using Box = std::array<int, 3>;

// Every box extent that tiles the slice with groups of k chips.
std::vector<Box> tiling_boxes(const topo::Topology& t, int k) {
  std::vector<Box> out;
  for (int a = 1; a <= t.dims[0]; ++a)
    for (int b = 1; b <= t.dims[1]; ++b)
      for (int c = 1; c <= t.dims[2]; ++c)
        if (a * b * c == k && t.dims[0] % a == 0 && t.dims[1] % b == 0 && t.dims[2] % c == 0)
          out.push_back({a, b, c});
  return out;
}

// The chips of the box at `origin` in an order whose consecutive chips (and last-to-first)
// are neighbours where the box allows: along the first long axis out, back along the others
// in a snake. That is a Hamiltonian cycle when the first long axis has an even extent.
std::vector<int> cycle_order(const topo::Topology& t, const Box& ext, const Box& origin) {
  std::vector<int> axes;
  for (int d = 0; d < 3; ++d)
    if (ext[d] > 1) axes.push_back(d);
  std::vector<Box> cells;
  if (axes.size() < 2) {
    const int d = axes.empty() ? 0 : axes[0];
    for (int i = 0; i < ext[d]; ++i) {
      Box p = origin;
      p[d] += i;
      cells.push_back(p);
    }
  } else {
    // Row 0 of axis v out along axis u, then the rest of the box snaking back column by column.
    const int u = axes[0], v = axes[1];
    const int w = axes.size() > 2 ? axes[2] : -1;
    const int layers = w >= 0 ? ext[w] : 1;
    for (int l = 0; l < layers; ++l) {
      Box base = origin;
      if (w >= 0) base[w] += l;
      for (int i = 0; i < ext[u]; ++i) {
        Box p = base;
        p[u] += i;
        if (l % 2) p[u] = origin[u] + ext[u] - 1 - i;
        cells.push_back(p);
      }
      for (int i = ext[u] - 1; i >= 0; --i) {
        const int col = l % 2 ? ext[u] - 1 - i : i;
        const bool up = (ext[u] - 1 - i) % 2 == 0;
        for (int j = 1; j < ext[v]; ++j) {
          Box p = base;
          p[u] += col;
          p[v] += up ? j : ext[v] - j;
          cells.push_back(p);
        }
      }
    }
  }
  std::vector<int> chips;
  for (const Box& p : cells) chips.push_back(t.chip_at(p));
  return chips;
}

}  // namespace

const GroupCost& BestGroupCosts::get(hlo::CollectiveKind kind, int k) {
  auto key = std::make_pair(static_cast<int>(kind), k);
  auto it = memo_.find(key);
  if (it == memo_.end()) it = memo_.emplace(key, compute(kind, k)).first;
  return it->second;
}

GroupCost BestGroupCosts::compute(hlo::CollectiveKind kind, int k) const {
  GroupCost best;
  const int n = topo_.num_chips();
  if (k < 2 && kind != hlo::CollectiveKind::kCollectivePermute) {
    best.seconds_per_byte = 0;
    return best;
  }
  std::vector<Box> boxes = topo_.is_grid() ? tiling_boxes(topo_, k) : std::vector<Box>{};
  std::vector<std::vector<std::vector<int>>> groupings;
  for (const Box& ext : boxes) {
    std::vector<std::vector<int>> groups;
    for (int z = 0; z < topo_.dims[2]; z += ext[2])
      for (int y = 0; y < topo_.dims[1]; y += ext[1])
        for (int x = 0; x < topo_.dims[0]; x += ext[0])
          groups.push_back(cycle_order(topo_, ext, {x, y, z}));
    groupings.push_back(std::move(groups));
  }
  if (groupings.empty() && k >= 1 && k <= n) {
    // No box tiles the slice (or it is not a grid): consecutive chip ids, as a routed ring.
    std::vector<std::vector<int>> groups;
    for (int s = 0; s + k <= n; s += k) {
      groups.emplace_back();
      for (int i = s; i < s + k; ++i) groups.back().push_back(i);
    }
    groupings.push_back(std::move(groups));
  }
  std::vector<int> identity(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) identity[static_cast<size_t>(i)] = i;
  // Phases of an algorithm (a line phase of a grid collective, the scatter and gather halves
  // of an all-reduce) run one after another, so each is charged its own busiest link.
  PhaseLoads loads(topo_);
  for (const auto& groups : groupings) {
    hlo::Collective c;
    c.kind = kind;
    if (kind == hlo::CollectiveKind::kCollectivePermute) {
      for (const auto& g : groups)
        for (size_t i = 0; i < g.size(); ++i)
          c.source_target_pairs.emplace_back(g[i], g[(i + 1) % g.size()]);
    } else {
      c.groups = groups;
    }
    loads.clear();
    double route_latency = 0;
    const int steps = generate_flows(
        c, identity, topo_, 1.0, /*aggregate=*/true,
        [&](int src, int dst, double bytes, int first_step, int) {
          const int s = loads.slot(first_step);
          double lat = 0;
          topo_.for_each_route_link(src, dst, [&](int l) {
            loads.add(s, l, bytes);
            lat += topo_.links[static_cast<size_t>(l)].latency;
          });
          route_latency = std::max(route_latency, lat);
        });
    GroupCost g;
    g.seconds_per_byte = loads.serial_seconds();
    g.latency = steps * route_latency;
    if (g.seconds_per_byte < best.seconds_per_byte ||
        (g.seconds_per_byte == best.seconds_per_byte && g.latency < best.latency))
      best = g;
  }
  return best;
}

}  // namespace aoizora::cost
