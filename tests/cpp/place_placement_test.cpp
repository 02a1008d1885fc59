// place/placement.h: a placement as chip coordinates and back.
#include "aoizora/place/placement.h"

#include <gtest/gtest.h>

#include "aoizora/place/jax_default.h"
#include "place_test_support.h"

namespace aoizora::place {
namespace {

TEST(Coords, RoundTrip) {
  topo::Topology t = must("v5e:4x4");
  Placement p = *default_placement(t, {16});
  Result<Placement> q = placement_from_coords(t, coords_of(t, p));
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->device_of, p.device_of);
  EXPECT_FALSE(placement_from_coords(t, {{0, 0, 0}, {0, 0, 0}}).ok());
  EXPECT_FALSE(placement_from_coords(t, {{4, 0, 0}}).ok());
}

}  // namespace
}  // namespace aoizora::place
