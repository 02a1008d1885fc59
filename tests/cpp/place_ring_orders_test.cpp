// place/ring_orders.h: snake and tile-cycle orders, whose neighbours are one hop apart.
#include "aoizora/place/ring_orders.h"

#include <gtest/gtest.h>

#include <vector>

#include "aoizora/place/placement.h"
#include "place_test_support.h"

namespace aoizora::place {
namespace {

TEST(RingOrders, SnakesAndCyclesAreOneHopRings) {
  topo::Topology t = must("v5e:2x4");
  for (const Placement& p : snake_orders(t)) {
    ASSERT_TRUE(validate(p, t).ok());
    for (size_t i = 0; i + 1 < p.device_of.size(); ++i) EXPECT_EQ(t.hops(p.device_of[i], p.device_of[i + 1]), 1) << p.name;
  }
  auto cycles = tile_cycle_orders(t, {8});
  ASSERT_EQ(cycles.size(), 1u);  // 2x4 over (x, y)
  const auto& c = cycles[0].device_of;
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(t.hops(c[i], c[(i + 1) % 8]), 1);
  topo::Topology t44 = must("v5e:4x4");
  auto quads = tile_cycle_orders(t44, {4, 4});  // 2x2 tiles (and 4x1 has no cycle)
  ASSERT_FALSE(quads.empty());
  for (const Placement& p : quads) {
    ASSERT_TRUE(validate(p, t44).ok());
    for (size_t g = 0; g < 16; g += 4)
      for (size_t i = 0; i < 4; ++i) EXPECT_EQ(t44.hops(p.device_of[g + i], p.device_of[g + (i + 1) % 4]), 1) << p.name;
  }
}

}  // namespace
}  // namespace aoizora::place
