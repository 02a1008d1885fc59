// place/axis_order.h: how many axis orders a mesh has on a slice, and their names.
#include "aoizora/place/axis_order.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aoizora/place/placement.h"
#include "place_test_support.h"

namespace aoizora::place {
namespace {

size_t count_orders(const std::string& topo_name, MeshShape mesh, bool remove = true) {
  AxisOrderOptions o;
  o.remove_symmetric = remove;
  Result<std::vector<Placement>> r = enumerate_axis_orders(must(topo_name), mesh, o);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  for (const Placement& p : *r) EXPECT_TRUE(validate(p, must(topo_name)).ok()) << p.name;
  return r->size();
}

// With power-of-two sizes an axis order is a bijection between the bits of the logical index
// and the bits of the physical coordinates (every split is allowed, and whole axes are the
// bit pairs kept in order), so there are (number of bits)! orders. Every order puts partition
// 0 on chip (0,0), so no reflection relates two of them; a transpose of equal axes would pair
// them, but it changes dimension-order routes, so it is not a symmetry (place/symmetry.h).
TEST(AxisOrders, CountsOn2x4) {
  // 2x4: bits x0 | y1 y0. 3! orders; 2 != 4, so no transpose.
  EXPECT_EQ(count_orders("v5e:2x4", {8}), 6u);
  EXPECT_EQ(count_orders("v5e:2x4", {2, 4}), 6u);
  EXPECT_EQ(count_orders("v5e:2x4", {4, 2}), 6u);
  EXPECT_EQ(count_orders("v5e:2x4", {2, 2, 2}), 6u);
}

TEST(AxisOrders, CountsOn4x4) {
  // 4x4: bits x1 x0 | y1 y0. 4! = 24 orders, all kept: the x<->y transpose changes routes.
  EXPECT_EQ(count_orders("v5e:4x4", {4, 4}, false), 24u);
  EXPECT_EQ(count_orders("v5e:4x4", {4, 4}), 24u);
  EXPECT_EQ(count_orders("v5e:4x4", {16}), 24u);
  EXPECT_EQ(count_orders("v5e:4x4", {2, 8}), 24u);
  // Axes must multiply to the chips.
  EXPECT_FALSE(enumerate_axis_orders(must("v5e:4x4"), {4, 2}).ok());
}

TEST(AxisOrders, WholeAxesComeFirstAndAreNamed) {
  Result<std::vector<Placement>> r = enumerate_axis_orders(must("v5e:2x4"), {2, 4});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].name, "axes x|y");
  // x|y: partition p = 4i + j on (x=i, y=j).
  EXPECT_EQ((*r)[0].device_of, (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
}

}  // namespace
}  // namespace aoizora::place
