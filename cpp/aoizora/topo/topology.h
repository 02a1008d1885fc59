// A physical interconnect: chips at integer coordinates and directed links between them.
// ICI links are full duplex, so each physical cable is two directed links, each with its own
// bandwidth. Routes are link-id paths chosen by dimension-order routing.
//
// Contract shared by topo/, place/, cost/ and sim/. Implemented in topology.cpp / catalog.cpp /
// routing.cpp (owned by the topology work).
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "aoizora/base/status.h"

namespace aoizora::topo {

// Per-chip figures of a TPU generation (REFERENCE.md §2).
struct ChipSpec {
  std::string generation;        // "v5e", "v4", ...
  std::string device_kind;       // what JAX reports, e.g. "TPU v5 lite"
  double peak_flops = 0;         // bf16 FLOP/s
  double hbm_bytes = 0;
  double hbm_bandwidth = 0;      // bytes/s
  double link_bandwidth = 0;     // usable one-way bytes/s per directed link
  double hop_latency = 1e-6;     // seconds per hop
};

struct Chip {
  // Index into Topology::chips: x fastest, then y, then z. This is NOT the JAX device id
  // (compile-only devices are numbered host by host); match JAX devices by coords.
  int id = 0;
  std::array<int, 3> coords{};   // (x, y, z) as JAX's device.coords reports them
};

struct Link {
  int id = 0;
  int src = 0;                   // chip id
  int dst = 0;                   // chip id
  int dim = 0;                   // physical axis it runs along (0=x, 1=y, 2=z); -1 if custom
  int dir = +1;                  // +1 or -1 along that axis
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

  int num_chips() const { return static_cast<int>(chips.size()); }
  // Chip id at coordinates, or -1.
  int chip_at(std::array<int, 3> coords) const;
  // Directed link id from chip a to neighbour b, or -1.
  int link_between(int a, int b) const;
  // Link ids from src to dst by dimension-order routing (x, then y, then z; the shorter way
  // round a wrapped axis; ties go the + way). Empty when src == dst. Cached, thread-safe.
  std::span<const int> route(int src, int dst) const;

  // Builds the link table for a grid of dims with the given wraparound. Used by the catalog
  // and tests.
  static Topology grid(std::string name, std::array<int, 3> dims, std::array<bool, 3> wrap,
                       ChipSpec spec);

 private:
  mutable std::mutex route_mu_;
  mutable std::unordered_map<int64_t, std::vector<int>> route_cache_;
};

// A topology from the catalog by name ("v5e:2x4", "v4:2x2x2", "v5p:4x4x4", ...) or from a
// JSON file path. Unknown names give an error that lists the valid ones.
Result<Topology> make_topology(const std::string& name_or_path);

}  // namespace aoizora::topo
