#include "aoizora/base/status.h"

#include <gtest/gtest.h>

namespace aoizora {
namespace {

TEST(Status, ErrorFormatsLocation) {
  EXPECT_EQ((Error{"expected ']'", "a.hlo", 3, 14}).to_string(), "a.hlo:3:14: expected ']'");
  EXPECT_EQ((Error{"bad", "", 7, 0}).to_string(), "7: bad");
  EXPECT_EQ((Error{"unknown topology", "", 0, 0}).to_string(), "unknown topology");
}

TEST(Status, ResultHoldsValueOrError) {
  Result<int> good = 4;
  Result<int> bad = Error{"no"};
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 4);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "no");
}

}  // namespace
}  // namespace aoizora
