// place/jax_default.h: the device order jax.make_mesh picks (mesh_utils.create_device_mesh), ported.
#include "aoizora/place/jax_default.h"

#include <gtest/gtest.h>

#include <vector>

#include "aoizora/place/placement.h"
#include "place_test_support.h"

namespace aoizora::place {
namespace {

TEST(JaxDefault, HandlersAndTorusAssignment) {
  // v5e with 8 chips: the tray ring (0,1,2,3,7,6,5,4) whatever the mesh shape.
  Result<Placement> a = default_placement(must("v5e:2x4"), {2, 4});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->device_of, (std::vector<int>{0, 1, 2, 3, 7, 6, 5, 4}));
  // v5e 4x4 with a 1D mesh of 16: the 4x4 tray ring.
  Result<Placement> b = default_placement(must("v5e:4x4"), {16});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->device_of[5], 6);
  // v5e 4x4 as 4x4: logical axis 1 takes x (with the size-1 z), axis 0 takes y: row-major.
  Result<Placement> c = default_placement(must("v5e:4x4"), {4, 4});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->device_of, row_major(must("v5e:4x4")).device_of);
  // v4 2x2x2 as (2, 4): axis 1 takes x,y (x major), axis 0 takes z.
  Result<Placement> d = default_placement(must("v4:2x2x2"), {2, 4});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->device_of, (std::vector<int>{0, 2, 1, 3, 4, 6, 5, 7}));
    // (32, 2) on 4x4x4 needs a 2 out of a 4: JAX raises, so there is no default.
  EXPECT_TRUE(default_placement(must("v5p:2x4x4"), {8, 4}).ok());
  EXPECT_FALSE(default_placement(must("v5p:4x4x4"), {32, 2}).ok());
  // v5e may split: (2, 8) on 4x4.
  EXPECT_TRUE(default_placement(must("v5e:4x4"), {2, 8}).ok());
}

}  // namespace
}  // namespace aoizora::place
