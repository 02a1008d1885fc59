#include "aoizora/sim/trace.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "aoizora/topo/json.h"
#include "sim_testing.h"

namespace aoizora::sim {
namespace {

hlo::CollectiveGraph AsyncRingProgram() {
  hlo::CollectiveGraph g;
  g.num_partitions = 4;
  g.regions.emplace_back();
  g.regions.back().name = "entry";
  hlo::Collective c;
  c.name = "all-gather-start.1";
  c.kind = hlo::CollectiveKind::kAllGather;
  c.groups = {{0, 1, 2, 3}};
  c.operand_bytes = 1 << 20;
  c.result_bytes = 4 << 20;
  c.async = true;
  c.done_op = 2;
  g.collectives.push_back(c);
  auto add = [&](std::string name, hlo::OpKind kind, double flops) {
    hlo::ScheduledOp op;
    op.name = std::move(name);
    op.kind = kind;
    op.flops = flops;
    op.collective = kind == hlo::OpKind::kCompute ? -1 : 0;
    g.regions.back().ops.push_back(op);
  };
  add("all-gather-start.1", hlo::OpKind::kCollectiveStart, 0);
  add("fusion \"quoted\"", hlo::OpKind::kCompute, 1e10);
  add("all-gather-done.1", hlo::OpKind::kCollectiveDone, 0);
  return g;
}

TEST(SimTrace, JsonHasATrackPerChipAndACounterPerBusyLink) {
  topo::ChipSpec spec;
  spec.peak_flops = 1e14;
  spec.hbm_bandwidth = 1e12;
  spec.link_bandwidth = 1e10;
  topo::Topology t = topo::Topology::grid("test:4", {4, 1, 1}, {true, false, false}, spec);
  place::Placement p;
  p.device_of = {0, 1, 2, 3};
  SimOptions o;
  o.record_timeline = true;
  SimResult r = Ok(simulate(AsyncRingProgram(), t, p, o));
  auto doc = topo::json::parse(trace_json(r, t));
  ASSERT_TRUE(doc.ok()) << doc.error().to_string();
  const topo::json::Value* events = doc->find("traceEvents");
  ASSERT_NE(events, nullptr);
  int threads = 0, slices = 0, counters = 0;
  std::set<std::string> counter_names;
  double last_end = 0;
  for (const auto& e : events->array) {
    const std::string ph = e.find("ph")->string;
    if (ph == "M" && e.find("name")->string == "thread_name") ++threads;
    if (ph == "X") {
      ++slices;
      last_end = std::max(last_end, e.find("ts")->number + e.find("dur")->number);
    }
    if (ph == "C") {
      ++counters;
      counter_names.insert(e.find("name")->string);
    }
  }
  EXPECT_EQ(threads, 4);
  EXPECT_EQ(slices, 4 * 2);  // the fusion and the -done's wait on every chip
  // A 4-chip torus ring all-gather is bidirectional: all 8 directed links get busy.
  EXPECT_EQ(counter_names.size(), 8u);
  // Each of the 3 steps raises every link to full rate and drops it to zero while the chunk
  // crosses the hop latency before the next step can go.
  EXPECT_EQ(counters, 8 * 3 * 2);
  EXPECT_NEAR(last_end, r.step_seconds * 1e6, 1e-3);
  EXPECT_NE(trace_json(r, t).find("fusion \\\"quoted\\\""), std::string::npos);
}

TEST(SimTrace, WriteIsAtomicAndReportsErrors) {
  topo::ChipSpec spec;
  spec.peak_flops = 1e14;
  spec.link_bandwidth = 1e10;
  topo::Topology t = topo::Topology::grid("test:4", {4, 1, 1}, {true, false, false}, spec);
  place::Placement p;
  p.device_of = {0, 1, 2, 3};
  SimOptions o;
  o.record_timeline = true;
  SimResult r = Ok(simulate(AsyncRingProgram(), t, p, o));
  const auto dir = std::filesystem::temp_directory_path() /
                   ("aoizora_sim_trace_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "trace.json").string();
  ASSERT_TRUE(write_trace(r, t, path).ok());
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  EXPECT_EQ(ss.str(), trace_json(r, t));
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) (void)e, ++files;
  EXPECT_EQ(files, 1);  // no temporary left behind
  auto bad = write_trace(r, t, (dir / "missing" / "trace.json").string());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().file.find("missing"), std::string::npos);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace aoizora::sim
