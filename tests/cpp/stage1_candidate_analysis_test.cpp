// Stage 1's per-collective record (stage1/candidate_analysis.h PredictedCollective): kind, origin, mesh
// axes, real group size, V bytes per device (the gathered array of an all-gather) and
// executions of each predicted collective, as the Alpa-style baseline prices them.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "aoizora/stage1/candidate_analysis.h"
#include "shlo_testdata.h"

namespace aoizora::stage1 {
namespace {

namespace testdata = shlo::testdata;

Stage1Result analyze(const char* text) {
  Result<Stage1Result> r = analyze_stablehlo(text, Stage1Options{});
  EXPECT_TRUE(r.ok()) << r.error().to_string();
  return std::move(r).value();
}

// shard_map body: a ring permute over "model", an all-to-all over "model" (4 devices) and
// an all-reduce over "data" (2), each on the local 128x512 bf16 block (131072 bytes).
TEST(ShloStage1Collectives, ExplicitCollectivesKeepKindAxesGroupAndBytes) {
  Stage1Result r = analyze(testdata::kRingAllToAll);
  ASSERT_EQ(r.collectives.size(), 3u);
  const PredictedCollective& p = r.collectives[0];
  EXPECT_EQ(p.kind, "collective-permute");
  EXPECT_EQ(p.origin, "explicit");
  EXPECT_EQ(p.axes, (std::vector<std::string>{"model"}));
  EXPECT_EQ(p.group_size, 2);
  EXPECT_DOUBLE_EQ(p.bytes, 131072);
  EXPECT_DOUBLE_EQ(p.executions, 1);
  EXPECT_EQ(r.collectives[1].kind, "all-to-all");
  EXPECT_EQ(r.collectives[1].axes, (std::vector<std::string>{"model"}));
  EXPECT_EQ(r.collectives[1].group_size, 4);
  EXPECT_DOUBLE_EQ(r.collectives[1].bytes, 131072);
  EXPECT_EQ(r.collectives[2].kind, "all-reduce");
  EXPECT_EQ(r.collectives[2].axes, (std::vector<std::string>{"data"}));
  EXPECT_EQ(r.collectives[2].group_size, 2);
  EXPECT_DOUBLE_EQ(r.collectives[2].bytes, 131072);
}

// Two arguments sharded over the major half of x, one over x and y, all gathered to
// replicated: the all-gathers' V is the whole 64x32 f32 array (8192 bytes), not the local
// shard; the sub-axis group has 2 devices, the x,y group 8; the two identical gathers are
// one record with two executions.
TEST(ShloStage1Collectives, AllGatherRecordsTheGatheredBytesAndSubAxesTheirOwnSize) {
  const char* text = R"(module @m attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["x"=4, "y"=2]>
  func.func public @main(%arg0: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x":(1)2}, {}]>}, %arg1: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x":(1)2}, {}]>}, %arg2: tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>}) -> (tensor<64x32xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>}) {
    %0 = sdy.sharding_constraint %arg0 <@mesh, [{}, {}]> : tensor<64x32xf32>
    %1 = sdy.sharding_constraint %arg1 <@mesh, [{}, {}]> : tensor<64x32xf32>
    %2 = sdy.sharding_constraint %arg2 <@mesh, [{}, {}]> : tensor<64x32xf32>
    %3 = stablehlo.add %0, %1 : tensor<64x32xf32>
    %4 = stablehlo.add %3, %2 : tensor<64x32xf32>
    return %4 : tensor<64x32xf32>
  }
})";
  Stage1Result r = analyze(text);
  ASSERT_EQ(r.collectives.size(), 2u);
  const PredictedCollective& half = r.collectives[0];
  EXPECT_EQ(half.kind, "all-gather");
  EXPECT_EQ(half.origin, "reshard");
  EXPECT_EQ(half.axes, (std::vector<std::string>{"x:(1)2"}));
  EXPECT_EQ(half.group_size, 2);
  EXPECT_DOUBLE_EQ(half.bytes, 64 * 32 * 4);
  EXPECT_DOUBLE_EQ(half.executions, 2);
  const PredictedCollective& both = r.collectives[1];
  EXPECT_EQ(both.kind, "all-gather");
  EXPECT_EQ(both.axes, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(both.group_size, 8);
  EXPECT_DOUBLE_EQ(both.bytes, 64 * 32 * 4);
  EXPECT_DOUBLE_EQ(both.executions, 1);
}

// A collective inside the layer loop runs once per iteration: the scan's all-reduce of the
// second matmul's partial sums over "model" (a 256x1024 bf16 block per device) is one record
// with the trip count 4 as its executions, matching comm_count_by_kind.
TEST(ShloStage1Collectives, LoopTripCountsMultiplyExecutions) {
  Stage1Result r = analyze(testdata::kLayersScan);
  ASSERT_EQ(r.collectives.size(), 1u);
  const PredictedCollective& c = r.collectives[0];
  EXPECT_EQ(c.kind, "all-reduce");
  EXPECT_EQ(c.origin, "contraction");
  EXPECT_EQ(c.axes, (std::vector<std::string>{"model"}));
  EXPECT_EQ(c.group_size, 4);
  EXPECT_DOUBLE_EQ(c.bytes, 256 * 1024 * 2);
  EXPECT_DOUBLE_EQ(c.executions, 4);
  EXPECT_DOUBLE_EQ(r.comm_count_by_kind.at("all-reduce"), c.executions);
}

// Merging identical collectives loses nothing: per kind, the records' executions add up to
// comm_count_by_kind, and their bytes x executions to comm_bytes_by_kind (operand bytes)
// except for all-gathers, whose V is the gathered result: group size x the operand.
TEST(ShloStage1Collectives, RecordsAddUpToTheKindTotals) {
  for (const char* text : {testdata::kMatmul, testdata::kRingAllToAll, testdata::kLayersScan,
                           testdata::kMatmulGspmd, testdata::kRingGspmd}) {
    Stage1Result r = analyze(text);
    std::map<std::string, double> count, bytes;
    for (const PredictedCollective& c : r.collectives) {
      count[c.kind] += c.executions;
      double operand = c.kind == "all-gather" ? c.bytes / static_cast<double>(c.group_size) : c.bytes;
      bytes[c.kind] += operand * c.executions;
    }
    EXPECT_EQ(count, r.comm_count_by_kind);
    ASSERT_EQ(bytes.size(), r.comm_bytes_by_kind.size());
    for (const auto& [kind, b] : r.comm_bytes_by_kind) EXPECT_DOUBLE_EQ(bytes[kind], b) << kind;
  }
}

// Stage 1 reads the chip figures of a hardware profile file (Stage1Options::hardware), the
// same figures the simulator and Q2 get from the topology: with the hop latency zeroed,
// halving the link bandwidth exactly doubles Q1's communication and leaves compute alone.
std::string v5e_profile_file(const std::string& name, const std::string& link_bandwidth) {
  std::ifstream in(std::string(AOIZORA_PROFILES) + "/v5e.json");
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  auto swap = [&](const std::string& from, const std::string& to) {
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) text.replace(at, from.size(), to);
  };
  // The shipped figure (fitted to measurements) is replaced, whatever it is.
  const std::string key = "\"link_bandwidth\": ";
  const size_t at = text.find(key);
  EXPECT_NE(at, std::string::npos);
  if (at == std::string::npos) return "";
  const size_t end = text.find_first_of(",\n", at + key.size());
  swap(text.substr(at, end - at), key + link_bandwidth);
  swap("\"hop_latency\": 1e-06", "\"hop_latency\": 0");
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ShloStage1Hardware, HalfTheLinkBandwidthInTheProfileDoublesQ1Communication) {
  Stage1Options full;
  full.topology = "v5e:2x4";
  full.hardware = v5e_profile_file("stage1_full.json", "45e9");
  Stage1Options half = full;
  half.hardware = v5e_profile_file("stage1_half.json", "22.5e9");
  Result<Stage1Result> a = analyze_stablehlo(testdata::kRingAllToAll, full);
  Result<Stage1Result> b = analyze_stablehlo(testdata::kRingAllToAll, half);
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  ASSERT_TRUE(b.ok()) << b.error().to_string();
  ASSERT_GT(a->comm_seconds, 0);
  EXPECT_DOUBLE_EQ(b->comm_seconds, 2 * a->comm_seconds);
  EXPECT_DOUBLE_EQ(b->compute_seconds, a->compute_seconds);
  std::remove(full.hardware.c_str());
  std::remove(half.hardware.c_str());
}

TEST(ShloStage1Hardware, AProfileOfAnotherGenerationIsAnError) {
  Stage1Options o;
  o.topology = "v6e:2x4";
  o.hardware = std::string(AOIZORA_PROFILES) + "/v5e.json";
  Result<Stage1Result> r = analyze_stablehlo(testdata::kRingAllToAll, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("for 'v5e' but topology v6e:2x4 is v6e"), std::string::npos)
      << r.error().message;
}

TEST(ShloStage1, RejectsWhatDoesNotFitWithTheNumbers) {
  stage1::Stage1Options o;
  o.chip.hbm_bytes = 4e6;  // 4 MB chips: the matmul's 3.67 MB of parameters + activations do not fit
  o.hbm_usable_fraction = 1.0;
  Result<stage1::Stage1Result> r = stage1::analyze_stablehlo(testdata::kMatmul, o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(r->fits);
  EXPECT_NE(r->reject_reason.find("parameters 0.00 GB"), std::string::npos) << r->reject_reason;
  EXPECT_NE(r->reject_reason.find("usable HBM"), std::string::npos);
  o.chip.hbm_bytes = 16e9;
  r = stage1::analyze_stablehlo(testdata::kMatmul, o);
  EXPECT_TRUE(r->fits);
  EXPECT_TRUE(r->reject_reason.empty());
  EXPECT_DOUBLE_EQ(r->comm_bytes_by_kind.at("reduce-scatter"), 512.0 * 2048 * 2);
  EXPECT_DOUBLE_EQ(r->comm_count_by_kind.at("all-gather"), 2);
  EXPECT_GT(r->q1_seconds, 0);
  EXPECT_GE(r->q1_seconds, r->compute_seconds);
  o.topology = "v5e:9x9x9";
  EXPECT_FALSE(stage1::analyze_stablehlo(testdata::kMatmul, o).ok());
}

}  // namespace
}  // namespace aoizora::stage1
