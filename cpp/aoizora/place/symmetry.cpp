#include "aoizora/place/symmetry.h"

#include <algorithm>
#include <array>

namespace aoizora::place {

std::vector<std::vector<int>> grid_symmetries(const topo::Topology& t) {
  std::vector<std::vector<int>> out;
  std::vector<int> identity(static_cast<size_t>(t.num_chips()));  // chips, not devices
  for (int i = 0; i < t.num_chips(); ++i) identity[static_cast<size_t>(i)] = i;
  out.push_back(identity);
  if (!t.is_grid()) return out;
  std::array<int, 3> perm{0, 1, 2};
  do {
    bool ok = true;  // axis d of the image comes from axis perm[d]
    for (int d = 0; d < 3; ++d)
      ok = ok && t.dims[d] == t.dims[perm[d]] && t.wrap[d] == t.wrap[perm[d]];
    if (!ok) continue;
    for (int flips = 0; flips < 8; ++flips) {
      bool trivial = perm == std::array<int, 3>{0, 1, 2} && flips == 0;
      bool useless = false;
      for (int d = 0; d < 3; ++d)
        if ((flips >> d & 1) && t.dims[d] == 1) useless = true;
      if (trivial || useless) continue;
      std::vector<int> image(static_cast<size_t>(t.num_chips()));
      for (const topo::Chip& c : t.chips) {
        std::array<int, 3> to{};
        for (int d = 0; d < 3; ++d) {
          int v = c.coords[perm[d]];
          if (flips >> d & 1) v = t.dims[d] - 1 - v;
          to[d] = v;
        }
        image[static_cast<size_t>(c.id)] = t.chip_at(to);
      }
      out.push_back(std::move(image));
    }
  } while (std::next_permutation(perm.begin(), perm.end()));
  return out;
}

bool preserves_routes(const topo::Topology& t, const std::vector<int>& image) {
  const int n = t.num_chips();
  if (static_cast<int>(image.size()) != n) return false;
  // Every link onto a link with the same figures.
  std::vector<int> link_image(t.links.size(), -1);
  for (const topo::Link& l : t.links) {
    const int m = l.dim == topo::kCoreAxis
                      ? t.core_link(image[static_cast<size_t>(l.src)], l.dir > 0 ? 0 : 1)
                      : t.link_between(image[static_cast<size_t>(l.src)], image[static_cast<size_t>(l.dst)]);
    if (m < 0) return false;
    const topo::Link& ml = t.links[static_cast<size_t>(m)];
    if (ml.bandwidth != l.bandwidth || ml.latency != l.latency) return false;
    link_image[static_cast<size_t>(l.id)] = m;
  }
  // Every route between chips onto the image's route, link for link (routes between devices
  // on two chips are the chips' routes; within a chip, the core link mapped above).
  std::vector<int> mapped;
  const auto device = [&](int chip) { return t.device_on(chip, 0); };
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      mapped.clear();
      t.for_each_route_link(device(a), device(b), [&](int l) { mapped.push_back(link_image[static_cast<size_t>(l)]); });
      size_t i = 0;
      bool same = true;
      t.for_each_route_link(device(image[static_cast<size_t>(a)]), device(image[static_cast<size_t>(b)]), [&](int l) {
        same = same && i < mapped.size() && mapped[i] == l;
        ++i;
      });
      if (!same || i != mapped.size()) return false;
    }
  return true;
}

std::vector<std::vector<int>> route_symmetries(const topo::Topology& t) {
  std::vector<std::vector<int>> out;
  const int cores = t.cores_per_chip();
  for (const std::vector<int>& g : grid_symmetries(t)) {
    if (!out.empty() && !preserves_routes(t, g)) continue;  // the identity is always first
    // Lift the chip permutation to devices: each core stays the same core of the image chip.
    std::vector<int> image(static_cast<size_t>(t.num_devices()));
    for (int d = 0; d < t.num_devices(); ++d)
      image[static_cast<size_t>(d)] = g[static_cast<size_t>(d / cores)] * cores + d % cores;
    out.push_back(std::move(image));
  }
  return out;
}

namespace {

// Swaps the cores of every chip whose core 1 holds a smaller partition than its core 0, so
// that placements that differ only by which core of a chip holds which partition coincide.
void sort_cores(std::vector<int>& device_of, int cores_per_chip, std::vector<int>& on_device) {
  if (cores_per_chip != 2) return;
  int n = 0;
  for (int d : device_of) n = std::max(n, d + 1);
  n += n % 2;
  on_device.assign(static_cast<size_t>(n), -1);
  for (size_t p = 0; p < device_of.size(); ++p) on_device[static_cast<size_t>(device_of[p])] = static_cast<int>(p);
  for (int chip = 0; chip < n / 2; ++chip) {
    const int p0 = on_device[static_cast<size_t>(2 * chip)], p1 = on_device[static_cast<size_t>(2 * chip + 1)];
    // An empty core counts as the largest partition.
    const bool swap = p1 >= 0 && (p0 < 0 || p1 < p0);
    if (!swap) continue;
    device_of[static_cast<size_t>(p1)] = 2 * chip;
    if (p0 >= 0) device_of[static_cast<size_t>(p0)] = 2 * chip + 1;
  }
}

}  // namespace

std::vector<int> canonical(const std::vector<int>& device_of,
                           const std::vector<std::vector<int>>& symmetries, int cores_per_chip) {
  std::vector<int> best = device_of, cur(device_of.size()), scratch;
  sort_cores(best, cores_per_chip, scratch);
  for (const auto& g : symmetries) {
    for (size_t i = 0; i < device_of.size(); ++i) cur[i] = g[static_cast<size_t>(device_of[i])];
    sort_cores(cur, cores_per_chip, scratch);
    if (cur < best) best = cur;
  }
  return best;
}

}  // namespace aoizora::place
