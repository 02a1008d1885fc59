#include "aoizora/shlo/propagate.h"

#include <algorithm>

#include "aoizora/shlo/reshard.h"

namespace aoizora::shlo {

TensorSharding replicated(const std::string& mesh, size_t rank) {
  TensorSharding s;
  s.mesh = mesh;
  s.dims.resize(rank);
  return s;
}

namespace {

int64_t axes_size(const MeshTable& meshes, const std::string& mesh, const std::vector<AxisRef>& axes) {
  int64_t n = 1;
  for (const AxisRef& a : axes) n *= meshes.size_of(mesh, a);
  return n;
}

// Puts `axes` on dimension d of s, removing them from every other dimension.
void set_dim(TensorSharding& s, size_t d, const std::vector<AxisRef>& axes) {
  for (size_t k = 0; k < s.dims.size(); ++k) {
    auto& v = s.dims[k].axes;
    v.erase(std::remove_if(v.begin(), v.end(),
                           [&](const AxisRef& a) {
                             return std::find(axes.begin(), axes.end(), a) != axes.end();
                           }),
            v.end());
  }
  if (d < s.dims.size()) s.dims[d].axes = axes;
}

void drop_axis(TensorSharding& s, const AxisRef& a) {
  for (auto& dim : s.dims) dim.axes.erase(std::remove(dim.axes.begin(), dim.axes.end(), a), dim.axes.end());
}

bool uses(const TensorSharding& s, const AxisRef& a) {
  for (const auto& dim : s.dims)
    if (std::find(dim.axes.begin(), dim.axes.end(), a) != dim.axes.end()) return true;
  return false;
}

double cost(const MeshTable& meshes, const TensorType& t, const TensorSharding& from,
            const TensorSharding& to) {
  ShardState st{from, {}, false, true};
  return moved_bytes(reshard(meshes, t, st, to));
}

// Per-device bytes of a dot_general result under operand shardings l, r.
double dot_result_bytes(const MeshTable& meshes, const DotDims& dims, const TensorType& lt,
                        const TensorSharding& l, const TensorType& rt, const TensorSharding& r) {
  auto contains = [](const std::vector<int64_t>& v, size_t d) {
    return std::find(v.begin(), v.end(), static_cast<int64_t>(d)) != v.end();
  };
  std::vector<int64_t> ls = local_shape(meshes, lt, l), rs = local_shape(meshes, rt, r);
  double n = 1;
  for (size_t d = 0; d < ls.size(); ++d)
    if (!contains(dims.lhs_contract, d)) n *= static_cast<double>(ls[d]);
  for (size_t d = 0; d < rs.size(); ++d)
    if (!contains(dims.rhs_contract, d) && !contains(dims.rhs_batch, d)) n *= static_cast<double>(rs[d]);
  return n * lt.element_bytes;
}

}  // namespace

ReshapeRule reshape_rule(const MeshTable& meshes, const TensorSharding& s,
                         const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  ReshapeRule r{s, replicated(s.mesh, out.size())};
  r.operand.dims.resize(in.size());
  size_t i = 0, j = 0;
  while (i < in.size() || j < out.size()) {
    // Size-1 dimensions hold no sharding.
    if (i < in.size() && in[i] == 1) {
      r.operand.dims[i].axes.clear();
      ++i;
      continue;
    }
    if (j < out.size() && out[j] == 1) {
      ++j;
      continue;
    }
    if (i >= in.size() || j >= out.size()) break;
    std::vector<size_t> gi{i}, gj{j};
    int64_t pi = in[i], pj = out[j];
    while (pi != pj) {
      if (pi < pj) {
        if (++i >= in.size()) break;
        gi.push_back(i);
        pi *= in[i];
      } else {
        if (++j >= out.size()) break;
        gj.push_back(j);
        pj *= out[j];
      }
    }
    // The major input dim's axes go to the major output dim when they divide it; axes on
    // the other input dims of the group cannot map to contiguous tiles and are dropped.
    std::vector<AxisRef> major = r.operand.dims[gi[0]].axes;
    std::vector<AxisRef> keep;
    int64_t f = 1;
    for (const AxisRef& a : major) {
      int64_t sz = meshes.size_of(s.mesh, a);
      if (out[gj[0]] % (f * sz) != 0) break;
      f *= sz;
      keep.push_back(a);
    }
    r.operand.dims[gi[0]].axes = keep;
    for (size_t k = 1; k < gi.size(); ++k) r.operand.dims[gi[k]].axes.clear();
    r.result.dims[gj[0]].axes = keep;
    i = gi.back() + 1;
    j = gj.back() + 1;
  }
  for (; i < in.size(); ++i) r.operand.dims[i].axes.clear();
  return r;
}

namespace {

// Whether dim d of an operand is free: neither a batch nor a contracting dim.
bool is_free(const std::vector<int64_t>& batch, const std::vector<int64_t>& con, size_t d) {
  return std::find(batch.begin(), batch.end(), static_cast<int64_t>(d)) == batch.end() &&
         std::find(con.begin(), con.end(), static_cast<int64_t>(d)) == con.end();
}

// Batch dims: both operands take the more-sharded of the two.
void match_batch_dims(const MeshTable& meshes, const DotDims& dims, const std::string& mesh,
                      DotRule& r) {
  for (size_t k = 0; k < dims.lhs_batch.size(); ++k) {
    size_t lb = static_cast<size_t>(dims.lhs_batch[k]), rb = static_cast<size_t>(dims.rhs_batch[k]);
    auto a = r.lhs.dims[lb].axes, b = r.rhs.dims[rb].axes;
    if (a == b) continue;
    auto t = axes_size(meshes, mesh, a) >= axes_size(meshes, mesh, b) ? a : b;
    set_dim(r.lhs, lb, t);
    set_dim(r.rhs, rb, t);
  }
}

// Contracting dims: keep a shared sharding (partial sums), else the cheapest of moving one
// side to match the other or gathering both.
void match_contracting_dims(const MeshTable& meshes, const DotDims& dims, const TensorType& lt,
                            const TensorType& rt, const std::string& mesh, DotRule& r) {
  for (size_t k = 0; k < dims.lhs_contract.size(); ++k) {
    size_t lc = static_cast<size_t>(dims.lhs_contract[k]), rc = static_cast<size_t>(dims.rhs_contract[k]);
    auto a = r.lhs.dims[lc].axes, b = r.rhs.dims[rc].axes;
    if (a != b) {
      struct Opt {
        TensorSharding l, rr;
        double bytes;
      };
      std::vector<Opt> opts;
      auto add = [&](std::vector<AxisRef> axes) {
        Opt o{r.lhs, r.rhs, 0};
        set_dim(o.l, lc, axes);
        set_dim(o.rr, rc, axes);
        o.bytes = cost(meshes, lt, r.lhs, o.l) + cost(meshes, rt, r.rhs, o.rr);
        // Partial sums left by a sharded contraction are all-reduced later: count them.
        if (!axes.empty()) {
          double k = static_cast<double>(axes_size(meshes, mesh, axes));
          o.bytes += 2 * (k - 1) / k * dot_result_bytes(meshes, dims, lt, o.l, rt, o.rr);
        }
        opts.push_back(o);
      };
      if (!a.empty()) add(a);
      if (!b.empty()) add(b);
      add({});
      size_t best = 0;
      for (size_t o = 1; o < opts.size(); ++o)
        if (opts[o].bytes < opts[best].bytes) best = o;
      r.lhs = opts[best].l;
      r.rhs = opts[best].rr;
    }
    for (const AxisRef& ax : r.lhs.dims[lc].axes) r.partial.push_back(ax);
  }
}

// One mesh axis may split only one result dim: a clash between the two operands' free
// dims (or with the partial axes) is resolved by gathering the cheaper side.
void resolve_free_dim_clashes(const MeshTable& meshes, const DotDims& dims, const TensorType& lt,
                              const TensorType& rt, DotRule& r) {
  for (size_t d = 0; d < rt.shape.size(); ++d) {
    if (!is_free(dims.rhs_batch, dims.rhs_contract, d)) continue;
    for (const AxisRef& ax : std::vector<AxisRef>(r.rhs.dims[d].axes)) {
      bool clash_partial = std::find(r.partial.begin(), r.partial.end(), ax) != r.partial.end();
      bool clash_lhs = false;
      for (size_t e = 0; e < lt.shape.size(); ++e)
        if (is_free(dims.lhs_batch, dims.lhs_contract, e) &&
            std::find(r.lhs.dims[e].axes.begin(), r.lhs.dims[e].axes.end(), ax) != r.lhs.dims[e].axes.end())
          clash_lhs = true;
      bool clash_batch = false;
      for (int64_t b : dims.lhs_batch) {
        auto& v = r.lhs.dims[static_cast<size_t>(b)].axes;
        if (std::find(v.begin(), v.end(), ax) != v.end()) clash_batch = true;
      }
      if (clash_partial || clash_batch) {
        drop_axis(r.rhs, ax);
      } else if (clash_lhs) {
        TensorSharding l2 = r.lhs, r2 = r.rhs;
        drop_axis(l2, ax);
        drop_axis(r2, ax);
        if (cost(meshes, lt, r.lhs, l2) < cost(meshes, rt, r.rhs, r2)) r.lhs = l2;
        else r.rhs = r2;
      }
    }
  }
}

}  // namespace

DotRule dot_rule(const MeshTable& meshes, const DotDims& dims, const TensorType& lt,
                 const TensorSharding& lhs, const TensorType& rt, const TensorSharding& rhs) {
  DotRule r;
  r.lhs = lhs;
  r.rhs = rhs;
  r.lhs.dims.resize(lt.shape.size());
  r.rhs.dims.resize(rt.shape.size());
  const std::string& mesh = lhs.mesh.empty() ? rhs.mesh : lhs.mesh;
  r.lhs.mesh = r.rhs.mesh = mesh;
  match_batch_dims(meshes, dims, mesh, r);
  match_contracting_dims(meshes, dims, lt, rt, mesh, r);
  resolve_free_dim_clashes(meshes, dims, lt, rt, r);
  // Result: batch dims, lhs free dims, rhs free dims.
  r.result = replicated(mesh, 0);
  for (int64_t b : dims.lhs_batch) r.result.dims.push_back({r.lhs.dims[static_cast<size_t>(b)].axes, false});
  for (size_t d = 0; d < lt.shape.size(); ++d)
    if (is_free(dims.lhs_batch, dims.lhs_contract, d)) r.result.dims.push_back({r.lhs.dims[d].axes, false});
  for (size_t d = 0; d < rt.shape.size(); ++d)
    if (is_free(dims.rhs_batch, dims.rhs_contract, d)) r.result.dims.push_back({r.rhs.dims[d].axes, false});
  (void)uses;
  return r;
}

}  // namespace aoizora::shlo
