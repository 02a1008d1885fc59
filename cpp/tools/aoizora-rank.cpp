// aoizora-rank: the placements of a compiled HLO best first by Q2, with JAX's default
// placement and the ratio, without Python. Same ranking as `aoizora rank`, on the same
// mesh: --mesh, else the program's own (hlo/own_mesh.h).
//
//   aoizora-rank --hlo FILE --topology T [--hardware FILE] [--mesh AxB] [--top N] [--seed S]
//                [--search-iterations N] [--search-starts N] [--json]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "aoizora/hlo/hlo_loader.h"
#include "aoizora/hlo/own_mesh.h"
#include "aoizora/stage2/placement_search.h"
#include "aoizora/topo/catalog.h"

using namespace aoizora;

namespace {

int usage(const char* msg) {
  std::fprintf(stderr,
               "aoizora-rank: %s\nusage: aoizora-rank --hlo FILE --topology T [--hardware FILE] [--mesh AxB] "
               "[--top N] [--seed S] [--search-iterations N] [--search-starts N] [--json]\n",
               msg);
  return 2;
}

bool parse_mesh(const std::string& s, std::vector<int>* out) {
  out->clear();
  size_t i = 0;
  while (i <= s.size()) {
    size_t j = s.find('x', i);
    if (j == std::string::npos) j = s.size();
    const std::string part = s.substr(i, j - i);
    if (part.empty()) return false;
    char* end = nullptr;
    const long v = std::strtol(part.c_str(), &end, 10);
    if (*end != '\0' || v < 1) return false;
    out->push_back(static_cast<int>(v));
    i = j + 1;
  }
  return !out->empty();
}

std::string coords_json(const topo::Topology& t, const std::vector<int>& device_of) {
  std::string s = "[";
  for (size_t i = 0; i < device_of.size(); ++i) {
    const topo::DeviceCoords c = t.device_coords(device_of[i]);
    s += (i ? ",[" : "[") + std::to_string(c[0]) + "," + std::to_string(c[1]) + "," +
         std::to_string(c[2]);
    if (t.cores_per_chip() > 1) s += "," + std::to_string(c[3]);  // (x, y, z, core)
    s += "]";
  }
  return s + "]";
}

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  std::string hlo_path, topo_name, hardware_path, mesh_text;
  int top = 10;
  bool json = false;
  stage2::RankOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--json") {
      json = true;
    } else if (a == "--hlo" && (v = next())) {
      hlo_path = v;
    } else if (a == "--topology" && (v = next())) {
      topo_name = v;
    } else if (a == "--hardware" && (v = next())) {
      hardware_path = v;
    } else if (a == "--mesh" && (v = next())) {
      mesh_text = v;
    } else if (a == "--top" && (v = next())) {
      top = std::atoi(v);
    } else if (a == "--seed" && (v = next())) {
      options.search.seed = std::strtoull(v, nullptr, 10);
    } else if (a == "--search-iterations" && (v = next())) {
      options.search.iterations = std::atoi(v);
    } else if (a == "--search-starts" && (v = next())) {
      options.search_starts = std::atoi(v);
    } else if (a == "-h" || a == "--help") {
      return usage("rank placements of a compiled HLO by Q2"), 0;
    } else {
      return usage(("unknown or incomplete argument '" + a + "'").c_str());
    }
  }
  if (hlo_path.empty() || topo_name.empty()) return usage("--hlo and --topology are required");
  Result<topo::Topology> t = topo::make_topology(topo_name, hardware_path);
  if (!t.ok()) return std::fprintf(stderr, "aoizora-rank: %s\n", t.error().to_string().c_str()), 2;
  Result<hlo::CollectiveGraph> g = hlo::collective_graph_from_file(hlo_path);
  if (!g.ok()) return std::fprintf(stderr, "aoizora-rank: %s\n", g.error().to_string().c_str()), 2;
  std::vector<int> mesh;
  if (!mesh_text.empty()) {
    if (!parse_mesh(mesh_text, &mesh)) return usage("--mesh expects sizes like 2x4");
  } else {  // the program's own mesh, as `aoizora rank` takes it (hlo/own_mesh.h)
    std::ifstream in(hlo_path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    mesh = hlo::own_mesh(text.str(), g->num_partitions);
  }
  const auto t0 = std::chrono::steady_clock::now();
  Result<stage2::Ranking> r = stage2::rank_placements(*g, *t, mesh, options);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok()) return std::fprintf(stderr, "aoizora-rank: %s\n", r.error().to_string().c_str()), 2;
  const double dq2 = r->jax_default ? r->jax_default->q2 : 0;
  const auto& best = r->ranked.front();
  std::string mesh_s, mesh_list = "[";
  for (size_t i = 0; i < mesh.size(); ++i) {
    mesh_s += (i ? "x" : "") + std::to_string(mesh[i]);
    mesh_list += (i ? ", " : "") + std::to_string(mesh[i]);
  }
  mesh_list += "]";
  const size_t shown = std::min<size_t>(static_cast<size_t>(std::max(top, 0)), r->ranked.size());
  if (json) {
    std::printf("{\"hlo\": %s, \"topology\": %s, \"mesh\": %s, \"num_partitions\": %d,\n",
                quote(hlo_path).c_str(), quote(t->name).c_str(), mesh_list.c_str(),
                g->num_partitions);
    if (r->jax_default)
      std::printf(" \"default\": {\"name\": %s, \"q2_seconds\": %.9g, \"device_coords\": %s},\n",
                  quote(r->jax_default->placement.name).c_str(), dq2,
                  coords_json(*t, r->jax_default->placement.device_of).c_str());
    else
      std::printf(" \"default\": null, \"default_error\": %s,\n", quote(r->default_error).c_str());
    if (dq2 > 0 && best.q2 > 0) std::printf(" \"best_over_default\": %.6g,\n", dq2 / best.q2);
    std::printf(" \"evaluated\": %d, \"planning_seconds\": %.6g,\n \"ranked\": [\n", r->evaluated, elapsed);
    for (size_t i = 0; i < shown; ++i) {
      const auto& e = r->ranked[i];
      std::printf("  {\"rank\": %zu, \"name\": %s, \"q2_seconds\": %.9g, \"device_coords\": %s}%s\n",
                  i + 1, quote(e.placement.name).c_str(), e.q2,
                  coords_json(*t, e.placement.device_of).c_str(), i + 1 < shown ? "," : "");
    }
    std::printf(" ]}\n");
    return 0;
  }
  std::printf("%s on %s, mesh %s: %zu distinct placements, %d Q2 evaluations in %.3f s "
              "(predicted, model of %s)\n",
              hlo_path.c_str(), t->name.c_str(), mesh_s.c_str(), r->ranked.size(), r->evaluated,
              elapsed, t->name.c_str());
  std::printf("%4s  %10s  %10s  %s\n", "rank", "Q2 ms", "vs default", "placement");
  for (size_t i = 0; i < shown; ++i) {
    const auto& e = r->ranked[i];
    char ratio[32] = "-";
    if (dq2 > 0 && e.q2 > 0) std::snprintf(ratio, sizeof ratio, "%.3fx", dq2 / e.q2);
    std::printf("%4zu  %10.4f  %10s  %s\n", i + 1, e.q2 * 1e3, ratio, e.placement.name.c_str());
  }
  if (r->jax_default)
    std::printf("default (jax.make_mesh): Q2 %.4f ms (%s); best / default: %.3fx\n", dq2 * 1e3,
                r->jax_default->placement.name.c_str(), dq2 / best.q2);
  else
    std::printf("default (jax.make_mesh): none, JAX refuses this mesh: %s\n", r->default_error.c_str());
  return 0;
}
