#include "aoizora/stage2/placement_search.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "aoizora/place/placement_pool.h"

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
  place::PoolOptions po;
  po.axis_orders = options.axis_orders;
  po.max_axis_orders = options.max_axis_orders;
  po.ring_orders = options.ring_orders;
  po.remove_symmetric = options.remove_symmetric;
  ASSIGN_OR_RETURN(place::PlacementPool pool, place::placement_pool(t, mesh, po));
  if (graph.num_partitions > t.num_devices())
    return Error::invalid("the program has " + std::to_string(graph.num_partitions) +
                          " partitions but the mesh only " + std::to_string(t.num_devices()));
  cost::Q2Evaluator q2(graph, t);
  Ranking out;
  if (pool.jax_default) {
    out.jax_default = RankedPlacement{*pool.jax_default, q2.seconds(pool.jax_default->device_of)};
    ++out.evaluated;
  } else {
    out.default_error = pool.default_error;
  }
  place::DistinctPlacements distinct(t, options.remove_symmetric);
  auto add = [&](place::Placement p) {
    if (!distinct.is_new(p)) return;
    const double s = q2.seconds(p.device_of);
    ++out.evaluated;
    out.ranked.push_back(RankedPlacement{std::move(p), s});
  };
  for (place::Placement& p : pool.placements) add(std::move(p));
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
