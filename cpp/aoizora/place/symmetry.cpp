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
