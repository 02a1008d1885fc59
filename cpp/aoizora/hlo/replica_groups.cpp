#include "aoizora/hlo/replica_groups.h"

#include <algorithm>
#include <charconv>
#include <string>

namespace aoizora::hlo {
namespace {

constexpr int64_t kMaxDevices = 1 << 20;  // more ids than any slice has; guards allocations

// A small cursor over the attribute text.
struct Cursor {
  std::string_view s;
  size_t p = 0;

  void ws() {
    while (p < s.size() && (s[p] == ' ' || s[p] == '\t' || s[p] == '\n' || s[p] == '\r')) ++p;
  }
  bool eat(char c) {
    ws();
    if (p < s.size() && s[p] == c) {
      ++p;
      return true;
    }
    return false;
  }
  bool eat(std::string_view w) {
    ws();
    if (s.compare(p, w.size(), w) == 0) {
      p += w.size();
      return true;
    }
    return false;
  }
  char peek() {
    ws();
    return p < s.size() ? s[p] : '\0';
  }
  bool integer(int64_t* v) {
    ws();
    size_t b = p;
    if (p < s.size() && s[p] == '-') ++p;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9') ++p;
    auto [ptr, ec] = std::from_chars(s.data() + b, s.data() + p, *v);
    if (ec != std::errc() || ptr != s.data() + p || p == b) {
      p = b;
      return false;
    }
    return true;
  }
  Error fail(const std::string& what) {
    std::string found = p < s.size() ? "'" + std::string(s.substr(p, 16)) + "'" : "end of text";
    Error e;
    e.message = "expected " + what + " in '" + std::string(s.substr(0, 80)) + "', found " + found;
    e.column = static_cast<int>(p) + 1;
    e.code = ErrorCode::kParse;
    return e;
  }
  // "(a,b,c)" or "[a,b,c]" with the given brackets.
  Result<std::vector<int64_t>> list(char open, char close) {
    std::vector<int64_t> out;
    if (!eat(open)) return fail(std::string("'") + open + "'");
    if (eat(close)) return out;
    for (;;) {
      int64_t v;
      if (!integer(&v)) return fail("an integer");
      if (out.size() >= static_cast<size_t>(kMaxDevices)) return fail("a shorter list");
      out.push_back(v);
      if (eat(',')) continue;
      if (eat(close)) return out;
      return fail(std::string("',' or '") + close + "'");
    }
  }
};

bool checked_product(const std::vector<int64_t>& dims, int64_t* out) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d <= 0 || __builtin_mul_overflow(n, d, &n) || n > kMaxDevices) return false;
  }
  *out = n;
  return true;
}

// arange(prod(dims)).reshape(dims).transpose(perm).flatten()
std::vector<int64_t> iota_transposed(const std::vector<int64_t>& dims,
                                     const std::vector<int64_t>& perm, int64_t total) {
  const size_t r = dims.size();
  std::vector<int64_t> strides(r, 1);
  for (size_t i = r; i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  std::vector<int64_t> out(total);
  std::vector<int64_t> idx(r, 0);  // index in the transposed array
  for (int64_t k = 0; k < total; ++k) {
    int64_t src = 0;
    for (size_t i = 0; i < r; ++i) src += idx[i] * strides[perm[i]];
    out[k] = src;
    for (size_t i = r; i-- > 0;) {
      if (++idx[i] < dims[perm[i]]) break;
      idx[i] = 0;
    }
  }
  return out;
}

bool valid_perm(const std::vector<int64_t>& perm, size_t r) {
  if (perm.size() != r) return false;
  std::vector<bool> seen(r, false);
  for (int64_t v : perm) {
    if (v < 0 || static_cast<size_t>(v) >= r || seen[v]) return false;
    seen[v] = true;
  }
  return true;
}

// "[G,S]<=[d0,d1]T(1,0)" at the cursor; the flattened ids and the group shape.
Result<Groups> parse_iota(Cursor& c) {
  ASSIGN_OR_RETURN(auto shape, c.list('[', ']'));
  if (!c.eat("<=")) return c.fail("'<=' in an iota replica group list");
  ASSIGN_OR_RETURN(auto dims, c.list('[', ']'));
  std::vector<int64_t> perm;
  if (c.eat('T')) {
    ASSIGN_OR_RETURN(auto t, c.list('(', ')'));
    perm = t;
  } else {
    for (size_t i = 0; i < dims.size(); ++i) perm.push_back(static_cast<int64_t>(i));
  }
  int64_t total = 0, groups_total = 0;
  if (shape.size() != 2 || !checked_product(shape, &groups_total) ||
      !checked_product(dims, &total) || total != groups_total)
    return c.fail("an iota group shape [groups,size] whose product matches the reshape dims");
  if (!valid_perm(perm, dims.size())) return c.fail("a permutation of the reshape dims");
  std::vector<int64_t> flat = iota_transposed(dims, perm, total);
  Groups out(shape[0]);
  const int64_t size = shape[1];
  for (int64_t g = 0; g < shape[0]; ++g)
    out[g].assign(flat.begin() + g * size, flat.begin() + (g + 1) * size);
  return out;
}

// An iota id list at the cursor: "[d0,d1]T(p)" (arange reshaped to the dims, transposed by
// p, flattened) or "[n]<=[d0,d1]T(p)" (the same with the output shape given first).
Result<std::vector<int64_t>> parse_iota_list(Cursor& c) {
  ASSIGN_OR_RETURN(auto first, c.list('[', ']'));
  std::vector<int64_t> dims = first;
  if (c.eat("<=")) {
    ASSIGN_OR_RETURN(auto reshape, c.list('[', ']'));
    dims = reshape;
  }
  std::vector<int64_t> perm;
  if (c.eat('T')) {
    ASSIGN_OR_RETURN(auto t, c.list('(', ')'));
    perm = t;
  } else {
    for (size_t i = 0; i < dims.size(); ++i) perm.push_back(static_cast<int64_t>(i));
  }
  int64_t total = 0, listed = 0;
  if (!checked_product(dims, &total) || !checked_product(first, &listed) || listed != total)
    return c.fail("an iota device list whose shape matches its reshape dims");
  if (!valid_perm(perm, dims.size())) return c.fail("a permutation of the reshape dims");
  return iota_transposed(dims, perm, total);
}

std::string_view axis_name(Cursor& c) {
  c.ws();
  size_t b = c.p;
  if (c.p < c.s.size() && (c.s[c.p] == '\'' || c.s[c.p] == '"')) {
    char q = c.s[c.p++];
    size_t e = c.s.find(q, c.p);
    if (e == std::string_view::npos) return {};
    c.p = e + 1;
    return c.s.substr(b + 1, e - b - 1);
  }
  while (c.p < c.s.size() && (isalnum(static_cast<unsigned char>(c.s[c.p])) || c.s[c.p] == '_'))
    ++c.p;
  return c.s.substr(b, c.p - b);
}

// A mesh replica-group list as printed: the mesh's axes, its device ids, and the axes (or
// sub-axes) along which the devices of one group differ.
struct MeshAxis {
  std::string_view name;
  int64_t size;
};
struct GroupAxis {
  int axis;           // index into the mesh's axes
  int64_t pre, size;  // the sub-axis (pre)size; 1 and the axis size for a whole axis
};
struct MeshGroupsText {
  std::vector<MeshAxis> axes;
  std::vector<int64_t> device_ids;  // one per device of the mesh, in mesh order
  std::vector<GroupAxis> group_axes;
};

// `'x'=2,'y'=4]` after `mesh[`: the axes, each of size in [1, 2^20].
Result<std::vector<MeshAxis>> parse_mesh_axes(Cursor& c) {
  std::vector<MeshAxis> axes;
  if (c.eat(']')) return axes;
  for (;;) {
    std::string_view n = axis_name(c);
    int64_t size;
    if (n.empty() || !c.eat('=') || !c.integer(&size) || size <= 0 || size > kMaxDevices)
      return c.fail("an axis 'name'=size");
    axes.push_back({n, size});
    if (c.eat(',')) continue;
    if (c.eat(']')) return axes;
    return c.fail("',' or ']' in the mesh");
  }
}

// `, device_ids=(...)` after the mesh, if present: `total` ids, listed or as an iota list;
// else 0 .. total-1.
Result<std::vector<int64_t>> parse_device_ids(Cursor& c, int64_t total) {
  std::vector<int64_t> device_ids;
  if (!c.eat(',')) {
    for (int64_t i = 0; i < total; ++i) device_ids.push_back(i);
    return device_ids;
  }
  if (!c.eat("device_ids=")) return c.fail("'device_ids='");
  if (c.peek() == '(' && c.s.compare(c.p, 2, "([") != 0) {
    ASSIGN_OR_RETURN(auto ids, c.list('(', ')'));
    device_ids = ids;
  } else {
    // An iota device list: ([2,4]T(1,0)) as the TPU compiler prints it (arange reshaped
    // to [2,4], transposed, flattened), or ([8]<=[2,4]T(1,0)) / [8]<=[2,4]T(1,0).
    bool paren = c.eat('(');
    ASSIGN_OR_RETURN(auto ids, parse_iota_list(c));
    device_ids = std::move(ids);
    if (paren && !c.eat(')')) return c.fail("')' after device_ids");
  }
  if (static_cast<int64_t>(device_ids.size()) != total) return c.fail("as many device_ids as devices in the mesh");
  return device_ids;
}

// `{'y','x':(1)2}`: the group axes, each an axis of the mesh or a sub-axis dividing it.
Result<std::vector<GroupAxis>> parse_group_axes(Cursor& c, const std::vector<MeshAxis>& axes) {
  std::vector<GroupAxis> group_axes;
  if (!c.eat('{')) return c.fail("'{' with the group axes");
  if (c.eat('}')) return group_axes;
  for (;;) {
    std::string_view n = axis_name(c);
    int found = -1;
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i].name == n) found = static_cast<int>(i);
    if (found < 0) return c.fail("an axis of the mesh");
    GroupAxis g{found, 1, axes[found].size};
    if (c.eat(':')) {
      if (!c.eat('(') || !c.integer(&g.pre) || !c.eat(')') || !c.integer(&g.size) || g.pre <= 0 || g.size <= 0 ||
          axes[found].size % (g.pre * g.size) != 0)
        return c.fail("a sub-axis (pre)size dividing the axis");
    }
    group_axes.push_back(g);
    if (c.eat(',')) continue;
    if (c.eat('}')) return group_axes;
    return c.fail("',' or '}' in the group axes");
  }
}

// mesh['x'=2,'y'=4][, device_ids=(...)] {'y','x':(1)2}, parsed and checked, not expanded.
Result<MeshGroupsText> parse_mesh(Cursor& c) {
  MeshGroupsText m;
  if (!c.eat("mesh") || !c.eat('[')) return c.fail("'mesh['");
  ASSIGN_OR_RETURN(auto axes, parse_mesh_axes(c));
  m.axes = std::move(axes);
  std::vector<int64_t> sizes;
  for (const MeshAxis& a : m.axes) sizes.push_back(a.size);
  int64_t total = 1;
  if (!checked_product(sizes, &total)) return c.fail("a mesh of at most 2^20 devices");
  ASSIGN_OR_RETURN(auto ids, parse_device_ids(c, total));
  m.device_ids = std::move(ids);
  ASSIGN_OR_RETURN(auto group_axes, parse_group_axes(c, m.axes));
  m.group_axes = std::move(group_axes);
  return m;
}

// The mesh's axes split at the boundaries of the sub-axes the groups use ("fine" dims, each
// the ratio of two consecutive factorisation points; pre-size counts from the major end).
struct FineDims {
  std::vector<int64_t> dims;                 // major to minor, axis after axis
  std::vector<std::vector<int>> of_axis;     // per axis, its fine dims
  std::vector<std::vector<int64_t>> points;  // per axis, 1 = p0 < p1 < ... < pk = size
};

// Fails (message: the condition that does not hold) when two sub-axes of one axis do not nest.
Result<FineDims> split_axes(const std::vector<MeshAxis>& axes, const std::vector<GroupAxis>& group_axes) {
  std::vector<std::vector<int64_t>> points(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) points[i] = {1, axes[i].size};
  for (const GroupAxis& g : group_axes) {
    points[static_cast<size_t>(g.axis)].push_back(g.pre);
    points[static_cast<size_t>(g.axis)].push_back(g.pre * g.size);
  }
  FineDims f;
  for (std::vector<int64_t>& pts : points) {
    std::sort(pts.begin(), pts.end());
    pts.erase(std::unique(pts.begin(), pts.end()), pts.end());
    std::vector<int> fine;
    for (size_t k = 0; k + 1 < pts.size(); ++k) {
      if (pts[k + 1] % pts[k] != 0) return Error::invalid("sub-axes that nest");
      fine.push_back(static_cast<int>(f.dims.size()));
      f.dims.push_back(pts[k + 1] / pts[k]);
    }
    f.of_axis.push_back(fine);
    f.points.push_back(pts);
  }
  return f;
}

// The fine dims the group axes span, in listed order. Fails (message: the condition that does
// not hold) when two group axes share a fine dim.
Result<std::vector<int64_t>> group_dims(const FineDims& f, const std::vector<GroupAxis>& group_axes) {
  std::vector<int64_t> in_group;
  std::vector<bool> used(f.dims.size(), false);
  for (const GroupAxis& g : group_axes) {
    const auto& pts = f.points[static_cast<size_t>(g.axis)];
    for (size_t k = 0; k + 1 < pts.size(); ++k) {
      if (pts[k] >= g.pre && pts[k + 1] <= g.pre * g.size) {
        int d = f.of_axis[static_cast<size_t>(g.axis)][k];
        if (used[static_cast<size_t>(d)]) return Error::invalid("group axes that do not overlap");
        used[static_cast<size_t>(d)] = true;
        in_group.push_back(d);
      }
    }
  }
  return in_group;
}

// Devices that differ only along the `in_group` fine dims form a group, ordered by those dims
// as listed; the groups run over the other dims, major to minor. Ids are `device_ids`' entries.
Groups groups_along(const FineDims& f, const std::vector<int64_t>& in_group, const std::vector<int64_t>& device_ids) {
  // Fine dims are major-to-minor in axis order, but the points above run minor-to-major
  // within an axis (pre-size counts from the major end, so the first interval is the major
  // factor); keep them in that order, which is major-to-minor.
  std::vector<bool> grouped(f.dims.size(), false);
  for (int64_t d : in_group) grouped[static_cast<size_t>(d)] = true;
  std::vector<int64_t> perm;
  for (size_t d = 0; d < f.dims.size(); ++d)
    if (!grouped[d]) perm.push_back(static_cast<int64_t>(d));
  int64_t group_size = 1;
  for (int64_t d : in_group) group_size *= f.dims[static_cast<size_t>(d)];
  perm.insert(perm.end(), in_group.begin(), in_group.end());
  const int64_t total = static_cast<int64_t>(device_ids.size());
  std::vector<int64_t> flat = iota_transposed(f.dims, perm, total);
  Groups out(total / group_size);
  for (int64_t g = 0; g < total / group_size; ++g)
    for (int64_t k = 0; k < group_size; ++k) out[g].push_back(static_cast<int>(device_ids[flat[g * group_size + k]]));
  return out;
}

// A mesh replica-group list at the cursor, expanded into groups of device ids.
Result<Groups> parse_mesh_groups(Cursor& c) {
  ASSIGN_OR_RETURN(auto m, parse_mesh(c));
  auto fine = split_axes(m.axes, m.group_axes);
  if (!fine.ok()) return c.fail(fine.error().message);
  auto in_group = group_dims(*fine, m.group_axes);
  if (!in_group.ok()) return c.fail(in_group.error().message);
  return groups_along(*fine, *in_group, m.device_ids);
}

Result<Groups> parse_explicit(Cursor& c) {
  Groups out;
  if (!c.eat('{')) return c.fail("'{'");
  if (c.eat('}')) return out;
  for (;;) {
    ASSIGN_OR_RETURN(auto g, c.list('{', '}'));
    std::vector<int> group;
    for (int64_t v : g) {
      if (v < 0 || v >= kMaxDevices) return c.fail("a device id in [0, 2^20)");
      group.push_back(static_cast<int>(v));
    }
    out.push_back(std::move(group));
    if (c.eat(',')) continue;
    if (c.eat('}')) return out;
    return c.fail("',' or '}' between groups");
  }
}

}  // namespace

Result<Groups> parse_replica_groups(std::string_view text) {
  Cursor c{text};
  Result<Groups> r = Groups{};
  char first = c.peek();
  if (first == '{') r = parse_explicit(c);
  else if (first == '[') r = parse_iota(c);
  else if (first == 'm') r = parse_mesh_groups(c);
  else return c.fail("replica groups '{{...}}', '[G,S]<=[...]' or 'mesh[...] {...}'");
  if (!r.ok()) return r;
  c.ws();
  if (c.p != c.s.size()) return c.fail("the end of replica_groups");
  for (const auto& g : *r)
    for (int v : g)
      if (v < 0 || v >= kMaxDevices) return c.fail("device ids in [0, 2^20)");
  return r;
}

Result<std::vector<std::pair<int, int>>> parse_source_target_pairs(std::string_view text) {
  Cursor c{text};
  ASSIGN_OR_RETURN(auto g, parse_explicit(c));
  c.ws();
  if (c.p != c.s.size()) return c.fail("the end of source_target_pairs");
  std::vector<std::pair<int, int>> out;
  for (const auto& p : g) {
    if (p.size() != 2) return c.fail("pairs {source,target}");
    out.emplace_back(p[0], p[1]);
  }
  return out;
}

GroupMode group_mode(bool has_channel_id, bool has_use_global_device_ids,
                     bool use_global_device_ids) {
  if (!has_channel_id) return GroupMode::kCrossReplica;
  if (!has_use_global_device_ids) return GroupMode::kCrossPartition;
  return use_global_device_ids ? GroupMode::kFlattenedId : GroupMode::kCrossReplicaAndPartition;
}

Result<Groups> resolve_groups(const Groups& groups, GroupMode mode, int replica_count,
                              int num_partitions) {
  const int R = std::max(replica_count, 1), P = std::max(num_partitions, 1);
  if (static_cast<int64_t>(R) * P > kMaxDevices) {
    Error e;
    e.message = "replica_count x num_partitions exceeds 2^20 devices";
    return e;
  }
  auto out_of_range = [](int id, int limit, const char* what) {
    Error e;
    e.message = "replica_groups id " + std::to_string(id) + " is not a valid " + what +
                " (there are " + std::to_string(limit) + ")";
    return e;
  };
  Groups in = groups;
  const int space = mode == GroupMode::kFlattenedId ? R * P
                    : mode == GroupMode::kCrossPartition ? P
                                                         : R;
  if (in.empty()) {
    in.emplace_back();
    for (int i = 0; i < space; ++i) in.back().push_back(i);
  }
  const char* what = mode == GroupMode::kFlattenedId     ? "global device id"
                     : mode == GroupMode::kCrossPartition ? "partition id"
                                                          : "replica id";
  for (const auto& g : in)
    for (int v : g)
      if (v < 0 || v >= space) return out_of_range(v, space, what);
  // Every mode yields at most R * P ids in all (each device in one group); refuse more.
  int64_t ids = 0;
  for (const auto& g : in) ids += static_cast<int64_t>(g.size());
  const int64_t copies = mode == GroupMode::kCrossReplica ? P
                         : mode == GroupMode::kCrossPartition ? R
                         : mode == GroupMode::kCrossReplicaAndPartition ? P
                                                                          : 1;
  if (ids * copies > static_cast<int64_t>(R) * P) {
    Error e;
    e.message = "replica_groups name more devices than the module has (" +
                std::to_string(static_cast<int64_t>(R) * P) + ")";
    return e;
  }
  Groups out;
  switch (mode) {
    case GroupMode::kFlattenedId:
      return in;
    case GroupMode::kCrossReplica:  // replica ids, one group per (group, partition)
      for (int p = 0; p < P; ++p)
        for (const auto& g : in) {
          out.emplace_back();
          for (int r : g) out.back().push_back(r * P + p);
        }
      return out;
    case GroupMode::kCrossPartition:  // partition ids, one group per (replica, group)
      for (int r = 0; r < R; ++r)
        for (const auto& g : in) {
          out.emplace_back();
          for (int p : g) out.back().push_back(r * P + p);
        }
      return out;
    case GroupMode::kCrossReplicaAndPartition:  // replica ids x every partition
      for (const auto& g : in) {
        out.emplace_back();
        for (int r : g)
          for (int p = 0; p < P; ++p) out.back().push_back(r * P + p);
      }
      return out;
  }
  return out;
}

}  // namespace aoizora::hlo
