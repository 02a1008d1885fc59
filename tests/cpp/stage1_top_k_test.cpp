// stage1/top_k.h: choosing the K cheapest candidates, and K from the ranks of past winners.
#include "aoizora/stage1/top_k.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace aoizora::stage1 {
namespace {

TEST(ShloStage1, TopKAndRecall) {
  EXPECT_EQ(stage1::select_top_k({3.0, 1.0, INFINITY, 2.0, -1.0}, 2), (std::vector<int>{1, 3}));
  EXPECT_EQ(stage1::select_top_k({2.0, 1.0, 2.0}, 0), (std::vector<int>{1, 0, 2}));  // stable ties
  EXPECT_EQ(stage1::select_top_k({2.0, 1.0}, 5), (std::vector<int>{1, 0}));
  EXPECT_EQ(stage1::k_from_recall({0, 0, 2, 1}), 4);  // worst winner rank 2 -> K 3, plus slack 1
  EXPECT_EQ(stage1::k_from_recall({}, 2, 0), 2);
}

}  // namespace
}  // namespace aoizora::stage1
