#include "aoizora/shlo/sharding.h"

#include <cctype>
#include <numeric>

namespace aoizora::shlo {

int64_t Mesh::num_devices() const {
  int64_t n = 1;
  for (const MeshAxis& a : axes) n *= a.size;
  return n;
}

int64_t Mesh::axis_size(std::string_view axis) const {
  for (const MeshAxis& a : axes)
    if (a.name == axis) return a.size;
  return 0;
}

const Mesh* MeshTable::find(std::string_view name) const {
  for (const Mesh& m : meshes)
    if (m.name == name) return &m;
  return nullptr;
}

int64_t MeshTable::size_of(std::string_view mesh, const AxisRef& axis) const {
  if (axis.size > 0) return axis.size;
  const Mesh* m = find(mesh);
  int64_t s = m ? m->axis_size(axis.name) : 0;
  return s > 0 ? s : 1;
}

namespace {

// A tiny cursor over a sharding string.
struct Cursor {
  std::string_view s;
  size_t i = 0;
  void ws() {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
  }
  bool eat(char c) {
    ws();
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  bool eat(std::string_view w) {
    ws();
    if (s.substr(i, w.size()) == w) {
      i += w.size();
      return true;
    }
    return false;
  }
  char peek() {
    ws();
    return i < s.size() ? s[i] : '\0';
  }
  Error error(std::string what) const {
    return Error::parse(what + " at offset " + std::to_string(i) + " in '" + std::string(s) + "'",
                        "", 0, static_cast<int>(i) + 1);
  }
  bool integer(int64_t* out) {
    ws();
    size_t j = i;
    bool neg = j < s.size() && s[j] == '-';
    if (neg) ++j;
    if (j >= s.size() || !std::isdigit(static_cast<unsigned char>(s[j]))) return false;
    int64_t v = 0;
    while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) v = v * 10 + (s[j++] - '0');
    i = j;
    *out = neg ? -v : v;
    return true;
  }
  bool quoted(std::string* out) {
    ws();
    if (i >= s.size() || s[i] != '"') return false;
    size_t j = s.find('"', i + 1);
    if (j == std::string_view::npos) return false;
    *out = std::string(s.substr(i + 1, j - i - 1));
    i = j + 1;
    return true;
  }
  bool ident(std::string* out) {
    ws();
    size_t j = i;
    while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' ||
                            s[j] == '.' || s[j] == '$'))
      ++j;
    if (j == i) return false;
    *out = std::string(s.substr(i, j - i));
    i = j;
    return true;
  }
};

// {"x", "y":(2)2, ?}
Result<DimSharding> parse_dim(Cursor& c, std::vector<AxisRef>* list_only = nullptr) {
  DimSharding d;
  if (!c.eat('{')) return c.error("expected '{' of a dimension sharding");
  if (c.eat('}')) return d;
  while (true) {
    if (c.eat('?')) {
      d.open = true;
    } else {
      AxisRef a;
      if (!c.quoted(&a.name)) return c.error("expected a quoted axis name");
      if (c.eat(':')) {
        if (!c.eat('(') || !c.integer(&a.pre) || !c.eat(')') || !c.integer(&a.size))
          return c.error("expected a sub-axis ':(pre)size'");
      }
      d.axes.push_back(a);
    }
    if (c.eat('}')) break;
    if (!c.eat(',')) return c.error("expected ',' or '}' in a dimension sharding");
  }
  // Priorities ("p0") only rank propagation choices; the sharding is the same.
  if (c.peek() == 'p') {
    ++c.i;
    int64_t ignored;
    c.integer(&ignored);
  }
  if (list_only) *list_only = d.axes;
  return d;
}

}  // namespace

Result<TensorSharding> parse_sdy_sharding(std::string_view text) {
  Cursor c{text};
  c.eat("#sdy.sharding");
  bool angle = c.eat('<');
  TensorSharding t;
  if (c.eat('@')) {
    if (!c.ident(&t.mesh)) return c.error("expected a mesh name after '@'");
  } else if (c.eat("mesh")) {
    // Inline mesh: mesh<["x"=2]>; keep it anonymous (axes resolve by size 0 -> 1).
    int depth = 0;
    while (c.i < c.s.size()) {
      char ch = c.s[c.i++];
      if (ch == '<') ++depth;
      if (ch == '>' && --depth == 0) break;
    }
    t.mesh = "inline";
  } else {
    return c.error("expected '@mesh' at the start of a sharding");
  }
  if (!c.eat(',')) return c.error("expected ',' after the mesh name");
  if (!c.eat('[')) return c.error("expected '[' of the dimension shardings");
  if (!c.eat(']')) {
    while (true) {
      ASSIGN_OR_RETURN(DimSharding d, parse_dim(c));
      t.dims.push_back(std::move(d));
      if (c.eat(']')) break;
      if (!c.eat(',')) return c.error("expected ',' or ']' between dimension shardings");
    }
  }
  while (c.eat(',')) {
    std::string key;
    if (!c.ident(&key) || !c.eat('=')) return c.error("expected 'replicated=' or 'unreduced='");
    std::vector<AxisRef> axes;
    RETURN_IF_ERROR(parse_dim(c, &axes));
    if (key == "replicated") t.replicated = axes;
  }
  if (angle && !c.eat('>')) return c.error("expected '>' at the end of a sharding");
  return t;
}

namespace {

// "a,b,c]": integers up to the closing bracket.
Result<std::vector<int64_t>> int_list(Cursor& c, const char* expect_int,
                                      const char* expect_comma) {
  std::vector<int64_t> out;
  while (true) {
    int64_t v;
    if (!c.integer(&v)) return c.error(expect_int);
    out.push_back(v);
    if (c.eat(']')) return out;
    if (!c.eat(',')) return c.error(expect_comma);
  }
}

// "<=[r0,r1,...]T(p0,p1,...)" read up to its '<=[': the device id of each of the `total`
// tile positions in row-major tile order, iota(r) transposed by p and flattened.
Result<std::vector<int64_t>> iota_device_ids(Cursor& c, int64_t total) {
  std::vector<int64_t> ids(static_cast<size_t>(total));
  ASSIGN_OR_RETURN(const std::vector<int64_t> rdims,
                   int_list(c, "expected an iota dimension", "expected ',' in the iota shape"));
  std::vector<int64_t> perm(rdims.size());
  std::iota(perm.begin(), perm.end(), 0);
  if (c.eat("T(")) {
    for (size_t k = 0; k < perm.size(); ++k) {
      if (!c.integer(&perm[k])) return c.error("expected a transpose permutation");
      c.eat(',');
    }
    if (!c.eat(')')) return c.error("expected ')' after the permutation");
  }
  // iota(rdims) transposed by perm, flattened.
  std::vector<int64_t> tdims(perm.size()), rstride(rdims.size(), 1);
  for (size_t k = rdims.size(); k-- > 1;) rstride[k - 1] = rstride[k] * rdims[k];
  for (size_t k = 0; k < perm.size(); ++k) tdims[k] = rdims[static_cast<size_t>(perm[k])];
  std::vector<int64_t> idx(perm.size(), 0);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t id = 0;
    for (size_t k = 0; k < perm.size(); ++k) id += idx[k] * rstride[static_cast<size_t>(perm[k])];
    ids[static_cast<size_t>(flat)] = id;
    for (size_t k = perm.size(); k-- > 0;) {
      if (++idx[k] < tdims[k]) break;
      idx[k] = 0;
    }
  }
  return ids;
}

}  // namespace

Result<TensorSharding> parse_gspmd_sharding(std::string_view text, int64_t num_devices,
                                            Mesh* mesh) {
  Cursor c{text};
  TensorSharding t;
  c.eat('"');
  if (!c.eat('{')) return c.error("expected '{' of a GSPMD sharding");
  if (c.eat("replicated")) return t;
  if (c.eat("manual")) {
    t.manual = true;
    return t;
  }
  if (c.eat("maximal")) {
    t.maximal = true;
    return t;
  }
  if (!c.eat("devices=[")) return c.error("expected 'devices=[' in a GSPMD sharding");
  ASSIGN_OR_RETURN(const std::vector<int64_t> tile,
                   int_list(c, "expected a tile dimension", "expected ',' in the tile shape"));
  int64_t total = std::accumulate(tile.begin(), tile.end(), int64_t{1}, std::multiplies<>());
  // Device id of each tile position, in row-major tile order.
  std::vector<int64_t> ids(static_cast<size_t>(total));
  if (c.eat("<=[")) {
    ASSIGN_OR_RETURN(ids, iota_device_ids(c, total));
  } else {
    for (int64_t k = 0; k < total; ++k) {
      if (!c.integer(&ids[static_cast<size_t>(k)])) return c.error("expected a device id");
      c.eat(',');
    }
  }
  bool replicate_last = c.eat("last_tile_dim_replicate");
  if (!replicate_last && c.eat("last_tile_dims={")) {
    // Subgroup types (manual/replicated) on the trailing tile dims: treat as replicated.
    while (c.i < c.s.size() && c.s[c.i] != '}') ++c.i;
    c.eat('}');
    replicate_last = true;
  }
  (void)num_devices;
  // Each tiled dimension becomes an axis named by the stride of device ids along it.
  std::vector<int64_t> stride(tile.size(), 1);
  for (size_t k = tile.size(); k-- > 1;) stride[k - 1] = stride[k] * tile[k];
  if (mesh->name.empty()) mesh->name = "gspmd";
  t.mesh = mesh->name;
  size_t ndims = replicate_last ? tile.size() - 1 : tile.size();
  for (size_t d = 0; d < ndims; ++d) {
    DimSharding ds;
    if (tile[d] > 1) {
      int64_t s = ids.size() > static_cast<size_t>(stride[d]) ? ids[static_cast<size_t>(stride[d])] - ids[0] : 1;
      std::string name = "s" + std::to_string(s) + "x" + std::to_string(tile[d]);
      if (mesh->axis_size(name) == 0) mesh->axes.push_back({name, tile[d]});
      ds.axes.push_back({name, 1, 0});
    }
    t.dims.push_back(ds);
  }
  return t;
}

int64_t shard_factor(const MeshTable& meshes, const TensorSharding& s, size_t d) {
  if (d >= s.dims.size()) return 1;
  int64_t f = 1;
  for (const AxisRef& a : s.dims[d].axes) f *= meshes.size_of(s.mesh, a);
  return f;
}

std::vector<AxisRef> used_axes(const TensorSharding& s) {
  std::vector<AxisRef> out;
  for (const DimSharding& d : s.dims)
    for (const AxisRef& a : d.axes) out.push_back(a);
  return out;
}

std::string to_string(const AxisRef& a) {
  std::string s = "\"" + a.name + "\"";
  if (a.size > 0) s += ":(" + std::to_string(a.pre) + ")" + std::to_string(a.size);
  return s;
}

std::string axis_label(const AxisRef& a) {
  if (a.size <= 0) return a.name;
  return a.name + ":(" + std::to_string(a.pre) + ")" + std::to_string(a.size);
}

std::vector<std::string> axis_labels(const std::vector<AxisRef>& axes) {
  std::vector<std::string> out;
  for (const AxisRef& a : axes) out.push_back(axis_label(a));
  return out;
}

std::string to_string(const TensorSharding& s) {
  if (s.manual) return "{manual}";
  std::string out = "[";
  for (size_t d = 0; d < s.dims.size(); ++d) {
    if (d) out += ", ";
    out += "{";
    for (size_t k = 0; k < s.dims[d].axes.size(); ++k) {
      if (k) out += ", ";
      out += to_string(s.dims[d].axes[k]);
    }
    if (s.dims[d].open) out += s.dims[d].axes.empty() ? "?" : ", ?";
    out += "}";
  }
  return out + "]";
}

int64_t num_shards(const MeshTable& meshes, const TensorSharding& s) {
  int64_t n = 1;
  for (size_t d = 0; d < s.dims.size(); ++d) n *= shard_factor(meshes, s, d);
  return n;
}

}  // namespace aoizora::shlo
