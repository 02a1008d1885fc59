// shlo/propagate.h: the sharding rules of the ops Stage 1 understands; here a reshape's.
#include "aoizora/shlo/propagate.h"

#include <gtest/gtest.h>

namespace aoizora::shlo {
namespace {

TEST(ShloPropagate, ReshapeSplitsAndMergesKeepTheMajorAxis) {
  MeshTable t{{Mesh{"mesh", {{"x", 2}, {"y", 2}}}}};
  TensorSharding s{"mesh", {{{{"x", 1, 0}}, false}, {{}, false}, {{{"y", 1, 0}}, false}}, {}, false, false};
  // [2, 256, 512] -> [2, 256, 8, 64]: dim 2 (y) splits into heads 8 x 64, y stays on heads.
  ReshapeRule a = reshape_rule(t, s, {2, 256, 512}, {2, 256, 8, 64});
  EXPECT_EQ(to_string(a.result), R"([{"x"}, {}, {"y"}, {}])");
  EXPECT_EQ(a.operand, s);
  // Merge [2, 256, 8, 64] -> [2, 256, 512] with the minor dim sharded: not contiguous, dropped.
  TensorSharding m{"mesh", {{}, {}, {}, {{{"y", 1, 0}}, false}}, {}, false, false};
  ReshapeRule b = reshape_rule(t, m, {2, 256, 8, 64}, {2, 256, 512});
  EXPECT_EQ(to_string(b.result), "[{}, {}, {}]");
  EXPECT_EQ(to_string(b.operand), "[{}, {}, {}, {}]");
  // An axis that does not divide the dimension it lands on cannot stay.
  MeshTable t4{{Mesh{"mesh", {{"x", 4}}}}};
  TensorSharding x4{"mesh", {{{{"x", 1, 0}}, false}, {}}, {}, false, false};
  EXPECT_EQ(to_string(reshape_rule(t4, x4, {8, 3}, {2, 12}).result), "[{}, {}]");
  EXPECT_EQ(to_string(reshape_rule(t4, x4, {8, 3}, {4, 6}).result), R"([{"x"}, {}])");
}

}  // namespace
}  // namespace aoizora::shlo
