// Ring-friendly placements, beyond the paper's axis orders: on a mesh without wraparound a
// logical ring laid out row by row has a long closing edge, while a snake (boustrophedon)
// keeps consecutive partitions one hop apart, and a Hamiltonian cycle of a sub-grid also
// closes the ring in one hop.
#pragma once

#include <vector>

#include "aoizora/place/placement.h"
#include "aoizora/topo/topology.h"

namespace aoizora::place {

// Boustrophedon orders of the whole grid, one per order of the physical axes (fastest first):
// consecutive partitions are neighbours. Names "snake xy", "snake yx", ...
std::vector<Placement> snake_orders(const topo::Topology& t);

// For the innermost logical axis of length L: the grid is tiled with w x h tiles (w*h = L,
// over two physical axes, w*h even so a cycle exists), each tile's chips ordered along a
// Hamiltonian cycle, tiles in snake order. Axes are device axes (x, y, z, core). Partition p goes to tile p / L, position p % L.
// Names "cycle 2x2 xy", ...
std::vector<Placement> tile_cycle_orders(const topo::Topology& t, const MeshShape& mesh);

// A Hamiltonian cycle of a w x h grid (w, h >= 2, w*h even) as (a, b) offsets, starting at
// (0, 0) and ending next to it.
std::vector<std::array<int, 2>> grid_cycle(int w, int h);

}  // namespace aoizora::place
