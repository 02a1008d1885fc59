#include "aoizora/place/symmetry.h"

#include <algorithm>
#include <array>

namespace aoizora::place {

std::vector<std::vector<int>> grid_symmetries(const topo::Topology& t) {
  std::vector<std::vector<int>> out;
  std::vector<int> identity(static_cast<size_t>(t.num_chips()));
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
    const int m = t.link_between(image[static_cast<size_t>(l.src)], image[static_cast<size_t>(l.dst)]);
    if (m < 0) return false;
    const topo::Link& ml = t.links[static_cast<size_t>(m)];
    if (ml.bandwidth != l.bandwidth || ml.latency != l.latency) return false;
    link_image[static_cast<size_t>(l.id)] = m;
  }
  // Every route onto the image's route, link for link.
  std::vector<int> mapped;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      if (a == b) continue;
      mapped.clear();
      t.for_each_route_link(a, b, [&](int l) { mapped.push_back(link_image[static_cast<size_t>(l)]); });
      size_t i = 0;
      bool same = true;
      t.for_each_route_link(image[static_cast<size_t>(a)], image[static_cast<size_t>(b)], [&](int l) {
        same = same && i < mapped.size() && mapped[i] == l;
        ++i;
      });
      if (!same || i != mapped.size()) return false;
    }
  return true;
}

std::vector<std::vector<int>> route_symmetries(const topo::Topology& t) {
  std::vector<std::vector<int>> out;
  for (std::vector<int>& g : grid_symmetries(t))
    if (out.empty() || preserves_routes(t, g)) out.push_back(std::move(g));  // identity first
  return out;
}

std::vector<int> canonical(const std::vector<int>& chip_of,
                           const std::vector<std::vector<int>>& symmetries) {
  std::vector<int> best = chip_of, cur(chip_of.size());
  for (const auto& g : symmetries) {
    for (size_t i = 0; i < chip_of.size(); ++i) cur[i] = g[static_cast<size_t>(chip_of[i])];
    if (cur < best) best = cur;
  }
  return best;
}

}  // namespace aoizora::place
