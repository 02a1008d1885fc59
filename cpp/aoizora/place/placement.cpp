#include "aoizora/place/placement.h"

#include <numeric>

namespace aoizora::place {
namespace {
Error fail(std::string m) { return Error{std::move(m), "", 0, 0}; }
}  // namespace

Result<bool> validate(const Placement& p, const topo::Topology& t) {
  std::vector<char> used(static_cast<size_t>(t.num_chips()), 0);
  for (size_t i = 0; i < p.chip_of.size(); ++i) {
    const int c = p.chip_of[i];
    if (c < 0 || c >= t.num_chips())
      return fail("placement '" + p.name + "' puts partition " + std::to_string(i) + " on chip " +
                  std::to_string(c) + ", outside 0.." + std::to_string(t.num_chips() - 1));
    if (used[static_cast<size_t>(c)]++)
      return fail("placement '" + p.name + "' puts two partitions on chip " + std::to_string(c));
  }
  return true;
}

Result<Placement> placement_from_coords(const topo::Topology& t,
                                        const std::vector<std::array<int, 3>>& coords,
                                        std::string name) {
  Placement p;
  p.name = std::move(name);
  for (const auto& c : coords) {
    const int id = t.chip_at(c);
    if (id < 0)
      return fail("no chip at (" + std::to_string(c[0]) + ", " + std::to_string(c[1]) + ", " +
                  std::to_string(c[2]) + ") in " + t.name);
    p.chip_of.push_back(id);
  }
  Result<bool> ok = validate(p, t);
  if (!ok.ok()) return ok.error();
  return p;
}

std::vector<std::array<int, 3>> coords_of(const topo::Topology& t, const Placement& p) {
  std::vector<std::array<int, 3>> out;
  out.reserve(p.chip_of.size());
  for (int c : p.chip_of) out.push_back(t.chips[static_cast<size_t>(c)].coords);
  return out;
}

Placement row_major(const topo::Topology& t) {
  Placement p{"row-major", std::vector<int>(static_cast<size_t>(t.num_chips()))};
  std::iota(p.chip_of.begin(), p.chip_of.end(), 0);
  return p;
}

}  // namespace aoizora::place
