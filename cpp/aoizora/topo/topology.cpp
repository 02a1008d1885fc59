#include "aoizora/topo/topology.h"

#include <algorithm>
#include <deque>
#include <utility>

namespace aoizora::topo {

Topology::Topology(const Topology& other)
    : name(other.name),
      dims(other.dims),
      wrap(other.wrap),
      spec(other.spec),
      chips(other.chips),
      links(other.links),
      is_grid_(other.is_grid_),
      step_(other.step_),
      coord_index_(other.coord_index_),
      out_links_(other.out_links_),
      core_link_(other.core_link_) {}

Topology::Topology(Topology&& other) noexcept
    : name(std::move(other.name)),
      dims(other.dims),
      wrap(other.wrap),
      spec(std::move(other.spec)),
      chips(std::move(other.chips)),
      links(std::move(other.links)),
      is_grid_(other.is_grid_),
      step_(std::move(other.step_)),
      coord_index_(std::move(other.coord_index_)),
      out_links_(std::move(other.out_links_)),
      core_link_(std::move(other.core_link_)) {}

Topology& Topology::operator=(const Topology& other) {
  if (this == &other) return *this;
  Topology copy(other);
  *this = std::move(copy);
  return *this;
}

Topology& Topology::operator=(Topology&& other) noexcept {
  if (this == &other) return *this;
  name = std::move(other.name);
  dims = other.dims;
  wrap = other.wrap;
  spec = std::move(other.spec);
  chips = std::move(other.chips);
  links = std::move(other.links);
  is_grid_ = other.is_grid_;
  step_ = std::move(other.step_);
  coord_index_ = std::move(other.coord_index_);
  out_links_ = std::move(other.out_links_);
  core_link_ = std::move(other.core_link_);
  std::lock_guard<std::mutex> lock(route_mu_);
  route_cache_.clear();
  return *this;
}

void Topology::reindex() {
  const size_t n = chips.size();
  coord_index_.assign(static_cast<size_t>(dims[0]) * dims[1] * dims[2], -1);
  for (const Chip& c : chips) {
    bool inside = true;
    for (int d = 0; d < 3; ++d) inside = inside && c.coords[d] >= 0 && c.coords[d] < dims[d];
    if (inside)
      coord_index_[static_cast<size_t>(c.coords[0] + dims[0] * (c.coords[1] + dims[1] * c.coords[2]))] =
          c.id;
  }
  out_links_.assign(n, {});
  step_.assign(n * 6, -1);
  core_link_.assign(n * 2, -1);
  is_grid_ = !chips.empty();
  for (const Link& l : links) {
    if (l.dim == kCoreAxis) {
      core_link_[static_cast<size_t>(l.src) * 2 + (l.dir > 0 ? 0 : 1)] = l.id;
      continue;
    }
    out_links_[static_cast<size_t>(l.src)].push_back(l.id);
    if (l.dim < 0 || l.dim > 2 || (l.dir != 1 && l.dir != -1)) {
      is_grid_ = false;
      continue;
    }
    step_[static_cast<size_t>(l.src) * 6 + static_cast<size_t>(l.dim * 2 + (l.dir > 0 ? 0 : 1))] = l.id;
  }
  std::lock_guard<std::mutex> lock(route_mu_);
  route_cache_.clear();
}

int Topology::chip_at(std::array<int, 3> coords) const {
  for (int d = 0; d < 3; ++d)
    if (coords[d] < 0 || coords[d] >= dims[d]) return -1;
  const size_t i = static_cast<size_t>(coords[0] + dims[0] * (coords[1] + dims[1] * coords[2]));
  if (i < coord_index_.size()) return coord_index_[i];
  for (const Chip& c : chips)
    if (c.coords == coords) return c.id;
  return -1;
}

DeviceCoords Topology::device_coords(int device) const {
  const std::array<int, 3>& c = chips[static_cast<size_t>(chip_of_device(device))].coords;
  return {c[0], c[1], c[2], core_of_device(device)};
}

int Topology::device_at(const DeviceCoords& c) const {
  if (c[3] < 0 || c[3] >= cores_per_chip()) return -1;
  const int chip = chip_at({c[0], c[1], c[2]});
  return chip < 0 ? -1 : device_on(chip, c[3]);
}

int Topology::core_link(int chip, int from_core) const {
  const size_t i = static_cast<size_t>(chip) * 2 + static_cast<size_t>(from_core);
  return chip >= 0 && from_core >= 0 && from_core < 2 && i < core_link_.size() ? core_link_[i] : -1;
}

void Topology::add_core_links() {
  if (spec.cores_per_chip < 2 || !spec.intra_chip_link) return;
  for (const Chip& c : chips)
    for (int dir : {+1, -1}) {
      Link l;
      l.id = num_links();
      l.src = l.dst = c.id;
      l.dim = kCoreAxis;
      l.dir = dir;
      l.bandwidth = spec.intra_chip_link->bandwidth;
      l.latency = spec.intra_chip_link->latency;
      links.push_back(l);
    }
}

int Topology::link_between(int a, int b) const {
  if (a < 0 || a >= num_chips() || static_cast<size_t>(a) >= out_links_.size()) return -1;
  for (int l : out_links_[static_cast<size_t>(a)])
    if (links[static_cast<size_t>(l)].dst == b) return l;
  return -1;
}

std::vector<int> Topology::bfs_route(int src, int dst) const {
  // Fewest hops; links are visited in id order, so ties resolve to the lower link id.
  std::vector<int> via(chips.size(), -1);
  std::vector<char> seen(chips.size(), 0);
  std::deque<int> queue{src};
  seen[static_cast<size_t>(src)] = 1;
  while (!queue.empty() && !seen[static_cast<size_t>(dst)]) {
    const int c = queue.front();
    queue.pop_front();
    for (int l : out_links_[static_cast<size_t>(c)]) {
      const int n = links[static_cast<size_t>(l)].dst;
      if (seen[static_cast<size_t>(n)]) continue;
      seen[static_cast<size_t>(n)] = 1;
      via[static_cast<size_t>(n)] = l;
      queue.push_back(n);
    }
  }
  std::vector<int> path;
  if (!seen[static_cast<size_t>(dst)]) return path;  // unreachable: empty route
  for (int c = dst; c != src; c = links[static_cast<size_t>(via[static_cast<size_t>(c)])].src)
    path.push_back(via[static_cast<size_t>(c)]);
  std::reverse(path.begin(), path.end());
  return path;
}

std::span<const int> Topology::route(int src, int dst) const {
  if (src == dst) return {};
  const int64_t key = static_cast<int64_t>(src) * num_devices() + dst;
  {
    std::lock_guard<std::mutex> lock(route_mu_);
    auto it = route_cache_.find(key);
    if (it != route_cache_.end()) return it->second;
  }
  std::vector<int> path;
  if (is_grid_) {
    for_each_route_link(src, dst, [&](int l) { path.push_back(l); });
  } else if (chip_of_device(src) == chip_of_device(dst)) {
    path.push_back(core_link(chip_of_device(src), core_of_device(src)));
  } else {
    path = bfs_route(chip_of_device(src), chip_of_device(dst));
  }
  std::lock_guard<std::mutex> lock(route_mu_);
  // unordered_map never moves its nodes, so the span stays valid until reindex().
  auto [it, inserted] = route_cache_.emplace(key, std::move(path));
  (void)inserted;
  return it->second;
}

int Topology::hops(int src, int dst) const {
  if (!is_grid_) return static_cast<int>(route(src, dst).size());
  if (src == dst) return 0;
  src = chip_of_device(src);
  dst = chip_of_device(dst);
  if (src == dst) return 1;  // the intra-chip link
  int h = 0;
  const auto& a = chips[static_cast<size_t>(src)].coords;
  const auto& b = chips[static_cast<size_t>(dst)].coords;
  for (int d = 0; d < 3; ++d) {
    int diff = a[d] > b[d] ? a[d] - b[d] : b[d] - a[d];
    if (wrap[d] && dims[d] > 2) diff = std::min(diff, dims[d] - diff);
    h += diff;
  }
  return h;
}

Topology Topology::grid(std::string name, std::array<int, 3> dims, std::array<bool, 3> wrap,
                        ChipSpec spec) {
  Topology t;
  t.name = std::move(name);
  t.dims = dims;
  for (int d = 0; d < 3; ++d) t.wrap[d] = wrap[d] && dims[d] > 2;
  t.spec = std::move(spec);
  const int n = dims[0] * dims[1] * dims[2];
  t.chips.reserve(static_cast<size_t>(n));
  for (int z = 0; z < dims[2]; ++z)
    for (int y = 0; y < dims[1]; ++y)
      for (int x = 0; x < dims[0]; ++x)
        t.chips.push_back(Chip{static_cast<int>(t.chips.size()), {x, y, z}});
  auto id_of = [&](std::array<int, 3> c) { return c[0] + dims[0] * (c[1] + dims[1] * c[2]); };
  // Link ids: by source chip, then axis, then + before -.
  for (const Chip& c : t.chips) {
    for (int d = 0; d < 3; ++d) {
      if (dims[d] < 2) continue;
      for (int dir : {+1, -1}) {
        std::array<int, 3> to = c.coords;
        to[d] += dir;
        bool wraps = false;
        if (to[d] < 0 || to[d] >= dims[d]) {
          if (!t.wrap[d]) continue;
          to[d] = (to[d] + dims[d]) % dims[d];
          wraps = true;
        }
        Link l;
        l.id = static_cast<int>(t.links.size());
        l.src = c.id;
        l.dst = id_of(to);
        l.dim = d;
        l.dir = dir;
        l.wraparound = wraps;
        l.bandwidth = t.spec.link_bandwidth;
        l.latency = t.spec.hop_latency;
        t.links.push_back(l);
      }
    }
  }
  t.add_core_links();
  t.reindex();
  return t;
}

}  // namespace aoizora::topo
