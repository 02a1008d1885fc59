// The collective algorithms: how one collective under one placement becomes point-to-point
// flows between devices (chips; on TPU7x cores, topo/topology.h). Used by expand() (step by step, for the simulator) and by Q2 (one
// aggregated flow per chip pair and algorithm phase, which is much cheaper). Both views come
// from this one generator, so the simulator and Q2 can never disagree about the algorithm.
// Choices and their reasons: docs/cost-model.md.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "aoizora/cost/group_shape.h"
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

// How a group of devices is treated by the ring-like collectives (all-gather, reduce-scatter,
// all-reduce).
enum class GroupAlgorithm {
  kNone,        // a group of one device
  kTorusRing,   // a whole wrapped axis: bidirectional ring, half of each shard each way
  kLine,        // a contiguous line without wraparound: bidirectional line (ring unfolded)
  kGrid,        // a full sub-grid of >= 2 axes: the profile's `grid` (one ring, or axis by axis)
  kTorus,       // a box of >= 2 whole wrapped axes: every axis at once, one colour per axis
  kRoutedRing,  // anything else: a unidirectional ring in group order over routed paths
};

namespace detail {

// One line of e members: a bidirectional ring (a whole wrapped axis), where every step each
// member sends half a shard each way; or a bidirectional line, where in step s member i
// forwards member (i-s)'s shard rightwards and member (i+s)'s leftwards, so link i->i+1
// carries i+1 shards in all.
template <typename Emit>
void line_flows(const int* line, int e, bool ring, double shard, int step0, bool aggregate,
                Emit& emit, int lane = 0) {
  for (int i = 0; i < e; ++i) {
    const int c = line[i];
    if (ring) {
      const int next = line[(i + 1) % e], prev = line[(i + e - 1) % e];
      if (aggregate) {
        emit(c, next, shard / 2 * (e - 1), step0, e - 1, lane);
        emit(c, prev, shard / 2 * (e - 1), step0, e - 1, lane);
      } else {
        for (int s = 0; s < e - 1; ++s) {
          emit(c, next, shard / 2, step0 + s, 1, lane);
          emit(c, prev, shard / 2, step0 + s, 1, lane);
        }
      }
    } else if (aggregate) {
      if (i + 1 < e) emit(c, line[i + 1], shard * (i + 1), step0, e - 1, lane);
      if (i > 0) emit(c, line[i - 1], shard * (e - i), step0, e - 1, lane);
    } else {
      for (int s = 0; s < e - 1; ++s) {
        if (i + 1 < e && i - s >= 0) emit(c, line[i + 1], shard, step0 + s, 1, lane);
        if (i > 0 && i + s <= e - 1) emit(c, line[i - 1], shard, step0 + s, 1, lane);
      }
    }
  }
}

// Emits one gather (or scatter) phase along device axis d over every line of the box: each
// member contributes `shard` bytes per line-mate. Returns the number of steps (ext - 1).
// emit(src, dst, bytes, first_step, num_steps, lane).
template <typename Emit>
int line_phase(const topo::Topology& t, const GroupBox& box, int d, double shard, int step0,
               bool aggregate, Emit& emit, int lane = 0) {
  const size_t axis = static_cast<size_t>(d);
  const int e = box.ext[axis];
  if (e < 2) return 0;
  const bool ring = is_torus_line(t, d, e);
  topo::DeviceCoords span = box.ext;  // the lines: every cell of the box with coordinate 0 on d
  span[axis] = 1;
  const int lines = span[0] * span[1] * span[2] * span[3];
  // Lines are short (an axis is at most a few dozen chips): no allocation in the hot path.
  std::array<int, 64> small;
  std::vector<int> big(e > 64 ? static_cast<size_t>(e) : 0);
  int* line = e > 64 ? big.data() : small.data();
  for (int li = 0; li < lines; ++li) {
    topo::DeviceCoords p = box.lo;
    for (size_t k = 0, rest = static_cast<size_t>(li); k < p.size(); ++k) {
      p[k] += static_cast<int>(rest % static_cast<size_t>(span[k]));
      rest /= static_cast<size_t>(span[k]);
    }
    for (int i = 0; i < e; ++i, ++p[axis]) line[i] = box.at(t, p);
    line_flows(line, e, ring, shard, step0, aggregate, emit, lane);
  }
  return e - 1;
}

// A ring through every cell of a sub-grid over neighbour links (a Hamiltonian cycle of the
// grid graph), when one exists: some axis of even extent r ("rows"), the other axes walked
// as a snake P ("columns", consecutive cells adjacent). The cycle runs row 0 along P from
// column 1, snakes the rows over columns 1..|P|-1, and returns up column 0.
class GridCycle {
 public:
  // axes: the device axes the sub-grid spans (>= 2, each of extent >= 2).
  GridCycle(const std::vector<int>& axes, const topo::DeviceCoords& ext) : ext_(ext) {
    for (int d : axes) {
      if (row_ < 0 && ext[static_cast<size_t>(d)] % 2 == 0) {
        row_ = d;
      } else {
        path_.push_back(d);
      }
    }
    cols_ = 1;
    for (int d : path_) cols_ *= ext[static_cast<size_t>(d)];
  }
  bool exists() const { return row_ >= 0; }
  int size() const { return ext_[static_cast<size_t>(row_)] * cols_; }

  // The offset from the box's corner of the i-th cell of the cycle.
  topo::DeviceCoords cell(int i) const {
    const int rows = ext_[static_cast<size_t>(row_)], body = rows * (cols_ - 1);
    int row = 0, col = 0;
    if (i > body) {
      row = rows - (i - body);  // back up column 0
    } else if (i > 0) {
      row = (i - 1) / (cols_ - 1);
      const int k = (i - 1) % (cols_ - 1);
      col = row % 2 == 0 ? 1 + k : cols_ - 1 - k;
    }
    topo::DeviceCoords at{};
    at[static_cast<size_t>(row_)] = row;
    // Column -> cell of the snake over path_ (innermost first): an axis runs backwards on
    // odd passes of the axes outside it, so consecutive columns are neighbours.
    int inner = 1;
    for (int d : path_) {
      const int e = ext_[static_cast<size_t>(d)];
      const int digit = (col / inner) % e;
      at[static_cast<size_t>(d)] = (col / (inner * e)) % 2 == 1 ? e - 1 - digit : digit;
      inner *= e;
    }
    return at;
  }

 private:
  topo::DeviceCoords ext_;
  int row_ = -1, cols_ = 1;
  std::vector<int> path_;  // the column axes, innermost first
};

// One ring phase around a GridCycle of the box, once per cell of the axes it leaves out
// (the core axis of a chip-box): each member contributes `shard` bytes per ring-mate.
template <typename Emit>
int cycle_phase(const topo::Topology& t, const GroupBox& box, const GridCycle& cycle,
                const std::vector<int>& axes, double shard, int step0, bool aggregate,
                Emit& emit) {
  const int n = cycle.size();
  std::vector<int> line(static_cast<size_t>(n));
  topo::DeviceCoords rest = box.ext;  // the copies: every axis the cycle does not walk
  for (int d : axes) rest[static_cast<size_t>(d)] = 1;
  const int copies = rest[0] * rest[1] * rest[2] * rest[3];
  for (int ci = 0; ci < copies; ++ci) {
    topo::DeviceCoords base = box.lo;
    for (size_t k = 0, r = static_cast<size_t>(ci); k < base.size(); ++k) {
      base[k] += static_cast<int>(r % static_cast<size_t>(rest[k]));
      r /= static_cast<size_t>(rest[k]);
    }
    for (int i = 0; i < n; ++i) {
      topo::DeviceCoords p = cycle.cell(i);
      for (size_t k = 0; k < p.size(); ++k) p[k] += base[k];
      line[static_cast<size_t>(i)] = box.at(t, p);
    }
    line_flows(line.data(), n, /*ring=*/true, shard, step0, aggregate, emit);
  }
  return n - 1;
}

// A box of D >= 2 whole wrapped axes (a torus) runs all its axes at once: the data is split
// into D colours, colour j passes through the axes in the rotated order axes[j], axes[j+1],
// ..., axes[j-1] (mod D), each axis as its bidirectional ring, so in every phase the colours
// use D different axes and every link of the box is busy (XLA's StrategyND /
// UniDirectionNDRingStrategy on TPU tori, `dim_used` {0 1},{1 0} on 16x16 and
// {0 1 2},{1 2 0},{2 0 1} on 4x4x4; docs/simulator.md). `reverse` walks each colour's order
// backwards (the gather half of an all-reduce undoes its scatter). Phase p of every colour
// starts at step step0 + p L, L = the longest axis's ring steps, so phases of unequal axes
// stay aligned; colour j is lane j, so in the simulator it steps on its own (cost/flow.h).
// Gather: each member contributes `shard` bytes, shard / D per colour, and a
// colour's piece grows by each axis's extent; scatter: `shard` is each member's final piece
// (shard / D per colour), so a colour's piece in phase p is that times the extents of its
// later phases. Returns D L.
template <typename Emit>
int torus_phase(const topo::Topology& t, const GroupBox& box, const std::vector<int>& axes,
                double shard, int step0, bool scatter, bool reverse, bool aggregate, Emit& emit) {
  const int D = static_cast<int>(axes.size());
  int L = 0;
  for (int d : axes) L = std::max(L, box.ext[static_cast<size_t>(d)] - 1);
  std::array<int, 3> order{};
  for (int j = 0; j < D; ++j) {
    for (int p = 0; p < D; ++p)
      order[static_cast<size_t>(p)] = axes[static_cast<size_t>((j + (reverse ? D - 1 - p : p)) % D)];
    const auto ext = [&](int p) {
      return box.ext[static_cast<size_t>(order[static_cast<size_t>(p)])];
    };
    double piece = shard / D;
    if (scatter)
      for (int p = 1; p < D; ++p) piece *= ext(p);
    for (int p = 0; p < D; ++p) {
      line_phase(t, box, order[static_cast<size_t>(p)], piece, step0 + p * L, aggregate, emit, j);
      if (scatter) {
        if (p + 1 < D) piece /= ext(p + 1);
      } else {
        piece *= ext(p);
      }
    }
  }
  return D * L;
}

}  // namespace detail

// All-gather, reduce-scatter or all-reduce over one group; returns its steps.
// A full box of chips over >= 2 axes runs as the profile's `algorithms.grid` says: one
// bidirectional ring around a GridCycle of its chips ("bidirectional-ring", what XLA's TPU
// collectives compile to on the boxes checked, docs/cost-model.md; a box with no even side
// has no such ring and runs dimension by dimension), or dimension by dimension
// ("dimension-order": gathers along x, y, z; the gather half of an all-reduce in the
// reverse order, so it undoes the scatter). The core axis of two-core chips carries the
// largest phase, as a hierarchical algorithm would put it on the fastest link: a
// reduce-scatter splits over the cores first, a gather joins them last. A box whose chip axes
// (>= 2) are all whole wrapped axes runs them at once (torus_phase), whatever `grid` says.
// Any other group: a unidirectional ring in group order over routed paths.
template <typename Emit>
int ring_like_flows(hlo::CollectiveKind kind, const std::vector<int>& members,
                    const topo::Topology& t, double volume, bool aggregate,
                    std::vector<int>& scratch, Emit& emit) {
  const bool gather = kind == hlo::CollectiveKind::kAllGather;
  const bool scatter = kind == hlo::CollectiveKind::kReduceScatter;
  const int k = static_cast<int>(members.size());
  const GroupBox box = group_box(members, t, scratch);
  if (!box.full) {
    // Each step moves one chunk of V/k per edge.
    const int phase = k - 1;
    const int total = (gather || scatter) ? phase : 2 * phase;
    for (int i = 0; i < k; ++i) {
      const int a = members[static_cast<size_t>(i)], b = members[static_cast<size_t>((i + 1) % k)];
      if (aggregate) {
        emit(a, b, volume / k * total, 0, total, 0);
      } else {
        for (int s = 0; s < total; ++s) emit(a, b, volume / k, s, 1, 0);
      }
    }
    return total;
  }
  std::vector<int> axes;  // the chip axes the box spans
  for (int d = 0; d < 3; ++d)
    if (box.ext[static_cast<size_t>(d)] > 1) axes.push_back(d);
  // The phases' units: the core axis, each chip axis, all chip axes as one ring (kRing), or
  // all chip axes of a torus at once (kTorus). The cycle is built only where a profile's grid
  // ring can apply (not for lines, not for tori).
  constexpr int kRing = -1, kTorus = -2;
  bool torus = axes.size() >= 2;
  for (int d : axes) torus = torus && is_torus_line(t, d, box.ext[static_cast<size_t>(d)]);
  std::optional<detail::GridCycle> cycle;
  if (!torus && axes.size() >= 2 && t.spec.algorithms.grid_is_ring()) cycle.emplace(axes, box.ext);
  const bool ring = cycle && cycle->exists();
  std::vector<int> units = torus ? std::vector<int>{kTorus} : ring ? std::vector<int>{kRing} : axes;
  const auto extent = [&](int u) {
    if (u == kRing) return cycle->size();
    if (u != kTorus) return box.ext[static_cast<size_t>(u)];
    int e = 1;
    for (int d : axes) e *= box.ext[static_cast<size_t>(d)];
    return e;
  };
  // scatter: a reduce-scatter phase; reverse: the gather half of an all-reduce.
  const auto phase = [&](int u, double shard, int step0, bool scatter_phase, bool reverse) {
    if (u == kTorus)
      return detail::torus_phase(t, box, axes, shard, step0, scatter_phase, reverse, aggregate, emit);
    return u == kRing ? detail::cycle_phase(t, box, *cycle, axes, shard, step0, aggregate, emit)
                      : detail::line_phase(t, box, u, shard, step0, aggregate, emit);
  };
  const bool cores = box.ext[topo::kCoreAxis] > 1;
  int steps = 0;
  if (!gather) {
    // Reduce-scatter: the first phase splits the full V into ext pieces, and so on.
    std::vector<int> order = units;
    if (cores) order.insert(order.begin(), topo::kCoreAxis);
    double held = volume;
    for (int u : order) {
      held /= extent(u);
      steps += phase(u, held, steps, /*scatter_phase=*/true, /*reverse=*/false);
    }
  }
  if (!scatter) {
    double shard = volume / k;
    std::vector<int> order = units;
    if (!gather) std::reverse(order.begin(), order.end());
    if (cores) order.push_back(topo::kCoreAxis);
    for (int u : order) {
      steps += phase(u, shard, steps, /*scatter_phase=*/false, /*reverse=*/!gather);
      shard *= extent(u);
    }
  }
  return steps;
}

// The algorithm the ring-like collectives use for a group of devices.
inline GroupAlgorithm classify_group(const std::vector<int>& devices, const topo::Topology& t) {
  if (devices.size() < 2) return GroupAlgorithm::kNone;
  std::vector<int> scratch;
  const GroupBox b = group_box(devices, t, scratch);
  if (!b.full) return GroupAlgorithm::kRoutedRing;
  int axes = 0, axis = 0, tori = 0;
  for (int d = 0; d < topo::kDeviceAxes; ++d)
    if (b.ext[static_cast<size_t>(d)] > 1) {
      ++axes, axis = d;
      if (is_torus_line(t, d, b.ext[static_cast<size_t>(d)])) ++tori;
    }
  const int core_axis = b.ext[topo::kCoreAxis] > 1 ? 1 : 0;
  if (tori >= 2 && tori + core_axis == axes) return GroupAlgorithm::kTorus;
  if (axes >= 2) return GroupAlgorithm::kGrid;
  return is_torus_line(t, axis, b.ext[static_cast<size_t>(axis)]) ? GroupAlgorithm::kTorusRing
                                                                  : GroupAlgorithm::kLine;
}

// Generates the flows of one execution of `c` with volume `volume` (see collective_volume)
// under device_of (partition id -> device). emit(src_device, dst_device, bytes, first_step,
// num_steps, lane) is called once per flow and step, or, when `aggregate`, once per device
// pair and phase with the bytes of all its steps; `lane` is the flow's independent sequence
// of steps (cost/flow.h: a torus colour; 0 for every other algorithm). Returns the number of steps of the slowest group.
template <typename Emit>
int generate_flows(const hlo::Collective& c, const std::vector<int>& device_of,
                   const topo::Topology& t, double volume, bool aggregate, Emit&& emit) {
  using hlo::CollectiveKind;
  auto device = [&](int partition) {
    return partition >= 0 && static_cast<size_t>(partition) < device_of.size()
               ? device_of[static_cast<size_t>(partition)]
               : -1;
  };
  int max_steps = 0;
  if (c.kind == CollectiveKind::kCollectivePermute ||
      (c.kind == CollectiveKind::kCollectiveBroadcast && !c.source_target_pairs.empty())) {
    for (const auto& [s, d] : c.source_target_pairs) {
      const int a = device(s), b = device(d);
      if (a < 0 || b < 0 || a == b) continue;
      emit(a, b, volume, 0, 1, 0);
      max_steps = 1;
    }
    return max_steps;
  }
  std::vector<int> members, scratch;
  for (const std::vector<int>& group : c.groups) {
    members.clear();
    for (int p : group)
      if (device(p) >= 0) members.push_back(device(p));
    const int k = static_cast<int>(members.size());
    if (k < 2) continue;
    int steps = 0;
    switch (c.kind) {
      case CollectiveKind::kAllToAll:
      case CollectiveKind::kRaggedAllToAll:
        // Direct pairwise exchange: each device sends 1/k of its buffer to every other.
        for (int a : members)
          for (int b : members)
            if (a != b) emit(a, b, volume / k, 0, 1, 0);
        steps = 1;
        break;
      case CollectiveKind::kCollectiveBroadcast:
        // The first member is the root; it sends the whole buffer to every other member.
        for (int i = 1; i < k; ++i) emit(members[0], members[static_cast<size_t>(i)], volume, 0, 1, 0);
        steps = 1;
        break;
      case CollectiveKind::kAllGather:
      case CollectiveKind::kReduceScatter:
      case CollectiveKind::kAllReduce:
        steps = ring_like_flows(c.kind, members, t, volume, aggregate, scratch, emit);
        break;
      case CollectiveKind::kCollectivePermute:
        break;
    }
    max_steps = std::max(max_steps, steps);
  }
  return max_steps;
}

}  // namespace aoizora::cost
