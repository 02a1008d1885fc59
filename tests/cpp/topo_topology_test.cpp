#include "aoizora/topo/catalog.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <thread>

namespace aoizora::topo {
namespace {

Topology must(const std::string& name) {
  Result<Topology> t = make_topology(name);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().to_string());
  return std::move(t).value();
}

TEST(Topology, LinkCountsAndWraparound) {
  // 2D mesh a x b without wrap: 2 * (a*(b-1) + b*(a-1)) directed links.
  EXPECT_EQ(must("v5e:2x4").num_links(), 2 * (2 * 3 + 4 * 1));
  EXPECT_EQ(must("v5e:4x4").num_links(), 48);
  EXPECT_EQ(must("v5e:16x16").num_links(), 1024);  // full torus: 4 per chip
  Topology t816 = must("v5e:8x16");                 // only the axis of 16 wraps
  EXPECT_FALSE(t816.wrap[0]);
  EXPECT_TRUE(t816.wrap[1]);
  EXPECT_EQ(t816.num_links(), 2 * (16 * 7) + 2 * (8 * 16));
  EXPECT_EQ(must("v4:2x2x2").num_links(), 24);  // cube: 12 cables
  Topology v5p = must("v5p:4x4x4");
  EXPECT_TRUE(v5p.wrap[0] && v5p.wrap[1] && v5p.wrap[2]);
  EXPECT_EQ(v5p.num_links(), 64 * 6);
  EXPECT_FALSE(must("v5p:2x4x4").wrap[2]);
  EXPECT_EQ(must("v5p:2x4x4").num_links(), 2 * (16 * 1 + 8 * 3 + 8 * 3));
  int wraps = 0;
  for (const Link& l : must("v5e:16x16").links) wraps += l.wraparound;
  EXPECT_EQ(wraps, 2 * 16 * 2);
}

TEST(Topology, ChipIdsAreXFastest) {
  Topology t = must("v5e:2x4");
  ASSERT_EQ(t.num_chips(), 8);
  EXPECT_EQ(t.chips[1].coords, (std::array<int, 3>{1, 0, 0}));
  EXPECT_EQ(t.chips[2].coords, (std::array<int, 3>{0, 1, 0}));
  EXPECT_EQ(t.chip_at({1, 3, 0}), 7);
  EXPECT_EQ(t.chip_at({2, 0, 0}), -1);
  EXPECT_EQ(t.link_between(0, 1), 0);
  EXPECT_EQ(t.link_between(0, 3), -1);
}

TEST(Topology, SpecFigures) {
  Topology t = must("v5e:4x4");
  EXPECT_EQ(t.spec.device_kind, "TPU v5 lite");
  EXPECT_DOUBLE_EQ(t.spec.peak_flops, 197e12);
  EXPECT_DOUBLE_EQ(t.spec.hbm_bandwidth, 819e9);
  // Every link takes the shipped v5e profile's link figure (fitted: profiles/v5e.json).
  EXPECT_DOUBLE_EQ(t.links[0].bandwidth, chip_spec("v5e")->link_bandwidth);
  EXPECT_DOUBLE_EQ(t.links[0].bandwidth, t.spec.link_bandwidth);
  EXPECT_DOUBLE_EQ(must("v6e:2x4").spec.peak_flops, 918e12);
  EXPECT_DOUBLE_EQ(must("tpu7x:2x2x2").spec.link_bandwidth, chip_spec("tpu7x")->link_bandwidth);
  EXPECT_DOUBLE_EQ(must("tpu7x:2x2x2").spec.link_bandwidth, 89.22e9);  // fitted, 100 nominal
}

TEST(Topology, UnknownNameListsValidOnes) {
  Result<Topology> t = make_topology("v5e:3x3");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message.find("v5e:2x4"), std::string::npos);
  EXPECT_NE(t.error().message.find("v5p:4x4x4"), std::string::npos);
  EXPECT_FALSE(make_topology("h100:8").ok());
}

TEST(Routing, DimensionOrderOnMesh) {
  Topology t = must("v5e:4x4");
  const int a = t.chip_at({0, 0, 0}), b = t.chip_at({2, 3, 0});
  auto r = t.route(a, b);
  ASSERT_EQ(r.size(), 5u);
  // x first, then y.
  EXPECT_EQ(t.links[static_cast<size_t>(r[0])].dim, 0);
  EXPECT_EQ(t.links[static_cast<size_t>(r[1])].dim, 0);
  for (int i = 2; i < 5; ++i) EXPECT_EQ(t.links[static_cast<size_t>(r[static_cast<size_t>(i)])].dim, 1);
  EXPECT_EQ(t.links[static_cast<size_t>(r.back())].dst, b);
  EXPECT_TRUE(t.route(a, a).empty());
  EXPECT_EQ(t.hops(a, b), 5);
}

TEST(Routing, ShorterWayRoundTorusTiesGoPlus) {
  Topology t = must("v5e:16x16");
  const int a = t.chip_at({1, 0, 0});
  auto r = t.route(a, t.chip_at({15, 0, 0}));  // 14 forward, 2 back
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(t.links[static_cast<size_t>(r[0])].dir, -1);
  EXPECT_TRUE(t.links[static_cast<size_t>(r[1])].wraparound);
  auto tie = t.route(t.chip_at({0, 0, 0}), t.chip_at({8, 0, 0}));
  ASSERT_EQ(tie.size(), 8u);
  EXPECT_EQ(t.links[static_cast<size_t>(tie[0])].dir, +1);
}

TEST(Routing, CachedAndThreadSafe) {
  Topology t = must("v5e:4x4");
  std::vector<std::thread> threads;
  std::vector<size_t> total(4, 0);
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int s = 0; s < 16; ++s)
        for (int d = 0; d < 16; ++d) total[static_cast<size_t>(k)] += t.route(s, d).size();
    });
  for (auto& th : threads) th.join();
  // Sum of Manhattan distances on 4x4: 2 * 16 * (sum over pairs on a line of 4 = 20) = 640.
  for (size_t v : total) EXPECT_EQ(v, 640u);
  EXPECT_EQ(t.route(0, 15).data(), t.route(0, 15).data());  // same cached storage
}

TEST(TopologyJson, GridAndExplicitForms) {
  Result<Topology> g = topology_from_json(
      R"({"name": "ring8", "generation": "v5e", "dims": [8], "wrap": [true]})", "t.json");
  ASSERT_TRUE(g.ok()) << g.error().to_string();
  EXPECT_EQ(g->num_links(), 16);
  EXPECT_EQ(g->route(0, 7).size(), 1u);
  Result<Topology> e = topology_from_json(R"({
    "name": "triangle", "spec": {"link_bandwidth": 1e9, "peak_flops": 1e12, "hbm_bandwidth": 1e11},
    "chips": [[0,0,0],[1,0,0],[2,0,0]],
    "links": [{"src":0,"dst":1},{"src":1,"dst":2,"bandwidth":2e9},{"src":2,"dst":0,"bidirectional":false}]
  })", "tri.json");
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  EXPECT_EQ(e->num_links(), 5);
  EXPECT_FALSE(e->is_grid());
  EXPECT_EQ(e->route(2, 0).size(), 1u);  // the one-way link
  EXPECT_EQ(e->route(0, 2).size(), 2u);  // no link 0->2: via 1
  EXPECT_DOUBLE_EQ(e->links[static_cast<size_t>(e->link_between(1, 2))].bandwidth, 2e9);
  Result<Topology> cut = topology_from_json(
      R"({"spec": {"link_bandwidth": 1e9}, "chips": [[0],[1],[2]],
          "links": [{"src":0,"dst":1}, {"src":1,"dst":2,"bidirectional":false}]})", "cut.json");
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.error().message.find("chip 2 cannot reach chip 0"), std::string::npos);
  Result<Topology> bad = topology_from_json("{\"chips\": [[0,0]], \"links\": [}", "bad.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().line, 1);
  EXPECT_GT(bad.error().column, 1);
}

TEST(TopologyJson, ACatalogNameIsRefusedForAnotherSlice) {
  // Named v5e:2x4, a 4x4 grid would be planned as 16 devices under the catalog's name.
  Result<Topology> dims = topology_from_json(
      R"({"name": "v5e:2x4", "generation": "v5e", "dims": [4, 4]})", "t.json");
  ASSERT_FALSE(dims.ok());
  EXPECT_EQ(dims.error().file, "t.json");
  EXPECT_NE(dims.error().message.find("v5e:2x4 is the catalog slice of dims 2x4x1, but this "
                                      "file gives dims 4x4x1"),
            std::string::npos)
      << dims.error().message;
  Result<Topology> wrap = topology_from_json(
      R"({"name": "v5e:16x16", "generation": "v5e", "dims": [16, 16]})", "t.json");
  ASSERT_FALSE(wrap.ok());
  EXPECT_NE(wrap.error().message.find("without wraparound"), std::string::npos)
      << wrap.error().message;
  Result<Topology> gen = topology_from_json(
      R"({"name": "v6e:2x4", "generation": "v5e", "dims": [2, 4]})", "t.json");
  ASSERT_FALSE(gen.ok());
  EXPECT_NE(gen.error().message.find("generation 'v5e'"), std::string::npos)
      << gen.error().message;
  Result<Topology> figures = topology_from_json(
      R"({"name": "v5e:2x4", "generation": "v5e", "dims": [2, 4], "spec": {"hop_latency": 0.5}})",
      "t.json");
  ASSERT_FALSE(figures.ok());
  EXPECT_NE(figures.error().message.find("spec.hop_latency 0.5"), std::string::npos)
      << figures.error().message;
  EXPECT_NE(figures.error().message.find("--hardware"), std::string::npos);
  Result<Topology> listed = topology_from_json(
      R"({"name": "v5e:2x2", "generation": "v5e", "chips": [[0, 0], [1, 0], [0, 1], [1, 1]],
          "links": [{"src": 0, "dst": 1}, {"src": 1, "dst": 3}, {"src": 3, "dst": 2},
                    {"src": 2, "dst": 0}]})",
      "t.json");
  ASSERT_FALSE(listed.ok());
  EXPECT_NE(listed.error().message.find("chips and links"), std::string::npos)
      << listed.error().message;

  // The very slice, or a name of its own, is taken.
  Result<Topology> same = topology_from_json(
      R"({"name": "v5e:2x4", "generation": "v5e", "dims": [2, 4], "wrap": [false, false]})",
      "t.json");
  ASSERT_TRUE(same.ok()) << same.error().to_string();
  EXPECT_EQ(same->num_chips(), 8);
  EXPECT_TRUE(topology_from_json(
                  R"({"name": "my-v5e", "generation": "v5e", "dims": [4, 4]})", "t.json")
                  .ok());
}

TEST(TopologyJson, FromFile) {
  const std::string path = ::testing::TempDir() + "/aoizora_topo_test.json";
  std::ofstream(path) << R"({"generation": "v6e", "dims": [2, 2]})";
  Result<Topology> t = make_topology(path);
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->num_links(), 8);
  EXPECT_DOUBLE_EQ(t->spec.peak_flops, 918e12);
  std::remove(path.c_str());
  EXPECT_FALSE(make_topology(path).ok());
}

// The copy's route and link indexes must be its own: the original is destroyed before the
// copy is used, so an index still pointing into it reads freed memory (ASan) or wrong links.
TEST(Topology, CopyKeepsIndex) {
  auto a = std::make_unique<Topology>(must("v5e:4x4"));
  const int link = a->link_between(0, 4);
  const std::span<const int> r = a->route(0, 15);
  const std::vector<int> route(r.begin(), r.end());
  Topology b = *a;
  a.reset();
  const std::span<const int> copied = b.route(0, 15);
  EXPECT_EQ(copied.size(), 6u);
  EXPECT_TRUE(std::equal(copied.begin(), copied.end(), route.begin(), route.end()));
  EXPECT_EQ(b.link_between(0, 4), link);
}

}  // namespace
}  // namespace aoizora::topo
