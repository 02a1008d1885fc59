// Symmetries of a topology that no cost model can see: chip permutations that map every
// link onto a link of equal bandwidth and latency and every route onto the route of the
// image, link for link (the image of route(a, b) is route(image(a), image(b))). Two
// placements that differ by such a symmetry put the same bytes on corresponding links in
// every phase of every collective, so Q2 and the simulator give them the same time; the
// search keeps one of them, the lexicographically smallest image (canonical()).
//
// The candidates are a grid's reflections of any axis and transposes of axes of equal
// length and wraparound; each is kept only when it passes the route check, which is derived
// per topology rather than by rule. Under dimension-order routing (x, then y, then z) no
// transpose passes, and neither does the reflection of a wrapped axis of even length (its
// half-way ties go the + way). Derivation: docs/cost-model.md, "Placements".
#pragma once

#include <vector>

#include "aoizora/topo/topology.h"

namespace aoizora::place {

// The candidates: every axis permutation among axes of equal length and wraparound, times
// every set of reflected axes, as chip permutations (image[g][chip] = chip it maps to). The
// identity is first. A custom (non-grid) topology has only the identity. Not all of them
// preserve routes: use route_symmetries() to deduplicate placements.
std::vector<std::vector<int>> grid_symmetries(const topo::Topology& t);

// Whether the chip permutation `image` maps every directed link onto a link of equal
// bandwidth and latency, and the route between every pair of chips onto the route between
// their images, link for link. Walks all chips^2 routes (stops at the first that differs).
bool preserves_routes(const topo::Topology& t, const std::vector<int>& image);

// The grid_symmetries() that preserve routes, identity first, in grid_symmetries' order.
std::vector<std::vector<int>> route_symmetries(const topo::Topology& t);

// The smallest of { g(chip_of) : g in symmetries } (elementwise image), lexicographically.
std::vector<int> canonical(const std::vector<int>& chip_of,
                           const std::vector<std::vector<int>>& symmetries);

}  // namespace aoizora::place
