#include "aoizora/cost/best_group.h"

#include <algorithm>
#include <array>
#include <vector>


namespace aoizora::cost {

namespace {

using Box = topo::DeviceCoords;  // extents or an origin over device axes (x, y, z, core)

// Every box extent that tiles the slice's devices with groups of k devices, along the core
// axis as `core` allows.
std::vector<Box> tiling_boxes(const topo::Topology& t, int k, CoreAxis core) {
  const Box dims = t.device_dims();
  std::vector<Box> out;
  auto core_ok = [&](int e) {
    return core == CoreAxis::kAny || (core == CoreAxis::kSpans ? e == dims[3] : e == 1);
  };
  for (int a = 1; a <= dims[0]; ++a)
    for (int b = 1; b <= dims[1]; ++b)
      for (int c = 1; c <= dims[2]; ++c)
        for (int e = 1; e <= dims[3]; ++e)
          if (a * b * c * e == k && dims[0] % a == 0 && dims[1] % b == 0 && dims[2] % c == 0 &&
              dims[3] % e == 0 && core_ok(e))
            out.push_back({a, b, c, e});
  return out;
}

// Offsets of a box's cells over `axes`, each step one unit along one axis (a boustrophedon).
std::vector<Box> snake(const std::vector<int>& axes, const Box& ext) {
  std::vector<Box> path{{0, 0, 0, 0}};
  for (int a : axes) {
    std::vector<Box> next;
    for (int j = 0; j < ext[static_cast<size_t>(a)]; ++j)
      for (size_t i = 0; i < path.size(); ++i) {
        Box c = path[j % 2 == 0 ? i : path.size() - 1 - i];
        c[static_cast<size_t>(a)] = j;
        next.push_back(c);
      }
    path = std::move(next);
  }
  return path;
}

// The devices of the box at `origin` in an order whose consecutive devices (and last-to-first)
// are neighbours where the box allows. The box is a u x R grid: u its first long axis, R the
// snake through the other long axes (a path). Row 0 of R goes out along u, the rest of the
// grid snakes back column by column: a Hamiltonian cycle when the extent along u is even.
std::vector<int> cycle_order(const topo::Topology& t, const Box& ext, const Box& origin) {
  std::vector<int> axes;
  for (int d = 0; d < topo::kDeviceAxes; ++d)
    if (ext[static_cast<size_t>(d)] > 1) axes.push_back(d);
  std::vector<Box> cells;
  if (axes.size() < 2) {
    cells = snake(axes, ext);
  } else {
    const size_t u = static_cast<size_t>(axes[0]);
    const std::vector<Box> rest = snake({axes.begin() + 1, axes.end()}, ext);
    auto cell = [&](int i, const Box& r) {
      Box p = r;
      p[u] = i;
      return p;
    };
    for (int i = 0; i < ext[u]; ++i) cells.push_back(cell(i, rest[0]));
    for (int i = ext[u] - 1; i >= 0; --i) {
      const bool up = (ext[u] - 1 - i) % 2 == 0;
      for (size_t j = 1; j < rest.size(); ++j) cells.push_back(cell(i, rest[up ? j : rest.size() - j]));
    }
  }
  std::vector<int> devices;
  for (Box p : cells) {
    for (size_t d = 0; d < p.size(); ++d) p[d] += origin[d];
    devices.push_back(t.device_at(p));
  }
  return devices;
}

}  // namespace

const GroupCost& BestGroupCosts::get(hlo::CollectiveKind kind, int k, CoreAxis core) {
  if (topo_.cores_per_chip() < 2 || !topo_.is_grid() || tiling_boxes(topo_, k, core).empty())
    core = CoreAxis::kAny;
  auto key = std::make_tuple(static_cast<int>(kind), k, static_cast<int>(core));
  auto it = memo_.find(key);
  if (it == memo_.end()) it = memo_.emplace(key, compute(kind, k, core)).first;
  return it->second;
}

GroupCost BestGroupCosts::compute(hlo::CollectiveKind kind, int k, CoreAxis core) const {
  GroupCost best;
  const int n = topo_.num_devices();
  if (k < 2 && kind != hlo::CollectiveKind::kCollectivePermute) {
    best.seconds_per_byte = 0;
    return best;
  }
  std::vector<Box> boxes = topo_.is_grid() ? tiling_boxes(topo_, k, core) : std::vector<Box>{};
  std::vector<std::vector<std::vector<int>>> groupings;
  for (const Box& ext : boxes) {
    const Box dims = topo_.device_dims();
    std::vector<std::vector<int>> groups;
    for (int c = 0; c < dims[3]; c += ext[3])
      for (int z = 0; z < dims[2]; z += ext[2])
        for (int y = 0; y < dims[1]; y += ext[1])
          for (int x = 0; x < dims[0]; x += ext[0])
            groups.push_back(cycle_order(topo_, ext, {x, y, z, c}));
    groupings.push_back(std::move(groups));
  }
  if (groupings.empty() && k >= 1 && k <= n) {
    // No box tiles the slice (or it is not a grid): consecutive device ids, as a routed ring.
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
    const GroupCost g = price_collective(c, identity, topo_, loads);
    if (g < best) best = g;
  }
  return best;
}

}  // namespace aoizora::cost
