// A physical interconnect: chips at integer coordinates and directed links between them.
// ICI links are full duplex, so each physical cable is two directed links, each with its own
// bandwidth. Routes are link-id paths chosen by dimension-order routing.
//
// Devices. A JAX device is one TensorCore: one per chip on v4/v5e/v5p/v6e, two on TPU7x.
// Device d sits on chip d / cores_per_chip, core d % cores_per_chip (the cores of a chip have
// consecutive ids, as JAX numbers them). Placements, routes and collectives are over devices;
// for a one-core generation device ids are chip ids. Devices form a grid of four axes
// (x, y, z, core), the core axis of length cores_per_chip; it is how place/ and cost/ see
// the cores. The two cores of a chip are joined by an intra-chip link each way (dim
// kCoreAxis, src == dst == the chip). Both cores share their chip's ICI links, so a route
// between cores of different chips is the chips' ICI route and never uses an intra-chip
// link; a route between the cores of one chip is that link alone.
//
// Contract shared by topo/, place/, cost/ and sim/. Implemented in topology.cpp and
// topology_json.cpp; the catalog of named slices is topo/catalog.h.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "aoizora/base/status.h"
#include "aoizora/topo/chip_spec.h"

namespace aoizora::topo {

struct Chip {
  // Index into Topology::chips: x fastest, then y, then z. This is NOT the JAX device id
  // (compile-only devices are numbered host by host); match JAX devices by coords.
  int id = 0;
  std::array<int, 3> coords{};   // (x, y, z) as JAX's device.coords reports them
};

// Device axes: x, y, z of the chip, then the core on the chip.
inline constexpr int kDeviceAxes = 4;
inline constexpr int kCoreAxis = 3;
using DeviceCoords = std::array<int, kDeviceAxes>;

struct Link {
  int id = 0;
  int src = 0;                   // chip id
  int dst = 0;                   // chip id (== src for an intra-chip link)
  int dim = 0;                   // axis it runs along (0=x, 1=y, 2=z, kCoreAxis between the
                                 // cores of a chip); -1 if custom
  int dir = +1;                  // +1 or -1 along that axis (core 0 -> 1 is +1)
  bool wraparound = false;       // closes a torus ring
  double bandwidth = 0;          // bytes/s, one way
  double latency = 0;            // seconds
};

class Topology {
 public:
  std::string name;                  // "v5e:2x4", or the JSON file's name
  std::array<int, 3> dims{1, 1, 1};  // chips along x, y, z
  std::array<bool, 3> wrap{false, false, false};
  ChipSpec spec;
  std::vector<Chip> chips;
  std::vector<Link> links;

  Topology() = default;
  // Copies and moves carry the public fields and the link index; the route cache starts
  // empty (it is only a cache).
  Topology(const Topology& other);
  Topology(Topology&& other) noexcept;
  Topology& operator=(const Topology& other);
  Topology& operator=(Topology&& other) noexcept;

  int num_chips() const { return static_cast<int>(chips.size()); }
  int num_links() const { return static_cast<int>(links.size()); }

  // ---- devices (see the header comment) ----
  int cores_per_chip() const { return spec.cores_per_chip; }
  int num_devices() const { return num_chips() * cores_per_chip(); }
  int chip_of_device(int device) const { return device / cores_per_chip(); }
  int core_of_device(int device) const { return device % cores_per_chip(); }
  int device_on(int chip, int core) const { return chip * cores_per_chip() + core; }
  // Extent of each device axis: dims, then cores_per_chip.
  std::array<int, kDeviceAxes> device_dims() const { return {dims[0], dims[1], dims[2], cores_per_chip()}; }
  // Whether device axis d closes a ring (the core axis never does).
  bool axis_wraps(int d) const { return d < 3 && wrap[static_cast<size_t>(d)]; }
  DeviceCoords device_coords(int device) const;
  // Device at coordinates, or -1.
  int device_at(const DeviceCoords& c) const;
  // The intra-chip link of `chip` from core `from_core` to the other core, or -1.
  int core_link(int chip, int from_core) const;

  // Chip id at coordinates, or -1.
  int chip_at(std::array<int, 3> coords) const;
  // Directed link id from chip a to neighbour b, or -1.
  int link_between(int a, int b) const;
  // Link ids from device src to device dst. Between chips: dimension-order routing (x, then
  // y, then z; the shorter way round a wrapped axis; ties go the + way); a custom topology
  // (links with dim -1) routes by fewest hops, ties to the lower link id. Between the cores
  // of one chip: the intra-chip link. Empty when src == dst. Cached, thread-safe.
  std::span<const int> route(int src, int dst) const;

  // Calls f(link_id) for each link of route(src, dst) in order, without allocating or
  // locking when the topology is a grid (the hot path of Q2). Same links as route().
  template <typename F>
  void for_each_route_link(int src, int dst, F&& f) const;
  // Hops of route(src, dst) (devices).
  int hops(int src, int dst) const;

  // True when every link runs along a grid axis, so dimension-order routing applies.
  bool is_grid() const { return is_grid_; }

  // Builds the link table for a grid of dims with the given wraparound, and the intra-chip
  // links when spec has two cores per chip. Used by the catalog and tests. An axis of length
  // <= 2 never gets wraparound links (they would duplicate the direct ones).
  static Topology grid(std::string name, std::array<int, 3> dims, std::array<bool, 3> wrap,
                       ChipSpec spec);

  // Appends the intra-chip links (one each way per chip) from spec.intra_chip_link; nothing
  // for one-core chips. For hand-built topologies; grid() calls it. Then call reindex().
  void add_core_links();

  // Rebuilds the neighbour index from chips/links. Call after editing chips or links by hand.
  void reindex();

 private:
  int step_link(int chip, int dim, int dir) const {
    return step_[static_cast<size_t>(chip) * 6 + static_cast<size_t>(dim * 2 + (dir > 0 ? 0 : 1))];
  }
  std::vector<int> bfs_route(int src, int dst) const;
  // Calls f for each link of the ICI route between two chips (grid topologies).
  template <typename F>
  void for_each_chip_route_link(int src, int dst, F&& f) const;

  bool is_grid_ = false;
  std::vector<int> step_;                     // [chip*6 + dim*2 + (dir>0?0:1)] -> link id or -1
  std::vector<int> coord_index_;              // x + dims.x*(y + dims.y*z) -> chip id or -1
  std::vector<std::vector<int>> out_links_;   // chip -> outgoing ICI link ids (custom topologies)
  std::vector<int> core_link_;                // [chip*2 + from_core] -> intra-chip link id or -1

  mutable std::mutex route_mu_;
  mutable std::unordered_map<int64_t, std::vector<int>> route_cache_;
};

// A topology from JSON text (see docs/cost-model.md for the format). `name` labels it. An
// error when the text's "name" is a catalog slice's (topo/catalog.h) and the text describes
// another slice or other chip figures.
Result<Topology> topology_from_json(const std::string& text, const std::string& name);

// ---- implementation of the template ----

template <typename F>
void Topology::for_each_route_link(int src, int dst, F&& f) const {
  if (src == dst) return;
  if (!is_grid_) {
    for (int l : route(src, dst)) f(l);
    return;
  }
  const int cores = cores_per_chip();
  if (cores == 1) {
    for_each_chip_route_link(src, dst, f);
    return;
  }
  const int a = src / cores, b = dst / cores;
  if (a == b) {
    f(core_link(a, src % cores));
  } else {
    for_each_chip_route_link(a, b, f);
  }
}

template <typename F>
void Topology::for_each_chip_route_link(int src, int dst, F&& f) const {
  // Chip ids are x-fastest, so a step along axis d moves the id by stride[d] (wrapping by
  // n * stride[d]); only the small step table is read, not the link table.
  const std::array<int, 3>& a = chips[static_cast<size_t>(src)].coords;
  const std::array<int, 3>& b = chips[static_cast<size_t>(dst)].coords;
  const std::array<int, 3> stride{1, dims[0], dims[0] * dims[1]};
  int cur = src;
  for (int d = 0; d < 3; ++d) {
    if (a[d] == b[d]) continue;
    const int n = dims[d];
    int dir;
    int steps;
    if (wrap[d] && n > 2) {
      const int fwd = ((b[d] - a[d]) % n + n) % n;
      const int back = n - fwd;
      dir = fwd <= back ? +1 : -1;
      steps = fwd <= back ? fwd : back;
    } else {
      dir = b[d] > a[d] ? +1 : -1;
      steps = b[d] > a[d] ? b[d] - a[d] : a[d] - b[d];
    }
    int x = a[d];
    for (int s = 0; s < steps; ++s) {
      f(step_link(cur, d, dir));
      int nx = x + dir;
      int delta = dir * stride[d];
      if (nx < 0) {
        nx += n;
        delta += n * stride[d];
      } else if (nx >= n) {
        nx -= n;
        delta -= n * stride[d];
      }
      cur += delta;
      x = nx;
    }
  }
}

}  // namespace aoizora::topo
