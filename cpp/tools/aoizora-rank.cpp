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
#include <optional>
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

// The command line, read; `exit` set when the run should end with that status (help, or a
// usage error already printed).
struct Args {
  std::string hlo_path, topo_name, hardware_path, mesh_text;
  int top = 10;
  bool json = false;
  stage2::RankOptions options;
  std::optional<int> exit;
};

Args parse_args(int argc, char** argv) {
  Args out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--json") {
      out.json = true;
    } else if (a == "--hlo" && (v = next())) {
      out.hlo_path = v;
    } else if (a == "--topology" && (v = next())) {
      out.topo_name = v;
    } else if (a == "--hardware" && (v = next())) {
      out.hardware_path = v;
    } else if (a == "--mesh" && (v = next())) {
      out.mesh_text = v;
    } else if (a == "--top" && (v = next())) {
      out.top = std::atoi(v);
    } else if (a == "--seed" && (v = next())) {
      out.options.search.seed = std::strtoull(v, nullptr, 10);
    } else if (a == "--search-iterations" && (v = next())) {
      out.options.search.iterations = std::atoi(v);
    } else if (a == "--search-starts" && (v = next())) {
      out.options.search_starts = std::atoi(v);
    } else if (a == "-h" || a == "--help") {
      out.exit = (usage("rank placements of a compiled HLO by Q2"), 0);
      return out;
    } else {
      out.exit = usage(("unknown or incomplete argument '" + a + "'").c_str());
      return out;
    }
  }
  if (out.hlo_path.empty() || out.topo_name.empty())
    out.exit = usage("--hlo and --topology are required");
  return out;
}

// What was ranked, as the output names it.
struct Ranked {
  const Args& args;
  const topo::Topology& t;
  const hlo::CollectiveGraph& g;
  const std::vector<int>& mesh;
  const stage2::Ranking& r;
  double elapsed;  // seconds
};

void print_json(const Ranked& k, size_t shown) {
  const stage2::Ranking& r = k.r;
  const double dq2 = r.jax_default ? r.jax_default->q2 : 0;
  const auto& best = r.ranked.front();
  std::string mesh_list = "[";
  for (size_t i = 0; i < k.mesh.size(); ++i) mesh_list += (i ? ", " : "") + std::to_string(k.mesh[i]);
  mesh_list += "]";
  std::printf("{\"hlo\": %s, \"topology\": %s, \"mesh\": %s, \"num_partitions\": %d,\n",
              quote(k.args.hlo_path).c_str(), quote(k.t.name).c_str(), mesh_list.c_str(),
              k.g.num_partitions);
  if (r.jax_default)
    std::printf(" \"default\": {\"name\": %s, \"q2_seconds\": %.9g, \"device_coords\": %s},\n",
                quote(r.jax_default->placement.name).c_str(), dq2,
                coords_json(k.t, r.jax_default->placement.device_of).c_str());
  else
    std::printf(" \"default\": null, \"default_error\": %s,\n", quote(r.default_error).c_str());
  if (dq2 > 0 && best.q2 > 0) std::printf(" \"best_over_default\": %.6g,\n", dq2 / best.q2);
  std::printf(" \"evaluated\": %d, \"planning_seconds\": %.6g,\n \"ranked\": [\n", r.evaluated, k.elapsed);
  for (size_t i = 0; i < shown; ++i) {
    const auto& e = r.ranked[i];
    std::printf("  {\"rank\": %zu, \"name\": %s, \"q2_seconds\": %.9g, \"device_coords\": %s}%s\n",
                i + 1, quote(e.placement.name).c_str(), e.q2,
                coords_json(k.t, e.placement.device_of).c_str(), i + 1 < shown ? "," : "");
  }
  std::printf(" ]}\n");
}

void print_table(const Ranked& k, size_t shown) {
  const stage2::Ranking& r = k.r;
  const double dq2 = r.jax_default ? r.jax_default->q2 : 0;
  const auto& best = r.ranked.front();
  std::string mesh_s;
  for (size_t i = 0; i < k.mesh.size(); ++i) mesh_s += (i ? "x" : "") + std::to_string(k.mesh[i]);
  std::printf("%s on %s, mesh %s: %zu distinct placements, %d Q2 evaluations in %.3f s "
              "(predicted, model of %s)\n",
              k.args.hlo_path.c_str(), k.t.name.c_str(), mesh_s.c_str(), r.ranked.size(),
              r.evaluated, k.elapsed, k.t.name.c_str());
  std::printf("%4s  %10s  %10s  %s\n", "rank", "Q2 ms", "vs default", "placement");
  for (size_t i = 0; i < shown; ++i) {
    const auto& e = r.ranked[i];
    char ratio[32] = "-";
    if (dq2 > 0 && e.q2 > 0) std::snprintf(ratio, sizeof ratio, "%.3fx", dq2 / e.q2);
    std::printf("%4zu  %10.4f  %10s  %s\n", i + 1, e.q2 * 1e3, ratio, e.placement.name.c_str());
  }
  if (r.jax_default)
    std::printf("default (jax.make_mesh): Q2 %.4f ms (%s); best / default: %.3fx\n", dq2 * 1e3,
                r.jax_default->placement.name.c_str(), dq2 / best.q2);
  else
    std::printf("default (jax.make_mesh): none, JAX refuses this mesh: %s\n", r.default_error.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  if (args.exit) return *args.exit;
  Result<topo::Topology> t = topo::make_topology(args.topo_name, args.hardware_path);
  if (!t.ok()) return std::fprintf(stderr, "aoizora-rank: %s\n", t.error().to_string().c_str()), 2;
  Result<hlo::CollectiveGraph> g = hlo::collective_graph_from_file(args.hlo_path);
  if (!g.ok()) return std::fprintf(stderr, "aoizora-rank: %s\n", g.error().to_string().c_str()), 2;
  std::vector<int> mesh;
  if (!args.mesh_text.empty()) {
    if (!parse_mesh(args.mesh_text, &mesh)) return usage("--mesh expects sizes like 2x4");
  } else {  // the program's own mesh, as `aoizora rank` takes it (hlo/own_mesh.h)
    std::ifstream in(args.hlo_path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    mesh = hlo::own_mesh(text.str(), g->num_partitions);
  }
  const auto t0 = std::chrono::steady_clock::now();
  Result<stage2::Ranking> r = stage2::rank_placements(*g, *t, mesh, args.options);
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok()) return std::fprintf(stderr, "aoizora-rank: %s\n", r.error().to_string().c_str()), 2;
  const size_t shown = std::min<size_t>(static_cast<size_t>(std::max(args.top, 0)), r->ranked.size());
  const Ranked ranked{args, *t, *g, mesh, *r, elapsed};
  if (args.json) print_json(ranked, shown);
  else print_table(ranked, shown);
  return 0;
}
