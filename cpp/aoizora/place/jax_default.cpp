#include "aoizora/place/jax_default.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>

namespace aoizora::place {
namespace {

// mesh_utils' physical-order tables.
const std::vector<int> kTray2x2Ring = {0, 1, 3, 2};
const std::vector<int> kTray4x4Ring = {0, 1, 2, 3, 7, 6, 5, 9, 10, 11, 15, 14, 13, 12, 8, 4};
const std::vector<int> kV5eTrayRing = {0, 1, 2, 3, 7, 6, 5, 4};
const std::vector<int> kV5eTrayIota = {0, 4, 2, 6, 1, 5, 3, 7};
const std::vector<int> kV5p2x2x2 = {0, 1, 3, 2, 6, 7, 5, 4};
const std::vector<int> k7xTray2x2x2Ring = {0, 1, 2, 3, 6, 7, 4, 5};

Placement fixed(const std::vector<int>& order, const char* why) {
  return Placement{std::string("default (") + why + ")", order};
}

// Device-kind handlers; nullopt falls through to the general logic, as in mesh_utils.
std::optional<Placement> kind_handler(const topo::Topology& t, const MeshShape& mesh) {
  const std::string& kind = t.spec.device_kind;
  const int n = t.num_devices();
  const auto& d = t.dims;
  if (kind == "TPU7x" || kind == "TPU7") {
    // _7x_create_device_mesh: a ring over each 2x2 tray's chips, both cores of a chip
    // adjacent, repeated along z. JAX's device list is in id order, which is ours here (a
    // host is a 2x2x1 tray: ids go core, x, y, then z).
    if (n % 8 != 0 || n > 32 || d[0] > 2 || d[1] > 2) return std::nullopt;
    std::vector<int> order;
    for (int i = 0; i < n; i += 8)
      for (int k : k7xTray2x2x2Ring) order.push_back(i + k);
    return fixed(order, "7x tray ring");
  }
  if (kind == "TPU v5 lite" || kind == "TPU v5e" || kind == "TPU v6 lite") {
    if (d[0] == 2 && d[1] == 2 && d[2] == 1 && n == 4) return fixed(kTray2x2Ring, "v5e 2x2 ring");
    if (n == 8) {
      if (d[0] == 2 && d[1] == 2 && d[2] == 2) return fixed(kV5eTrayIota, "v5e 2x2x2 iota");
      return fixed(kV5eTrayRing, "v5e tray ring");
    }
    if (d[0] == 4 && d[1] == 4 && d[2] == 1 && n == 16 &&
        *std::max_element(mesh.begin(), mesh.end()) == n)
      return fixed(kTray4x4Ring, "v5e 4x4 ring");
    return std::nullopt;
  }
  if (kind == "TPU v4 lite") {
    if (n == 4) return fixed(kTray2x2Ring, "v4i ring");
    return std::nullopt;
  }
  if (kind == "TPU v5p") {
    if (d[0] == 2 && d[1] == 2 && d[2] == 2 && n == 8) return fixed(kV5p2x2x2, "v5p 2x2x2");
  }
  return std::nullopt;
}

// mesh_utils._get_prime_factors, including its quirk of returning only the remainder for
// numbers with a prime factor above sqrt(x) + 1 after dividing out small ones (e.g. 10 -> [5]).
std::vector<int64_t> prime_factors(int64_t x) {
  std::vector<int64_t> f;
  const int64_t limit = static_cast<int64_t>(std::sqrt(static_cast<double>(x))) + 2;
  for (int64_t p = 2; p < limit; ++p) {
    while (x % p == 0) {
      f.push_back(p);
      x /= p;
    }
    if (x == 1) return f;
  }
  return {x};
}

using Column = std::vector<int64_t>;  // per physical axis
using Phys = std::vector<int>;        // the physical mesh's shape: x, y, z[, core]

bool prefer(const Column& x, const Column& y, const Phys& phys, const Column& assigned) {
  auto whole = [&](const Column& v) {
    int64_t p = 1;
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i] == phys[i]) p *= v[i];
    return p;
  };
  auto whole_count = [&](const Column& v) {
    int c = 0;
    for (size_t i = 0; i < v.size(); ++i) c += v[i] == phys[i] && v[i] > 1;
    return c;
  };
  auto non_overlap = [&](const Column& v) {
    int64_t p = 1;
    for (size_t i = 0; i < v.size(); ++i)
      if (assigned[i] > 1) p *= v[i];
    return p;
  };
  if (whole(x) != whole(y)) return whole(x) > whole(y);
  if (whole_count(x) != whole_count(y)) return whole_count(x) > whole_count(y);
  if (non_overlap(x) != non_overlap(y)) return non_overlap(x) > non_overlap(y);
  return x > y;
}

// _create_device_mesh_for_nd_torus_splitting_axes: assignment[p][l] sizes.
Result<std::vector<Column>> split_assignment(const Phys& phys, const MeshShape& mesh) {
  const size_t P = phys.size(), L = mesh.size();
  std::vector<Column> a(P, Column(L, 1));
  for (size_t l = L; l-- > 0;) {
    // Prime factors of the logical size, in order of first appearance, with multiplicity.
    std::vector<std::pair<int64_t, int>> factors;
    for (int64_t f : prime_factors(mesh[l])) {
      auto it = std::find_if(factors.begin(), factors.end(), [&](auto& e) { return e.first == f; });
      if (it == factors.end()) factors.push_back({f, 1});
      else ++it->second;
    }
    Column assigned(P, 1), available(P);
    for (size_t p = 0; p < P; ++p) {
      for (size_t k = 0; k < L; ++k) assigned[p] *= a[p][k];
      available[p] = phys[p] / assigned[p];
    }
    std::map<int64_t, std::vector<int>> axes_by_factor;
    for (size_t p = 0; p < P; ++p)
      for (int64_t f : prime_factors(available[p]))
        if (std::any_of(factors.begin(), factors.end(), [&](auto& e) { return e.first == f; }))
          axes_by_factor[f].push_back(static_cast<int>(p));
    // For each factor, the distinct multisets of axes that take its copies.
    std::vector<std::vector<std::vector<int>>> per_factor;
    for (auto& [f, m] : factors) {
      std::set<std::vector<int>> combos;
      const std::vector<int>& pool = axes_by_factor[f];
      std::vector<int> pick;
      std::function<void(size_t)> rec = [&](size_t from) {
        if (static_cast<int>(pick.size()) == m) {
          combos.insert(pick);
          return;
        }
        for (size_t i = from; i < pool.size(); ++i) {
          pick.push_back(pool[i]);
          rec(i + 1);
          pick.pop_back();
        }
      };
      rec(0);
      per_factor.emplace_back(combos.begin(), combos.end());
    }
    std::optional<Column> best;
    std::vector<size_t> idx(per_factor.size(), 0);
    std::function<void(size_t)> product = [&](size_t k) {
      if (k == per_factor.size()) {
        Column cand(P, 1);
        for (size_t j = 0; j < per_factor.size(); ++j)
          for (int axis : per_factor[j][idx[j]]) cand[static_cast<size_t>(axis)] *= factors[j].first;
        if (!best || prefer(cand, *best, phys, assigned)) best = cand;
        return;
      }
      for (size_t i = 0; i < per_factor[k].size(); ++i) {
        idx[k] = i;
        product(k + 1);
      }
    };
    product(0);
    if (!best) return Error::invalid("jax cannot split the physical axes to fit logical axis " + std::to_string(l));
    for (size_t p = 0; p < P; ++p) a[p][l] = (*best)[p];
  }
  return a;
}

}  // namespace

Result<Placement> create_device_mesh(const topo::Topology& t, const MeshShape& mesh,
                                     bool allow_split_physical_axes) {
  if (!t.is_grid()) return Error::invalid("the JAX default order needs a grid topology");
  int64_t size = 1;
  for (int m : mesh) size *= m;
  if (size != t.num_devices())
    return Error::invalid("Number of devices " + std::to_string(t.num_devices()) +
                          " must equal the product of mesh_shape (" + std::to_string(size) + ")");
  if (auto p = kind_handler(t, mesh)) {
    if (mesh.empty() || p->device_of.size() == static_cast<size_t>(size)) return *p;
  }
  // _get_physical_tpu_mesh: (x, y, z), and the core axis where a chip has two devices.
  Phys phys(t.dims.begin(), t.dims.end());
  if (t.cores_per_chip() > 1) phys.push_back(t.cores_per_chip());
  const int P = static_cast<int>(phys.size());
  // _create_device_mesh_for_nd_torus.
  Phys assignable = phys;
  std::vector<std::vector<int>> assignment(mesh.size());
  bool need_split = false;
  for (size_t l = mesh.size(); l-- > 0 && !need_split;) {
    bool found = false;
    for (int num = P; num >= 1 && !found; --num) {
      // itertools.combinations(range(P), num) in lexicographic order.
      std::vector<int> c(static_cast<size_t>(num));
      std::function<void(int, int)> rec = [&](int from, int k) {
        if (found) return;
        if (k == num) {
          int64_t prod = 1;
          for (int i : c) prod *= assignable[static_cast<size_t>(i)];
          if (prod == mesh[l]) {
            assignment[l] = c;
            for (int i : c) assignable[static_cast<size_t>(i)] = 0;
            found = true;
          }
          return;
        }
        for (int i = from; i < P; ++i) {
          c[static_cast<size_t>(k)] = i;
          rec(i + 1, k + 1);
        }
      };
      rec(0, 0);
    }
    if (!found && mesh[l] > 1) {
      if (!allow_split_physical_axes)
        return Error::invalid("Failed to find assignment for logical_axis_index " + std::to_string(l) +
                              " of size " + std::to_string(mesh[l]) +
                              " (jax raises NotImplementedError; jax.make_mesh splits axes only on v5e)");
      need_split = true;
    }
  }
  AxisOrder order;
  order.axes.assign(mesh.size(), {});
  if (!need_split) {
    std::vector<int> transpose;
    for (size_t l = 0; l < mesh.size(); ++l) {
      for (int p : assignment[l]) {
        transpose.push_back(p);
        if (phys[static_cast<size_t>(p)] > 1) order.axes[l].push_back(SubAxis{p, phys[static_cast<size_t>(p)], 1});
      }
    }
    std::vector<int> sorted = transpose, all(phys.size());
    std::sort(sorted.begin(), sorted.end());
    for (int p = 0; p < P; ++p) all[static_cast<size_t>(p)] = p;
    if (sorted != all)
      return Error::invalid("jax's transpose of the physical mesh would not cover every axis for this mesh shape");
  } else {
    ASSIGN_OR_RETURN(std::vector<Column> a, split_assignment(phys, mesh));
    // _generate_logical_mesh: axis p splits into sizes a[p][0] (major) .. a[p][L-1] (minor);
    // logical axis l takes (p, l) for p = x, y, z[, core].
    for (size_t l = 0; l < mesh.size(); ++l)
      for (int p = 0; p < P; ++p) {
        const int64_t s = a[static_cast<size_t>(p)][l];
        if (s <= 1) continue;
        int64_t stride = 1;
        for (size_t k = l + 1; k < mesh.size(); ++k) stride *= a[static_cast<size_t>(p)][k];
        order.axes[l].push_back(SubAxis{p, static_cast<int>(s), static_cast<int>(stride)});
      }
  }
  Placement p = axis_order_placement(order, t);
  p.name = "default (" + axis_order_name(order, t) + ")";
  return p;
}

Result<Placement> default_placement(const topo::Topology& t, const MeshShape& mesh) {
  const bool v5e = t.spec.device_kind == "TPU v5 lite" || t.spec.device_kind == "TPU v5e";
  return create_device_mesh(t, mesh, v5e);
}

}  // namespace aoizora::place
