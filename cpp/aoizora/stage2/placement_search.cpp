#include "aoizora/stage2/placement_search.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "aoizora/place/axis_order.h"
#include "aoizora/place/jax_default.h"
#include "aoizora/place/ring_orders.h"
#include "aoizora/place/symmetry.h"

namespace aoizora::stage2 {

place::Placement local_search(cost::Q2Evaluator& q2, const place::Placement& start,
                              const SearchOptions& options, double* best_seconds) {
  std::mt19937_64 rng(options.seed);
  std::vector<int> cur = start.device_of, best = cur;
  double cur_s = q2.seconds(cur), best_s = cur_s;
  const int n = static_cast<int>(cur.size());
  const double t0 = options.start_temperature * cur_s;
  // Moves: swap two partitions' devices, or reverse the devices of a run of partitions (2-opt,
  // which repairs a ring in one move where swaps would need several uphill steps).
  for (int it = 0; it < options.iterations && n >= 2; ++it) {
    int a = static_cast<int>(rng() % static_cast<uint64_t>(n));
    int b = static_cast<int>(rng() % static_cast<uint64_t>(n - 1));
    if (b >= a) ++b;
    const bool reverse = (rng() & 1) != 0;
    if (a > b) std::swap(a, b);
    auto apply = [&] {
      if (reverse) {
        std::reverse(cur.begin() + a, cur.begin() + b + 1);
      } else {
        std::swap(cur[static_cast<size_t>(a)], cur[static_cast<size_t>(b)]);
      }
    };
    apply();
    const double s = q2.seconds(cur);
    const double temp = t0 * (1.0 - static_cast<double>(it) / options.iterations);
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    if (s <= cur_s || (temp > 0 && u < std::exp((cur_s - s) / temp))) {
      cur_s = s;
      if (s < best_s) {
        best_s = s;
        best = cur;
      }
    } else {
      apply();  // both moves are their own inverse
    }
  }
  if (best_seconds != nullptr) *best_seconds = best_s;
  return place::Placement{"search(" + start.name + ")", best};
}

Result<Ranking> rank_placements(const hlo::CollectiveGraph& graph, const topo::Topology& t,
                                const place::MeshShape& mesh, const RankOptions& options) {
  int64_t size = 1;
  for (int m : mesh) size *= m;
  if (size != t.num_devices())
    return Error{"mesh of " + std::to_string(size) + " devices on " + t.name + " with " +
                     std::to_string(t.num_devices()) + " devices: sizes must match",
                 "", 0, 0};
  if (graph.num_partitions > size)
    return Error{"the program has " + std::to_string(graph.num_partitions) +
                     " partitions but the mesh only " + std::to_string(size),
                 "", 0, 0};
  cost::Q2Evaluator q2(graph, t);
  Ranking out;
  const auto symmetries =
      options.remove_symmetric ? place::route_symmetries(t) : std::vector<std::vector<int>>{};
  std::set<std::vector<int>> seen;
  auto add = [&](place::Placement p) {
    std::vector<int> key = symmetries.empty() ? p.device_of : place::canonical(p.device_of, symmetries, t.cores_per_chip());
    if (!seen.insert(key).second) return;
    const double s = q2.seconds(p.device_of);
    ++out.evaluated;
    out.ranked.push_back(RankedPlacement{std::move(p), s});
  };
  Result<place::Placement> d = place::default_placement(t, mesh);
  if (d.ok()) {
    out.jax_default = RankedPlacement{*d, q2.seconds(d->device_of)};
    ++out.evaluated;
    add(*d);
  } else {
    out.default_error = d.error().message;
  }
  add(place::row_major(t));
  if (options.axis_orders && t.is_grid()) {
    place::AxisOrderOptions ao;
    ao.max_candidates = options.max_axis_orders;
    ao.remove_symmetric = options.remove_symmetric;
    Result<std::vector<place::Placement>> orders = place::enumerate_axis_orders(t, mesh, ao);
    if (!orders.ok()) return orders.error();
    for (place::Placement& p : *orders) add(std::move(p));
  }
  if (options.ring_orders && t.is_grid()) {
    for (place::Placement& p : place::snake_orders(t)) add(std::move(p));
    for (place::Placement& p : place::tile_cycle_orders(t, mesh)) add(std::move(p));
  }
  auto by_q2 = [](const RankedPlacement& a, const RankedPlacement& b) { return a.q2 < b.q2; };
  std::stable_sort(out.ranked.begin(), out.ranked.end(), by_q2);
  const int starts = std::min<int>(options.search_starts, static_cast<int>(out.ranked.size()));
  std::vector<place::Placement> found;
  for (int i = 0; i < starts; ++i) {
    SearchOptions so = options.search;
    so.seed = options.search.seed + static_cast<uint64_t>(i);
    found.push_back(local_search(q2, out.ranked[static_cast<size_t>(i)].placement, so));
    out.evaluated += so.iterations + 1;
  }
  for (place::Placement& p : found) add(std::move(p));
  std::stable_sort(out.ranked.begin(), out.ranked.end(), by_q2);
  return out;
}

}  // namespace aoizora::stage2
