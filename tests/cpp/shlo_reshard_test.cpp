// shlo/reshard.h: the collectives that take a value from one sharding to another, and the
// bytes they move.
#include "aoizora/shlo/reshard.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace aoizora::shlo {
namespace {

TEST(ShloReshard, DroppingAnAxisGathersAddingOneIsFreeAndPartialSumsReduce) {
  MeshTable t{{Mesh{"mesh", {{"x", 4}, {"y", 2}}}}};
  TensorType ty{"bf16", {64, 32}, 2};
  auto sh = [](std::vector<std::vector<std::string>> dims) {
    TensorSharding s;
    s.mesh = "mesh";
    for (auto& d : dims) {
      DimSharding ds;
      for (auto& a : d) ds.axes.push_back({a, 1, 0});
      s.dims.push_back(ds);
    }
    return s;
  };
  ShardState from{sh({{"x"}, {"y"}}), {}, false, true};
  // Drop y: all-gather over y of the local 16x16 block.
  auto g = reshard(t, ty, from, sh({{"x"}, {}}));
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].comm, CommKind::kAllGather);
  EXPECT_DOUBLE_EQ(g[0].operand_bytes, 16 * 16 * 2);
  EXPECT_DOUBLE_EQ(g[0].result_bytes, 16 * 32 * 2);
  // Adding an axis is a local slice.
  EXPECT_TRUE(reshard(t, ty, ShardState{sh({{}, {}}), {}, false, true}, sh({{"x"}, {"y"}})).empty());
  // Partial over y, wanted split on dim 1 by y: reduce-scatter; wanted replicated: all-reduce.
  ShardState partial{sh({{"x"}, {}}), {{"y", 1, 0}}, false, false};
  auto rs = reshard(t, ty, partial, sh({{"x"}, {"y"}}));
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].comm, CommKind::kReduceScatter);
  EXPECT_DOUBLE_EQ(rs[0].operand_bytes, 16 * 32 * 2);
  EXPECT_DOUBLE_EQ(rs[0].result_bytes, 16 * 16 * 2);
  auto ar = reshard(t, ty, partial, sh({{"x"}, {}}));
  ASSERT_EQ(ar.size(), 1u);
  EXPECT_EQ(ar[0].comm, CommKind::kAllReduce);
  // Wire bytes on a ring: all-reduce 2 x (k-1)/k of its operand.
  EXPECT_DOUBLE_EQ(moved_bytes(ar), 2 * 0.5 * 16 * 32 * 2);
}

}  // namespace
}  // namespace aoizora::shlo
