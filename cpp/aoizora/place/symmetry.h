// Symmetries of a grid topology that map links to links: a reflection of any axis, and a
// transpose of two axes of equal length and equal wraparound. Two placements that differ by
// such a symmetry load the fabric identically (up to routing tie-breaks), so the search keeps
// one of them: the canonical form is the lexicographically smallest image.
#pragma once

#include <vector>

#include "aoizora/topo/topology.h"

namespace aoizora::place {

// Each symmetry as a chip permutation: image[g][chip] = chip it maps to. The identity is first.
// A custom (non-grid) topology has only the identity.
std::vector<std::vector<int>> grid_symmetries(const topo::Topology& t);

// The smallest of { g(chip_of) : g in symmetries } (elementwise image), lexicographically.
std::vector<int> canonical(const std::vector<int>& chip_of,
                           const std::vector<std::vector<int>>& symmetries);

}  // namespace aoizora::place
