// The catalog of TPU slices by name, and make_topology(), which also accepts a JSON file
// (topo/catalog.h). Chip figures come from the shipped hardware profiles (topo/profile.h).
//
// Wraparound rules (REFERENCE.md §2): v5e/v6e slices wrap only an axis of length 16;
// v4/v5p/TPU7x slices are tori (every axis wraps) only when made of whole 4x4x4 cubes, and
// smaller slices (2x2x1, 2x2x2, 2x2x4, 2x4x4) are plain meshes. Twisted tori are not modelled.
#include <fstream>
#include <sstream>

#include "aoizora/topo/catalog.h"

namespace aoizora::topo {
namespace {

struct Generation {
  const char* name;
  int rank;  // 2 for v5e/v6e names "AxB", 3 for v4/v5p/7x names "AxBxC"
};

const std::vector<Generation>& generations() {
  static const std::vector<Generation> g = {
      {"v4", 3}, {"v5e", 2}, {"v5p", 3}, {"v6e", 2}, {"tpu7x", 3}};
  return g;
}

std::string canonical_generation(const std::string& gen) {
  return gen == "7x" || gen == "v7x" || gen == "TPU7x" ? "tpu7x" : gen;
}

// The shipped profiles, parsed once. A shipped profile that does not parse is a build
// defect; it surfaces as the error of every lookup of that generation.
const Result<HardwareProfile>& shipped(const std::string& gen) {
  static const std::vector<Result<HardwareProfile>> parsed = [] {
    std::vector<Result<HardwareProfile>> out;
    for (const Generation& g : generations()) {
      const std::string text = shipped_profile_text(g.name);
      out.push_back(text.empty() ? Result<HardwareProfile>(Error::internal(
                                       std::string("no shipped profile for ") + g.name))
                                 : profile_from_json(text, std::string("profiles/") + g.name + ".json"));
    }
    return out;
  }();
  for (size_t i = 0; i < generations().size(); ++i)
    if (gen == generations()[i].name) return parsed[i];
  static const Result<HardwareProfile> none(Error::internal(""));
  return none;
}

// The slice shapes each family offers (x, y[, z]).
const std::vector<std::array<int, 3>>& shapes_2d() {
  static const std::vector<std::array<int, 3>> s = {
      {1, 1, 1}, {2, 2, 1}, {2, 4, 1}, {4, 4, 1}, {4, 8, 1}, {8, 8, 1}, {8, 16, 1}, {16, 16, 1}};
  return s;
}
const std::vector<std::array<int, 3>>& shapes_3d() {
  static const std::vector<std::array<int, 3>> s = {
      {1, 1, 1}, {2, 2, 1}, {2, 2, 2}, {2, 2, 4}, {2, 4, 4}, {4, 4, 4}, {4, 4, 8}, {4, 8, 8},
      {8, 8, 8}, {8, 8, 16}, {8, 16, 16}, {16, 16, 16}};
  return s;
}

std::string shape_string(const std::array<int, 3>& s, int rank) {
  std::string out = std::to_string(s[0]) + "x" + std::to_string(s[1]);
  if (rank == 3) out += "x" + std::to_string(s[2]);
  return out;
}

std::array<bool, 3> wrap_rule(const Generation& g, const std::array<int, 3>& dims) {
  std::array<bool, 3> wrap{false, false, false};
  if (g.rank == 2) {
    for (int d = 0; d < 2; ++d) wrap[d] = dims[d] == 16;
  } else {
    bool cubes = true;
    for (int d = 0; d < 3; ++d) cubes = cubes && dims[d] % 4 == 0;
    if (cubes) wrap = {true, true, true};
  }
  return wrap;
}

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string valid_list() {
  std::string out;
  for (const std::string& n : catalog_names()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::vector<std::string> catalog_names() {
  std::vector<std::string> names;
  for (const Generation& g : generations())
    for (const auto& s : g.rank == 2 ? shapes_2d() : shapes_3d())
      names.push_back(std::string(g.name) + ":" + shape_string(s, g.rank));
  return names;
}

Result<HardwareProfile> hardware_profile(const std::string& generation) {
  const std::string gen = canonical_generation(generation);
  for (const Generation& g : generations())
    if (gen == g.name) return shipped(gen);
  std::string valid;
  for (const Generation& g : generations()) valid += (valid.empty() ? "" : ", ") + std::string(g.name);
  return Error::not_found("unknown TPU generation '" + generation + "': valid generations are " + valid);
}

Result<ChipSpec> chip_spec(const std::string& generation) {
  ASSIGN_OR_RETURN(HardwareProfile p, hardware_profile(generation));
  return p.spec;
}

ChipSpec default_chip_spec() {
  static const ChipSpec v5e = chip_spec("v5e").value();
  return v5e;
}

Result<Topology> with_hardware(Topology t, const ChipSpec& spec) {
  if (t.spec.generation != "custom" && t.spec.generation != spec.generation)
    return Error{"the hardware profile is for '" + spec.generation + "' but topology " + t.name +
                 " is " + t.spec.generation, ""};
  if (spec.cores_per_chip != t.spec.cores_per_chip)
    return Error{"the hardware profile has " + std::to_string(spec.cores_per_chip) +
                 " cores per chip but topology " + t.name + " has " +
                 std::to_string(t.spec.cores_per_chip), ""};
  t.spec = spec;
  for (Link& l : t.links) {
    if (l.dim == kCoreAxis) {
      l.bandwidth = spec.intra_chip_link->bandwidth;
      l.latency = spec.intra_chip_link->latency;
    } else if (l.dim >= 0) {
      l.bandwidth = spec.link_bandwidth;
      l.latency = spec.hop_latency;
    }
  }
  return t;
}

Result<Topology> make_topology(const std::string& name_or_path, const std::string& hardware_path) {
  Result<Topology> t = make_topology(name_or_path);
  if (!t.ok() || hardware_path.empty()) return t;
  ASSIGN_OR_RETURN(HardwareProfile p, read_profile_file(hardware_path));
  Result<Topology> out = with_hardware(std::move(t).value(), p.spec);
  if (!out.ok()) return out.error().in_file(hardware_path);
  return out;
}

Result<Topology> make_topology(const std::string& name_or_path) {
  if (has_suffix(name_or_path, ".json")) {
    std::ifstream in(name_or_path);
    if (!in) return Error::not_found("cannot open topology file '" + name_or_path + "'", name_or_path);
    std::stringstream ss;
    ss << in.rdbuf();
    Result<Topology> t = topology_from_json(ss.str(), name_or_path);
    if (!t.ok()) {
      Error e = t.error();
      if (e.file.empty()) e.file = name_or_path;
      return e;
    }
    return t;
  }
  const size_t colon = name_or_path.find(':');
  const std::string gen =
      canonical_generation(colon == std::string::npos ? "" : name_or_path.substr(0, colon));
  const Generation* found = nullptr;
  for (const Generation& g : generations())
    if (gen == g.name) found = &g;
  if (found != nullptr) {
    const std::string shape = name_or_path.substr(colon + 1);
    for (const auto& s : found->rank == 2 ? shapes_2d() : shapes_3d()) {
      if (shape != shape_string(s, found->rank)) continue;
      const Result<HardwareProfile>& p = shipped(found->name);
      if (!p.ok()) return p.error();
      return Topology::grid(std::string(found->name) + ":" + shape, s, wrap_rule(*found, s),
                            p->spec);
    }
  }
  return Error::not_found("unknown topology '" + name_or_path +
                          "': use a JSON file (*.json) or one of " + valid_list());
}

}  // namespace aoizora::topo
