#include "aoizora/base/status.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "aoizora/hlo/hlo_loader.h"
#include "aoizora/topo/catalog.h"
#include "aoizora/topo/topology.h"

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

Status fail_if(bool fail, int* steps) {
  ++*steps;
  return fail ? Status(Error::unsupported("step failed")) : Status::success();
}

Result<std::unique_ptr<int>> owned(bool fail) {
  if (fail) return Error::not_found("no value");
  return std::make_unique<int>(7);
}

// The macros pass the first error up unchanged (its code too) and run nothing after it.
Result<int> two_steps(bool fail_first, bool fail_second, int* steps) {
  RETURN_IF_ERROR(fail_if(fail_first, steps));
  ASSIGN_OR_RETURN(std::unique_ptr<int> v, owned(fail_second));  // move-only: moved out
  ASSIGN_OR_RETURN(auto w, owned(false));                        // twice in one scope
  RETURN_IF_ERROR(fail_if(false, steps));
  return *v + *w;
}

TEST(Status, MacrosReturnTheFirstErrorWithItsCodeAndStopThere) {
  int steps = 0;
  Result<int> first = two_steps(true, true, &steps);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.error().code, ErrorCode::kUnsupported);
  EXPECT_EQ(steps, 1);
  steps = 0;
  Result<int> second = two_steps(false, true, &steps);
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(second.error().is_not_found());
  EXPECT_EQ(second.error().message, "no value");
  EXPECT_EQ(steps, 1);
  steps = 0;
  Result<int> both = two_steps(false, false, &steps);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(*both, 14);
  EXPECT_EQ(steps, 2);
}

TEST(Status, InFileKeepsTheCodeAndPosition) {
  const Error e = Error::parse("expected ']'", "", 3, 14).in_file("t.json");
  EXPECT_EQ(e.to_string(), "t.json:3:14: expected ']'");
  EXPECT_TRUE(e.is_parse());
}

// Each code comes from the failure it names, not from a default.
TEST(Status, TheCoreRaisesEachCodeWhereItsFailureIs) {
  Result<hlo::CollectiveGraph> bad_text = hlo::collective_graph_from_text("HloModule m\nENTRY e {", "x.hlo");
  ASSERT_FALSE(bad_text.ok());
  EXPECT_EQ(bad_text.error().code, ErrorCode::kParse) << bad_text.error().to_string();
  Result<hlo::CollectiveGraph> no_file = hlo::collective_graph_from_file("/nonexistent/x.hlo");
  ASSERT_FALSE(no_file.ok());
  EXPECT_EQ(no_file.error().code, ErrorCode::kNotFound);
  Result<topo::Topology> unknown = topo::make_topology("v9z:2x2");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, ErrorCode::kNotFound);
  Result<topo::Topology> bad_json = topo::topology_from_json("{\"dims\": [2, 0, 1]}", "t.json");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_EQ(bad_json.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad_json.error().file, "t.json");
  Result<topo::Topology> unreadable = topo::topology_from_json("{\"dims\": [2,", "t.json");
  ASSERT_FALSE(unreadable.ok());
  EXPECT_EQ(unreadable.error().code, ErrorCode::kParse);
}

}  // namespace
}  // namespace aoizora
