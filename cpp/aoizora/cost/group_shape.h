// The shape of a group of devices, which decides the algorithm a ring-like collective runs on
// it (cost/algorithm.h): a full box of the device grid (a line, a whole wrapped axis, a
// sub-grid) or anything else.
//
// On chips with two cores (TPU7x) a group is judged on its chips when it holds one device per
// chip: both cores reach the same ICI links, so which core a member sits on cannot change the
// algorithm (and placements that differ only in that are symmetric, place/symmetry.h). A group
// that holds both cores of each of its chips is judged on the four device axes (x, y, z,
// core). A group that holds both cores of some chips and one of others is never a box.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "aoizora/topo/topology.h"

namespace aoizora::cost {

struct GroupBox {
  topo::DeviceCoords lo{}, ext{};  // over device axes; ext[kCoreAxis] is 1 when by_chip
  bool full = false;               // the members are exactly every cell of the box
  // Two-core chips, one member per chip: cells are chips, and member_on_chip[chip] is the
  // member on it (scratch owned by the caller, -1 elsewhere).
  const std::vector<int>* member_on_chip = nullptr;

  // The member at a cell of the box (absolute coordinates).
  int at(const topo::Topology& t, const topo::DeviceCoords& c) const {
    if (member_on_chip == nullptr) return t.device_at(c);
    return (*member_on_chip)[static_cast<size_t>(t.chip_at({c[0], c[1], c[2]}))];
  }
};

// The bounding box of a group of distinct devices. `scratch` is reused between calls (sized
// to the topology; the caller keeps it alive as long as the box, and clears nothing).
inline GroupBox group_box(const std::vector<int>& devices, const topo::Topology& t,
                          std::vector<int>& scratch) {
  GroupBox b;
  const int cores = t.cores_per_chip();
  bool by_chip = false, mixed = false;
  if (cores > 1) {
    // How many members each chip holds: all one (by chip), all two (by device), or mixed.
    scratch.assign(static_cast<size_t>(t.num_chips()), -1);
    size_t both = 0;  // chips holding both cores
    for (int d : devices) {
      int& slot = scratch[static_cast<size_t>(t.chip_of_device(d))];
      if (slot >= 0) ++both;
      slot = d;
    }
    by_chip = both == 0;
    mixed = both != 0 && both * 2 != devices.size();
    if (by_chip) b.member_on_chip = &scratch;
  }
  const auto coords = [&](int d) {
    topo::DeviceCoords c = t.device_coords(d);
    if (by_chip) c[topo::kCoreAxis] = 0;
    return c;
  };
  topo::DeviceCoords hi = coords(devices[0]);
  b.lo = hi;
  for (int d : devices) {
    const topo::DeviceCoords x = coords(d);
    for (size_t a = 0; a < x.size(); ++a) {
      b.lo[a] = std::min(b.lo[a], x[a]);
      hi[a] = std::max(hi[a], x[a]);
    }
  }
  int64_t volume = 1;
  for (size_t a = 0; a < hi.size(); ++a) {
    b.ext[a] = hi[a] - b.lo[a] + 1;
    volume *= b.ext[a];
  }
  // A placement is a permutation, so distinct cells in a box of equal volume fill it.
  b.full = t.is_grid() && !mixed && volume == static_cast<int64_t>(devices.size());
  return b;
}

// Whether a line of `ext` cells along device axis d is a whole wrapped axis (a ring of links).
inline bool is_torus_line(const topo::Topology& t, int d, int ext) {
  return ext > 2 && t.axis_wraps(d) && ext == t.dims[static_cast<size_t>(d)];
}

}  // namespace aoizora::cost
