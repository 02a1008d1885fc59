#include "aoizora/hlo/own_mesh.h"

#include <gtest/gtest.h>

namespace aoizora::hlo {
namespace {

TEST(OwnMesh, TwoShardingsFusingDifferentPairsGiveThreeAxes) {
  EXPECT_EQ(own_mesh("sharding={devices=[2,4]<=[8]} sharding={devices=[4,2]<=[8]}", 8),
            (std::vector<int>{2, 2, 2}));
}

TEST(OwnMesh, ATransposedIotaNamesTheMeshItWasBuiltFrom) {
  EXPECT_EQ(own_mesh("sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}", 8),
            (std::vector<int>{2, 4}));
  EXPECT_EQ(own_mesh("sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}", 8),
            (std::vector<int>{2, 4}));
}

TEST(OwnMesh, SplitsThatAreNoChainOrNoShardingGiveOneAxis) {
  EXPECT_EQ(own_mesh("sharding={devices=[2,3]<=[6]} sharding={devices=[3,2]<=[6]}", 6),
            (std::vector<int>{6}));
  EXPECT_EQ(own_mesh("sharding={replicated}", 8), (std::vector<int>{8}));
}

TEST(OwnMesh, ShardingsOfAnotherSizeAndBrokenTextAreIgnored) {
  // A 4-device sharding inside an 8-device program, a truncated one, an oversized number.
  EXPECT_EQ(own_mesh("devices=[2,2]<=[4] devices=[2,4 devices=[99999999999999999999,1]<=[8] "
                     "devices=[2,4]<=[8]",
                     8),
            (std::vector<int>{2, 4}));
}

}  // namespace
}  // namespace aoizora::hlo
