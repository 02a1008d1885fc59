// Two TensorCores per chip (TPU7x): devices, the intra-chip link in routing, and the closed
// forms of Q2 and the simulator over the two cores of one chip and across chips.
#include <gtest/gtest.h>

#include <numeric>

#include "aoizora/cost/q2.h"
#include "aoizora/place/axis_order.h"
#include "aoizora/place/jax_default.h"
#include "aoizora/sim/simulator.h"
#include "aoizora/topo/catalog.h"
#include "sim_testing.h"

namespace aoizora::topo {
namespace {

Topology must(const std::string& name) {
  Result<Topology> t = make_topology(name);
  EXPECT_TRUE(t.ok()) << name;
  return std::move(t).value();
}

// Round figures, so the closed forms read plainly: ICI 1e9 B/s, die-to-die 6e9 B/s, no
// latency anywhere.
ChipSpec two_core_spec() {
  ChipSpec s;
  s.generation = "custom";
  s.peak_flops = 1e12;
  s.hbm_bandwidth = 1e11;
  s.link_bandwidth = 1e9;
  s.hop_latency = 0;
  s.collective_latency = {0, 0, 0, 0, 0, 0};
  s.cores_per_chip = 2;
  s.intra_chip_link = IntraChipLink{6e9, 0};
  return s;
}

TEST(Cores, Tpu7xDevicesAreTwoPerChipCoreFastest) {
  const Topology t = must("tpu7x:2x2x1");
  EXPECT_EQ(t.num_chips(), 4);
  EXPECT_EQ(t.cores_per_chip(), 2);
  EXPECT_EQ(t.num_devices(), 8);
  // JAX's compile-only tpu7x:2x2x1: ids 0..7 at (0,0,0) x2, (1,0,0) x2, (0,1,0) x2, (1,1,0) x2.
  const DeviceCoords want[] = {{0, 0, 0, 0}, {0, 0, 0, 1}, {1, 0, 0, 0}, {1, 0, 0, 1},
                               {0, 1, 0, 0}, {0, 1, 0, 1}, {1, 1, 0, 0}, {1, 1, 0, 1}};
  for (int d = 0; d < 8; ++d) {
    EXPECT_EQ(t.device_coords(d), want[d]) << d;
    EXPECT_EQ(t.device_at(want[d]), d);
  }
  EXPECT_EQ(t.device_at({0, 0, 0, 2}), -1);
  // 8 directed ICI links of the 2x2 mesh, plus one intra-chip link each way per chip.
  int core_links = 0;
  for (const Link& l : t.links) core_links += l.dim == kCoreAxis;
  EXPECT_EQ(core_links, 8);
  EXPECT_EQ(t.num_links(), 16);
}

TEST(Cores, RoutesUseTheIntraChipLinkOnlyWithinAChip) {
  const Topology t = must("tpu7x:2x2x1");
  // Core 0 -> core 1 of chip 0: the intra-chip link, one hop.
  ASSERT_EQ(t.route(0, 1).size(), 1u);
  const Link& in = t.links[static_cast<size_t>(t.route(0, 1)[0])];
  EXPECT_EQ(in.dim, kCoreAxis);
  EXPECT_EQ(in.src, 0);
  EXPECT_EQ(in.dst, 0);
  EXPECT_EQ(in.bandwidth, t.spec.intra_chip_link->bandwidth);
  EXPECT_NE(t.route(1, 0)[0], t.route(0, 1)[0]);  // the other direction is its own link
  EXPECT_EQ(t.hops(0, 1), 1);
  // Either core of chip 0 to either core of chip 1: the one ICI link between the chips,
  // shared by both cores.
  for (int a : {0, 1})
    for (int b : {2, 3}) {
      ASSERT_EQ(t.route(a, b).size(), 1u) << a << "->" << b;
      EXPECT_EQ(t.route(a, b)[0], t.link_between(0, 1));
      EXPECT_EQ(t.hops(a, b), 1);
    }
  // Diagonal chips (0,0) -> (1,1): x then y, two ICI hops, whatever the cores.
  EXPECT_EQ(t.route(1, 6).size(), 2u);
  EXPECT_EQ(t.links[static_cast<size_t>(t.route(1, 6)[0])].dim, 0);
}

hlo::CollectiveGraph all_to_all(int n, std::vector<int> group, double bytes) {
  hlo::CollectiveGraph g;
  g.num_partitions = n;
  g.regions.push_back(hlo::Region{"entry", 1, {}});
  hlo::Collective c;
  c.kind = hlo::CollectiveKind::kAllToAll;
  c.operand_bytes = c.result_bytes = static_cast<int64_t>(bytes);
  c.groups = {std::move(group)};
  hlo::ScheduledOp op;
  op.name = "a2a";
  op.kind = hlo::OpKind::kCollective;
  op.collective = 0;
  c.start_op = c.done_op = 0;
  g.regions[0].ops.push_back(op);
  g.collectives.push_back(c);
  return g;
}

place::Placement placement(std::vector<int> device_of) { return {"given", std::move(device_of)}; }

// An all-to-all of V bytes per device sends V/k to each other member. Over the two cores of
// one chip that is V/2 each way on the die-to-die link; over one core of each of two chips,
// V/2 on an ICI link 6x slower; over both cores of two chips, four flows of V/4 cross each
// ICI direction, V in all.
TEST(Cores, AllToAllClosedFormsWithinAChipAndAcrossChips) {
  const Topology t = Topology::grid("2x1 two-core", {2, 1, 1}, {false, false, false}, two_core_spec());
  ASSERT_EQ(t.num_devices(), 4);
  const double V = 12e6;
  const hlo::CollectiveGraph pair = all_to_all(2, {0, 1}, V);
  const hlo::CollectiveGraph quad = all_to_all(4, {0, 1, 2, 3}, V);
  struct Case {
    const char* what;
    const hlo::CollectiveGraph& g;
    std::vector<int> device_of;
    double seconds;
  };
  const Case cases[] = {
      {"two cores of chip 0", pair, {0, 1}, V / 2 / 6e9},
      {"core 0 of each chip", pair, {0, 2}, V / 2 / 1e9},
      {"core 1 of chip 0, core 0 of chip 1", pair, {1, 2}, V / 2 / 1e9},
      {"both cores of both chips", quad, {0, 1, 2, 3}, V / 1e9},
  };
  for (const Case& c : cases) {
    const place::Placement p = placement(c.device_of);
    EXPECT_NEAR(cost::evaluate_q2(c.g, t, p).seconds / c.seconds, 1.0, 1e-9) << c.what;
    EXPECT_NEAR(sim::Ok(sim::simulate(c.g, t, p)).step_seconds / c.seconds, 1.0, 1e-9) << c.what;
  }
}

// A reduce-scatter over both cores of two chips splits over the cores first (half of V each
// way on the fast link), then over the chips (a quarter of V from each core, and both cores'
// quarters share their chip's ICI link). Each phase is charged its own busiest link.
TEST(Cores, HierarchicalPhasesPutTheLargestOnTheIntraChipLink) {
  const Topology t = Topology::grid("2x1 two-core", {2, 1, 1}, {false, false, false}, two_core_spec());
  const double V = 8e6;
  hlo::CollectiveGraph g = all_to_all(4, {0, 1, 2, 3}, V);
  g.collectives[0].kind = hlo::CollectiveKind::kReduceScatter;
  const place::Placement p = placement({0, 1, 2, 3});
  const double rs = V / 2 / 6e9 + 2 * (V / 4) / 1e9;
  EXPECT_NEAR(cost::evaluate_q2(g, t, p).seconds / rs, 1.0, 1e-9);
  EXPECT_NEAR(sim::Ok(sim::simulate(g, t, p)).step_seconds / rs, 1.0, 1e-9);
  // The same group laid out chips-first (partitions 0,1 on core 0 of each chip) is the same
  // box, so it costs the same: the box, not the partition order, sets the phases.
  EXPECT_NEAR(cost::evaluate_q2(g, t, placement({0, 2, 1, 3})).seconds / rs, 1.0, 1e-9);
}

TEST(Cores, AxisOrdersIncludeTheCoreAxis) {
  const Topology t = must("tpu7x:2x2x1");
  place::AxisOrderOptions o;
  o.remove_symmetric = false;
  Result<std::vector<place::Placement>> orders = place::enumerate_axis_orders(t, {2, 4}, o);
  ASSERT_TRUE(orders.ok());
  bool cores_inner = false;
  for (const place::Placement& p : *orders) {
    // "x,y|c" is not a (2, 4) order; "c|x,y" puts partitions 0..3 on core 0 of each chip.
    if (p.name == "axes y|x,c") {
      cores_inner = true;
      EXPECT_EQ(p.device_of, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
    }
  }
  EXPECT_TRUE(cores_inner);
}

// jax 0.10.2's _7x_create_device_mesh on compile-only tpu7x:2x2x1 gives device ids
// 0,1,2,3,6,7,4,5 for every mesh shape (a ring over the chips, both cores of a chip adjacent);
// tests/python/test_place.py checks the port against jax itself.
TEST(Cores, JaxDefaultOrderOnTpu7xIsTheTrayRing) {
  const Topology t = must("tpu7x:2x2x1");
  for (const place::MeshShape& mesh : {place::MeshShape{8}, place::MeshShape{2, 4}, place::MeshShape{2, 2, 2}}) {
    Result<place::Placement> p = place::default_placement(t, mesh);
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(p->device_of, (std::vector<int>{0, 1, 2, 3, 6, 7, 4, 5}));
  }
}

}  // namespace
}  // namespace aoizora::topo

namespace aoizora::topo {
namespace {

TEST(Cores, JsonTopologiesTakeTwoCoresPerChip) {
  const std::string grid =
      R"({"name": "two-core line", "dims": [2], "spec": {"link_bandwidth": 1e9,
          "cores_per_chip": 2, "intra_chip_link": {"bandwidth": 6e9, "latency": 0}}})";
  Result<Topology> t = topology_from_json(grid, "t.json");
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->num_devices(), 4);
  ASSERT_EQ(t->route(2, 3).size(), 1u);
  EXPECT_EQ(t->links[static_cast<size_t>(t->route(2, 3)[0])].bandwidth, 6e9);
  // An explicit fabric too: the cores' link inside a chip, fewest hops between chips.
  const std::string explicit_form =
      R"({"name": "pair", "spec": {"link_bandwidth": 1e9, "cores_per_chip": 2,
          "intra_chip_link": {"bandwidth": 6e9, "latency": 0}},
          "chips": [[0, 0, 0], [1, 0, 0]], "links": [{"src": 0, "dst": 1}]})";
  Result<Topology> e = topology_from_json(explicit_form, "e.json");
  ASSERT_TRUE(e.ok()) << e.error().to_string();
  EXPECT_FALSE(e->is_grid());
  EXPECT_EQ(e->route(0, 1).size(), 1u);
  EXPECT_EQ(e->links[static_cast<size_t>(e->route(0, 1)[0])].dim, kCoreAxis);
  // Both cores share the chip's link.
  ASSERT_EQ(e->route(1, 2).size(), 1u);
  EXPECT_EQ(e->route(1, 2)[0], e->route(0, 3)[0]);
  // Two cores without the link between them is an error.
  Result<Topology> bad = topology_from_json(
      R"({"dims": [2], "spec": {"link_bandwidth": 1e9, "cores_per_chip": 2}})", "b.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("intra_chip_link"), std::string::npos);
}

}  // namespace
}  // namespace aoizora::topo
