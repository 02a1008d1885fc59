// Topologies described in JSON, so that a user can model another fabric. Two forms:
//   grid:     {"name": "...", "generation": "v5e", "dims": [4, 4, 1], "wrap": [true, false, false],
//              "spec": {...}}
//   explicit: {"name": "...", "spec": {...}, "chips": [[x, y, z], ...],
//              "links": [{"src": 0, "dst": 1, "bandwidth": 4.5e10, "latency": 1e-6,
//                         "bidirectional": true}, ...]}
// "spec" (all optional, defaulting to "generation"'s figures, else zero): device_kind,
// peak_flops, hbm_bytes, hbm_bandwidth, link_bandwidth, hop_latency, cores_per_chip (1 or 2)
// and intra_chip_link {"bandwidth", "latency"} (required with two cores). Explicit links
// route by fewest hops.
// A "name" from the catalog ("v5e:2x4") is refused unless the file is that very slice,
// figures included: plans and plan.json go by the name.
#include <algorithm>
#include <cstdio>
#include <utility>

#include "aoizora/topo/json.h"
#include "aoizora/topo/catalog.h"

namespace aoizora::topo {
namespace {

Result<std::array<int, 3>> triple(const json::Value& v, const char* what, int fill) {
  if (!v.is_array() || v.array.empty() || v.array.size() > 3)
    return Error{std::string("'") + what + "' must be an array of 1 to 3 numbers", ""};
  std::array<int, 3> out{fill, fill, fill};
  for (size_t i = 0; i < v.array.size(); ++i) {
    const json::Value& e = v.array[i];
    if (e.type == json::Value::Type::kBool) {
      out[i] = e.boolean ? 1 : 0;
    } else if (e.is_number()) {
      out[i] = static_cast<int>(e.number);
    } else {
      return Error{std::string("'") + what + "' must hold numbers", ""};
    }
  }
  return out;
}

double number_or(const json::Value* obj, const char* key, double fallback) {
  if (obj == nullptr) return fallback;
  const json::Value* v = obj->find(key);
  return v != nullptr && v->is_number() ? v->number : fallback;
}

std::string shape_text(const Topology& t, bool with_wrap) {
  std::string out = "dims " + std::to_string(t.dims[0]) + "x" + std::to_string(t.dims[1]) + "x" +
                    std::to_string(t.dims[2]);
  if (!with_wrap) return out;
  std::string axes;
  for (int d = 0; d < 3; ++d)
    if (t.wrap[static_cast<size_t>(d)])
      axes += (axes.empty() ? "" : ",") + std::string(1, "xyz"[d]);
  return out + (axes.empty() ? " without wraparound" : " wrapped on " + axes);
}

// The first chip figure in which `a` differs from `b`, as "spec.link_bandwidth 9e+10, the
// catalog's 4.5e+10"; "its chip figures" when the difference is elsewhere.
std::string spec_difference(const ChipSpec& a, const ChipSpec& b) {
  const std::pair<const char*, double ChipSpec::*> figures[] = {
      {"peak_flops", &ChipSpec::peak_flops}, {"hbm_bytes", &ChipSpec::hbm_bytes},
      {"hbm_bandwidth", &ChipSpec::hbm_bandwidth}, {"link_bandwidth", &ChipSpec::link_bandwidth},
      {"hop_latency", &ChipSpec::hop_latency}};
  auto g = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  for (const auto& [key, field] : figures)
    if (a.*field != b.*field)
      return std::string("spec.") + key + " " + g(a.*field) + ", the catalog's " + g(b.*field);
  if (a.cores_per_chip != b.cores_per_chip)
    return "spec.cores_per_chip " + std::to_string(a.cores_per_chip) + ", the catalog's " +
           std::to_string(b.cores_per_chip);
  return "its chip figures";
}

// Why `t`, read from a file, may not carry its name: the name is a catalog slice's (plans,
// plan.json and the compile target go by it) and `t` is another slice or has other chip
// figures. Empty when the name is no catalog name, or `t` is that slice exactly.
std::string catalog_name_conflict(const Topology& t) {
  if (t.name.size() >= 5 && t.name.compare(t.name.size() - 5, 5, ".json") == 0) return "";
  const Result<Topology> c = make_topology(t.name);
  if (!c.ok()) return "";
  const bool wrap_differs = t.wrap != c->wrap;
  const std::string head = "'name' " + t.name + " is the catalog slice of " +
                           shape_text(*c, wrap_differs) + ", but this file ";
  const std::string rename = ": give the file another 'name', or use " + c->name + " itself";
  if (t.dims != c->dims || wrap_differs)
    return head + "gives " + shape_text(t, wrap_differs) + rename;
  if (!t.is_grid()) return head + "lists chips and links of its own" + rename;
  if (t.spec.generation != c->spec.generation)
    return head + "gives generation '" + t.spec.generation + "' (the catalog's '" +
           c->spec.generation + "')" + rename;
  if (!(t.spec == c->spec))
    return head + "gives " + spec_difference(t.spec, c->spec) +
           ": give the file another 'name', or keep " + c->name +
           " and give its chip figures with --hardware FILE";
  return "";
}

// The chip figures: "generation"'s, overridden by "spec"'s fields.
Result<ChipSpec> read_spec(const json::Value& root, const std::string& name) {
  ChipSpec spec;
  if (const json::Value* g = root.find("generation"); g != nullptr) {
    Result<ChipSpec> base = chip_spec(g->string);
    if (!base.ok()) return base.error().in_file(name);
    spec = *base;
  } else {
    spec.generation = "custom";
  }
  const json::Value* s = root.find("spec");
  if (s != nullptr) {
    if (const json::Value* k = s->find("device_kind"); k != nullptr) spec.device_kind = k->string;
    spec.peak_flops = number_or(s, "peak_flops", spec.peak_flops);
    spec.hbm_bytes = number_or(s, "hbm_bytes", spec.hbm_bytes);
    spec.hbm_bandwidth = number_or(s, "hbm_bandwidth", spec.hbm_bandwidth);
    spec.link_bandwidth = number_or(s, "link_bandwidth", spec.link_bandwidth);
    spec.hop_latency = number_or(s, "hop_latency", spec.hop_latency);
    spec.vector_ops_per_second = number_or(s, "vector_ops_per_second", spec.vector_ops_per_second);
    spec.transcendentals_per_second =
        number_or(s, "transcendentals_per_second", spec.transcendentals_per_second);
    spec.grid_step_seconds = number_or(s, "grid_step_seconds", spec.grid_step_seconds);
    // Two TensorCores per chip need the link between them (topo/topology.h).
    spec.cores_per_chip = static_cast<int>(number_or(s, "cores_per_chip", spec.cores_per_chip));
    if (const json::Value* l = s->find("intra_chip_link"); l != nullptr && l->is_object())
      spec.intra_chip_link = IntraChipLink{number_or(l, "bandwidth", 0), number_or(l, "latency", 0)};
    if (spec.cores_per_chip == 1) spec.intra_chip_link.reset();
  }
  if (spec.cores_per_chip != 1 && spec.cores_per_chip != 2)
    return Error{"spec.cores_per_chip must be 1 or 2", name};
  if (spec.cores_per_chip == 2 && (!spec.intra_chip_link || spec.intra_chip_link->bandwidth <= 0))
    return Error{"spec.cores_per_chip is 2: spec.intra_chip_link needs a positive bandwidth", name};
  return spec;
}

// {"dims": [...], "wrap": [...]}: a grid of the catalog's kind.
Result<Topology> read_grid(const json::Value& root, const json::Value& d,
                           const std::string& topo_name, const ChipSpec& spec,
                           const std::string& name) {
  Result<std::array<int, 3>> dims = triple(d, "dims", 1);
  if (!dims.ok()) return dims.error().in_file(name);
  for (int x : *dims)
    if (x < 1) return Error{"'dims' must be positive", name};
  std::array<bool, 3> wrap{false, false, false};
  if (const json::Value* w = root.find("wrap"); w != nullptr) {
    Result<std::array<int, 3>> wr = triple(*w, "wrap", 0);
    if (!wr.ok()) return wr.error().in_file(name);
    for (int i = 0; i < 3; ++i) wrap[static_cast<size_t>(i)] = (*wr)[static_cast<size_t>(i)] != 0;
  }
  if (spec.link_bandwidth <= 0) return Error{"spec.link_bandwidth must be positive", name};
  return Topology::grid(topo_name, *dims, wrap, spec);
}

// Every chip must reach every other, and be reached, or some flows would have no route.
Status check_connected(const Topology& t, const std::string& name) {
  const int n = t.num_chips();
  for (int pass = 0; pass < 2 && n > 0; ++pass) {
    std::vector<std::vector<int>> adj(static_cast<size_t>(n));
    for (const Link& l : t.links)
      adj[static_cast<size_t>(pass == 0 ? l.src : l.dst)].push_back(pass == 0 ? l.dst : l.src);
    std::vector<char> seen(static_cast<size_t>(n), 0);
    std::vector<int> stack{0};
    seen[0] = 1;
    while (!stack.empty()) {
      const int c = stack.back();
      stack.pop_back();
      for (int m : adj[static_cast<size_t>(c)])
        if (!seen[static_cast<size_t>(m)]) seen[static_cast<size_t>(m)] = 1, stack.push_back(m);
    }
    for (int c = 0; c < n; ++c)
      if (!seen[static_cast<size_t>(c)])
        return Error{"chip " + std::to_string(c) + (pass == 0 ? " cannot be reached from" : " cannot reach") +
                         " chip 0 over the links: the fabric must be connected",
                     name};
  }
  return Status::success();
}

// {"chips": [[x, y, z], ...], "links": [...]}: any fabric, routed by fewest hops.
Result<Topology> read_explicit(const json::Value& root, const std::string& topo_name,
                               const ChipSpec& spec, const std::string& name) {
  const json::Value* chips = root.find("chips");
  const json::Value* links = root.find("links");
  if (chips == nullptr || !chips->is_array() || links == nullptr || !links->is_array())
    return Error{"a topology file needs either 'dims' or both 'chips' and 'links' arrays", name};
  Topology t;
  t.name = topo_name;
  t.spec = spec;
  t.dims = {1, 1, 1};
  for (const json::Value& c : chips->array) {
    Result<std::array<int, 3>> xyz = triple(c, "chips[i]", 0);
    if (!xyz.ok()) return xyz.error().in_file(name);
    for (int d = 0; d < 3; ++d) {
      if ((*xyz)[static_cast<size_t>(d)] < 0) return Error{"chip coordinates must be >= 0", name};
      t.dims[static_cast<size_t>(d)] = std::max(t.dims[static_cast<size_t>(d)], (*xyz)[static_cast<size_t>(d)] + 1);
    }
    t.chips.push_back(Chip{static_cast<int>(t.chips.size()), *xyz});
  }
  const int n = t.num_chips();
  for (const json::Value& l : links->array) {
    const json::Value* src = l.find("src");
    const json::Value* dst = l.find("dst");
    if (src == nullptr || dst == nullptr || !src->is_number() || !dst->is_number())
      return Error{"each link needs numeric 'src' and 'dst' chip indices", name};
    const int a = static_cast<int>(src->number);
    const int b = static_cast<int>(dst->number);
    if (a < 0 || a >= n || b < 0 || b >= n || a == b)
      return Error{"link " + std::to_string(a) + "->" + std::to_string(b) +
                       " names a chip outside 0.." + std::to_string(n - 1) + " or itself",
                   name};
    Link link;
    link.dim = -1;
    link.dir = 0;
    link.bandwidth = number_or(&l, "bandwidth", spec.link_bandwidth);
    link.latency = number_or(&l, "latency", spec.hop_latency);
    if (link.bandwidth <= 0) return Error{"link bandwidth must be positive", name};
    const json::Value* bidi = l.find("bidirectional");
    const bool both = bidi == nullptr || bidi->boolean;
    for (int k = 0; k < (both ? 2 : 1); ++k) {
      link.id = t.num_links();
      link.src = k == 0 ? a : b;
      link.dst = k == 0 ? b : a;
      t.links.push_back(link);
    }
  }
  t.add_core_links();  // a generation with two cores per chip (tpu7x) gets its intra-chip links
  t.reindex();
  RETURN_IF_ERROR(check_connected(t, name));
  return t;
}

Result<Topology> read_topology(const std::string& text, const std::string& name) {
  ASSIGN_OR_RETURN(json::Value parsed, json::parse(text, name));
  const json::Value& root = parsed;
  if (!root.is_object()) return Error{"a topology file must hold a JSON object", name};
  ASSIGN_OR_RETURN(ChipSpec spec, read_spec(root, name));
  std::string topo_name = name;
  if (const json::Value* n = root.find("name"); n != nullptr && !n->string.empty())
    topo_name = n->string;
  if (const json::Value* d = root.find("dims"); d != nullptr)
    return read_grid(root, *d, topo_name, spec, name);
  return read_explicit(root, topo_name, spec, name);
}

}  // namespace

Result<Topology> topology_from_json(const std::string& text, const std::string& name) {
  ASSIGN_OR_RETURN(Topology t, read_topology(text, name));
  if (const std::string why = catalog_name_conflict(t); !why.empty()) return Error{why, name};
  return t;
}

}  // namespace aoizora::topo
