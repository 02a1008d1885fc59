// The collective algorithms: how one collective under one placement becomes point-to-point
// flows between chips. Used by expand() (step by step, for the simulator) and by Q2 (one
// aggregated flow per chip pair and algorithm phase, which is much cheaper). Both views come
// from this one generator, so the simulator and Q2 can never disagree about the algorithm.
// Choices and their reasons: docs/cost-model.md.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "aoizora/hlo/collective_graph.h"
#include "aoizora/topo/topology.h"

namespace aoizora::cost {

// The bytes parameter V of a collective, in which every algorithm's traffic is linear:
// all-gather: the gathered (result) bytes; reduce-scatter and all-reduce: the full operand;
// all-to-all: the local buffer; permute and broadcast: the bytes each target receives.
inline double collective_volume(const hlo::Collective& c) {
  return static_cast<double>(c.kind == hlo::CollectiveKind::kAllGather ? c.result_bytes
                                                                       : c.operand_bytes);
}

// How a group of chips is treated by the ring-like collectives (all-gather, reduce-scatter,
// all-reduce).
enum class GroupAlgorithm {
  kNone,        // a group of one chip
  kTorusRing,   // a whole wrapped axis: bidirectional ring, half of each shard each way
  kLine,        // a contiguous line without wraparound: bidirectional line (ring unfolded)
  kGrid,        // a full sub-grid of >= 2 axes: dimension by dimension, each axis as above
  kRoutedRing,  // anything else: a unidirectional ring in group order over routed paths
};

namespace detail {

struct Box {
  std::array<int, 3> lo{}, ext{};
  bool full = false;  // the chips are exactly every chip of the box
};

inline Box bounding_box(const std::vector<int>& chips, const topo::Topology& t) {
  Box b;
  std::array<int, 3> hi{};
  b.lo = t.chips[static_cast<size_t>(chips[0])].coords;
  hi = b.lo;
  for (int c : chips) {
    const auto& x = t.chips[static_cast<size_t>(c)].coords;
    for (int d = 0; d < 3; ++d) {
      b.lo[d] = std::min(b.lo[d], x[d]);
      hi[d] = std::max(hi[d], x[d]);
    }
  }
  int64_t volume = 1;
  for (int d = 0; d < 3; ++d) {
    b.ext[d] = hi[d] - b.lo[d] + 1;
    volume *= b.ext[d];
  }
  // A placement is a permutation, so distinct chips in a box of equal volume fill it.
  b.full = t.is_grid() && volume == static_cast<int64_t>(chips.size());
  return b;
}

// Whether a line of `ext` chips along axis d is a whole wrapped axis (a ring of links).
inline bool is_torus_line(const topo::Topology& t, int d, int ext) {
  return ext > 2 && ext == t.dims[d] && t.wrap[d];
}

// Emits one gather (or scatter) phase along axis d over every line of the box: each chip
// contributes `shard` bytes per line-mate. Returns the number of steps (ext - 1).
// emit(src, dst, bytes, first_step, num_steps).
template <typename Emit>
int line_phase(const topo::Topology& t, const Box& box, int d, double shard, int step0,
               bool aggregate, Emit& emit) {
  const int e = box.ext[d];
  if (e < 2) return 0;
  const bool ring = is_torus_line(t, d, e);
  std::array<int, 3> o{}, p{};
  std::array<int, 3> span = box.ext;
  span[d] = 1;
  // Lines are short (an axis is at most a few dozen chips): no allocation in the hot path.
  std::array<int, 64> small;
  std::vector<int> big(e > 64 ? static_cast<size_t>(e) : 0);
  int* line = e > 64 ? big.data() : small.data();
  for (o[2] = 0; o[2] < span[2]; ++o[2])
    for (o[1] = 0; o[1] < span[1]; ++o[1])
      for (o[0] = 0; o[0] < span[0]; ++o[0]) {
        for (int i = 0; i < e; ++i) {
          for (int k = 0; k < 3; ++k) p[k] = box.lo[k] + o[k];
          p[d] = box.lo[d] + i;
          line[(i)] = t.chip_at(p);
        }
        if (ring) {
          // Bidirectional ring: every step each chip sends half a shard each way.
          for (int i = 0; i < e; ++i) {
            const int c = line[(i)];
            const int next = line[((i + 1) % e)];
            const int prev = line[((i + e - 1) % e)];
            if (aggregate) {
              emit(c, next, shard / 2 * (e - 1), step0, e - 1);
              emit(c, prev, shard / 2 * (e - 1), step0, e - 1);
            } else {
              for (int s = 0; s < e - 1; ++s) {
                emit(c, next, shard / 2, step0 + s, 1);
                emit(c, prev, shard / 2, step0 + s, 1);
              }
            }
          }
        } else {
          // Bidirectional line: in step s chip i forwards chip (i-s)'s shard rightwards and
          // chip (i+s)'s shard leftwards. Link i->i+1 carries i+1 shards in all.
          for (int i = 0; i < e; ++i) {
            const int c = line[(i)];
            if (aggregate) {
              if (i + 1 < e) emit(c, line[(i + 1)], shard * (i + 1), step0, e - 1);
              if (i > 0) emit(c, line[(i - 1)], shard * (e - i), step0, e - 1);
            } else {
              for (int s = 0; s < e - 1; ++s) {
                if (i + 1 < e && i - s >= 0) emit(c, line[(i + 1)], shard, step0 + s, 1);
                if (i > 0 && i + s <= e - 1) emit(c, line[(i - 1)], shard, step0 + s, 1);
              }
            }
          }
        }
      }
  return e - 1;
}

}  // namespace detail

// The algorithm the ring-like collectives use for a group of chips.
inline GroupAlgorithm classify_group(const std::vector<int>& chips, const topo::Topology& t) {
  if (chips.size() < 2) return GroupAlgorithm::kNone;
  const detail::Box b = detail::bounding_box(chips, t);
  if (!b.full) return GroupAlgorithm::kRoutedRing;
  int axes = 0, axis = 0;
  for (int d = 0; d < 3; ++d)
    if (b.ext[d] > 1) ++axes, axis = d;
  if (axes >= 2) return GroupAlgorithm::kGrid;
  return detail::is_torus_line(t, axis, b.ext[axis]) ? GroupAlgorithm::kTorusRing
                                                     : GroupAlgorithm::kLine;
}

// Generates the flows of one execution of `c` with volume `volume` (see collective_volume)
// under chip_of (partition id -> chip). emit(src_chip, dst_chip, bytes, first_step,
// num_steps) is called once per flow and step, or, when `aggregate`, once per chip pair and
// phase with the bytes of all its steps. Returns the number of steps of the slowest group.
template <typename Emit>
int generate_flows(const hlo::Collective& c, const std::vector<int>& chip_of,
                   const topo::Topology& t, double volume, bool aggregate, Emit&& emit) {
  using hlo::CollectiveKind;
  auto chip = [&](int partition) {
    return partition >= 0 && static_cast<size_t>(partition) < chip_of.size()
               ? chip_of[static_cast<size_t>(partition)]
               : -1;
  };
  int max_steps = 0;
  if (c.kind == CollectiveKind::kCollectivePermute ||
      (c.kind == CollectiveKind::kCollectiveBroadcast && !c.source_target_pairs.empty())) {
    for (const auto& [s, d] : c.source_target_pairs) {
      const int a = chip(s), b = chip(d);
      if (a < 0 || b < 0 || a == b) continue;
      emit(a, b, volume, 0, 1);
      max_steps = 1;
    }
    return max_steps;
  }
  std::vector<int> chips;
  for (const std::vector<int>& group : c.groups) {
    chips.clear();
    for (int p : group)
      if (chip(p) >= 0) chips.push_back(chip(p));
    const int k = static_cast<int>(chips.size());
    if (k < 2) continue;
    int steps = 0;
    switch (c.kind) {
      case CollectiveKind::kAllToAll:
      case CollectiveKind::kRaggedAllToAll:
        // Direct pairwise exchange: each chip sends 1/k of its buffer to every other.
        for (int a : chips)
          for (int b : chips)
            if (a != b) emit(a, b, volume / k, 0, 1);
        steps = 1;
        break;
      case CollectiveKind::kCollectiveBroadcast:
        // The first member is the root; it sends the whole buffer to every other member.
        for (int i = 1; i < k; ++i) emit(chips[0], chips[static_cast<size_t>(i)], volume, 0, 1);
        steps = 1;
        break;
      case CollectiveKind::kAllGather:
      case CollectiveKind::kReduceScatter:
      case CollectiveKind::kAllReduce: {
        const bool gather = c.kind == CollectiveKind::kAllGather;
        const bool scatter = c.kind == CollectiveKind::kReduceScatter;
        const detail::Box box = detail::bounding_box(chips, t);
        if (!box.full) {
          // Unidirectional ring in group order; each step moves one chunk of V/k per edge.
          const int phase = k - 1;
          const int total = (gather || scatter) ? phase : 2 * phase;
          for (int i = 0; i < k; ++i) {
            const int a = chips[static_cast<size_t>(i)], b = chips[static_cast<size_t>((i + 1) % k)];
            if (aggregate) {
              emit(a, b, volume / k * total, 0, total);
            } else {
              for (int s = 0; s < total; ++s) emit(a, b, volume / k, s, 1);
            }
          }
          steps = total;
          break;
        }
        // Full line or sub-grid: dimension by dimension (x, y, z for gathers; the reverse
        // order for the gather half of an all-reduce, so it undoes the scatter).
        std::vector<int> axes;
        for (int d = 0; d < 3; ++d)
          if (box.ext[d] > 1) axes.push_back(d);
        if (!gather) {
          // Reduce-scatter: phase along axes[0] splits the full V into ext pieces, etc.
          double held = volume;
          for (int d : axes) {
            held /= box.ext[d];
            steps += detail::line_phase(t, box, d, held, steps, aggregate, emit);
          }
        }
        if (!scatter) {
          double shard = volume / k;
          std::vector<int> order = axes;
          if (!gather) std::reverse(order.begin(), order.end());
          for (int d : order) {
            steps += detail::line_phase(t, box, d, shard, steps, aggregate, emit);
            shard *= box.ext[d];
          }
        }
        break;
      }
      case CollectiveKind::kCollectivePermute:
        break;
    }
    max_steps = std::max(max_steps, steps);
  }
  return max_steps;
}

}  // namespace aoizora::cost
