#include "aoizora/place/axis_order.h"

#include <algorithm>
#include <functional>
#include <set>

#include "aoizora/place/symmetry.h"

namespace aoizora::place {
namespace {

// Ordered factorisations of n into factors > 1 (major first), shortest first.
std::vector<std::vector<int>> compositions(int n) {
  std::vector<std::vector<int>> out;
  std::vector<int> cur;
  std::function<void(int)> rec = [&](int rest) {
    if (rest == 1) {
      if (!cur.empty()) out.push_back(cur);
      return;
    }
    for (int f = 2; f <= rest; ++f) {
      if (rest % f) continue;
      cur.push_back(f);
      rec(rest / f);
      cur.pop_back();
    }
  };
  rec(n);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.size() < b.size(); });
  return out;
}

const char kLetters[] = "xyzc";  // c: the core on the chip (TPU7x)

}  // namespace

std::string axis_order_name(const AxisOrder& order, const topo::Topology& t) {
  std::string out;
  for (size_t a = 0; a < order.axes.size(); ++a) {
    if (a) out += "|";
    if (order.axes[a].empty()) out += "1";
    for (size_t k = 0; k < order.axes[a].size(); ++k) {
      const SubAxis& s = order.axes[a][k];
      if (k) out += ",";
      out += kLetters[s.dim];
      if (s.size != t.device_dims()[static_cast<size_t>(s.dim)]) out += std::to_string(s.size) + "@" + std::to_string(s.stride);
    }
  }
  return out;
}

Placement axis_order_placement(const AxisOrder& order, const topo::Topology& t) {
  // Mixed radix over all sub-axes, logical axis 0 most significant, each axis major first.
  std::vector<SubAxis> digits;
  for (const auto& axis : order.axes) digits.insert(digits.end(), axis.begin(), axis.end());
  int n = 1;
  for (const SubAxis& s : digits) n *= s.size;
  Placement p;
  p.name = "axes " + axis_order_name(order, t);
  p.device_of.resize(static_cast<size_t>(n));
  for (int part = 0; part < n; ++part) {
    topo::DeviceCoords c{0, 0, 0, 0};
    int rest = part;
    for (size_t k = digits.size(); k-- > 0;) {
      c[static_cast<size_t>(digits[k].dim)] += (rest % digits[k].size) * digits[k].stride;
      rest /= digits[k].size;
    }
    p.device_of[static_cast<size_t>(part)] = t.device_at(c);
  }
  return p;
}

namespace {

// The mesh must cover the grid's devices exactly, with positive axis sizes.
Status check_mesh(const topo::Topology& t, const MeshShape& mesh) {
  if (!t.is_grid()) return Error::invalid("axis orders need a grid topology; " + t.name + " is not one");
  int64_t size = 1;
  for (int m : mesh) {
    if (m < 1) return Error::invalid("mesh axis sizes must be positive");
    size *= m;
  }
  if (size != t.num_devices())
    return Error::invalid("mesh of " + std::to_string(size) + " devices on " + t.name + " with " +
                          std::to_string(t.num_devices()) + " devices: sizes must match");
  return Status::success();
}

// Splittings of every physical axis (an index into comps[i] per axis), fewest sub-axes in
// total first.
std::vector<std::vector<int>> splittings(const std::vector<std::vector<std::vector<int>>>& comps) {
  std::vector<std::vector<int>> choices;
  std::vector<int> idx(comps.size(), 0);
  std::function<void(size_t)> rec = [&](size_t i) {
    if (i == comps.size()) {
      choices.push_back(idx);
      return;
    }
    for (size_t k = 0; k < comps[i].size(); ++k) {
      idx[i] = static_cast<int>(k);
      rec(i + 1);
    }
  };
  rec(0);
  auto parts = [&](const std::vector<int>& c) {
    size_t n = 0;
    for (size_t i = 0; i < c.size(); ++i) n += comps[i][static_cast<size_t>(c[i])].size();
    return n;
  };
  std::stable_sort(choices.begin(), choices.end(),
                   [&](const auto& a, const auto& b) { return parts(a) < parts(b); });
  return choices;
}

// The sub-axes of one splitting, each physical axis major first.
std::vector<SubAxis> sub_axes(const std::vector<int>& phys,
                              const std::vector<std::vector<std::vector<int>>>& comps,
                              const std::vector<int>& choice,
                              const std::array<int, topo::kDeviceAxes>& dims) {
  std::vector<SubAxis> subs;
  for (size_t i = 0; i < phys.size(); ++i) {
    const auto& f = comps[i][static_cast<size_t>(choice[i])];
    int stride = dims[static_cast<size_t>(phys[i])];
    for (int s : f) {
      stride /= s;
      subs.push_back(SubAxis{phys[i], s, stride});
    }
  }
  return subs;
}

}  // namespace

Result<std::vector<Placement>> enumerate_axis_orders(const topo::Topology& t,
                                                     const MeshShape& mesh,
                                                     const AxisOrderOptions& options) {
  RETURN_IF_ERROR(check_mesh(t, mesh));
  const auto symmetries =
      options.remove_symmetric ? route_symmetries(t) : std::vector<std::vector<int>>{};
  const std::array<int, topo::kDeviceAxes> dims = t.device_dims();
  std::vector<int> phys;
  for (int d = 0; d < topo::kDeviceAxes; ++d)
    if (dims[static_cast<size_t>(d)] > 1) phys.push_back(d);
  std::vector<std::vector<std::vector<int>>> comps;
  for (int d : phys) comps.push_back(compositions(dims[static_cast<size_t>(d)]));

  const std::vector<std::vector<int>> choices = splittings(comps);

  std::vector<Placement> out;
  std::set<std::vector<int>> seen;
  const int64_t max_attempts = static_cast<int64_t>(options.max_candidates) * 200;
  int64_t attempts = 0;
  for (const auto& choice : choices) {
    const std::vector<SubAxis> subs = sub_axes(phys, comps, choice, dims);
    // Assign sub-axes to logical axes: ordered selections whose sizes multiply to each length.
    AxisOrder order;
    order.axes.assign(mesh.size(), {});
    std::vector<char> used(subs.size(), 0);
    bool stop = false;
    std::function<void(size_t, int)> assign = [&](size_t axis, int rest) {
      if (stop) return;
      if (axis == mesh.size()) {
        if (++attempts > max_attempts) {
          stop = true;
          return;
        }
        Placement p = axis_order_placement(order, t);
        std::vector<int> key = options.remove_symmetric ? canonical(p.device_of, symmetries, t.cores_per_chip()) : p.device_of;
        if (seen.insert(key).second) {
          out.push_back(std::move(p));
          if (static_cast<int>(out.size()) >= options.max_candidates) stop = true;
        }
        return;
      }
      if (rest == 1) {
        const int next = axis + 1 < mesh.size() ? mesh[axis + 1] : 1;
        assign(axis + 1, next);
        return;
      }
      for (size_t k = 0; k < subs.size(); ++k) {
        if (used[k] || rest % subs[k].size) continue;
        used[k] = 1;
        order.axes[axis].push_back(subs[k]);
        assign(axis, rest / subs[k].size);
        order.axes[axis].pop_back();
        used[k] = 0;
        if (stop) return;
      }
    };
    if (!mesh.empty()) assign(0, mesh[0]);
    if (stop) break;
  }
  return out;
}

}  // namespace aoizora::place
