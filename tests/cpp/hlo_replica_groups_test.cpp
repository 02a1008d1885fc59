#include "aoizora/hlo/replica_groups.h"

#include <gtest/gtest.h>

namespace aoizora::hlo {
namespace {

Groups parse(std::string_view s) {
  auto r = parse_replica_groups(s);
  EXPECT_TRUE(r.ok()) << s << ": " << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : Groups{};
}

TEST(HloReplicaGroups, ExplicitListsParseAsWrittenWithSpacesOrEmpty) {
  EXPECT_EQ(parse("{{0,1},{2,3}}"), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(parse("{ {0, 4} , {1,5} }"), (Groups{{0, 4}, {1, 5}}));
  EXPECT_EQ(parse("{}"), Groups{});
}

TEST(HloReplicaGroups, IotaWithTranspose) {
  EXPECT_EQ(parse("[2,4]<=[4,2]T(1,0)"), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
  EXPECT_EQ(parse("[2,4]<=[8]"), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(parse("[4,2]<=[2,4]T(1,0)"), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // arange(8).reshape(2,2,2).transpose(2,0,1) -> [[0,2],[4,6]],[[1,3],[5,7]]
  EXPECT_EQ(parse("[2,4]<=[2,2,2]T(2,0,1)"), (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
}

TEST(HloReplicaGroups, MeshAxes) {
  EXPECT_EQ(parse("mesh['x'=2,'y'=4] {'y'}"), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(parse("mesh['x'=2,'y'=4] {'x'}"), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(parse("mesh[x=2,y=4] {x}"), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // Both axes, y listed first: y is the major (slower) index within the group.
  EXPECT_EQ(parse("mesh['x'=2,'y'=2] {'y','x'}"), (Groups{{0, 2, 1, 3}}));
  EXPECT_EQ(parse("mesh['x'=2,'y'=4], device_ids=(0,2,4,6,1,3,5,7) {'y'}"),
            (Groups{{0, 2, 4, 6}, {1, 3, 5, 7}}));
}

TEST(HloReplicaGroups, MeshIotaDeviceIds) {
  // As the TPU compiler prints them for a (data 2, context 4) candidate: the device list is
  // arange(8).reshape(2,4).T = (0,4,1,5,2,6,3,7) laid over the mesh [1,4,2].
  EXPECT_EQ(parse("mesh['axis_0'=1,'axis_1'=4,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_1'}"),
            (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(parse("mesh['a'=1,'b'=2,'c'=1,'d'=1,'e'=4], device_ids=([2,2,2]T(1,0,2)) {'b'}"),
            (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(parse("mesh['x'=4,'y'=2], device_ids=([8]<=[2,4]T(1,0)) {'x'}"),
            (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(parse("mesh['x'=4,'y'=2], device_ids=([2,4]T(1,0)) {'y'}"),
            (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
}

TEST(HloReplicaGroups, MeshSubAxes) {
  // x=4 splits into (2 major, 2 minor); 'x':(2)2 is the minor half, 'x':(1)2 the major one.
  EXPECT_EQ(parse("mesh['x'=4,'y'=2] {'x':(2)2}"), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(parse("mesh['x'=4,'y'=2] {'x':(1)2}"), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(parse("mesh['x'=4,'y'=2] {'x':(2)2,'y'}"), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
}

// Each malformed text fails with its own message at its own column (1-based; one past the
// text's last character when the error is found at its end).
TEST(HloReplicaGroups, MalformedTextSaysWhatWasExpected) {
  struct Case {
    std::string_view text;
    std::string_view expected;
    int column;
  };
  for (Case c : {Case{"{{0,1},{2,", "expected an integer", 11},
                 Case{"[2,4]<=[4,3]", "expected an iota group shape", 13},
                 Case{"[2,4]<=[4,2]T(0,0)", "expected a permutation of the reshape dims", 19},
                 Case{"mesh['x'=2] {'z'}", "expected an axis of the mesh", 17},
                 Case{"mesh['x'=4] {'x':(3)2}", "expected a sub-axis (pre)size dividing the axis", 22},
                 Case{"{{0,-1}}", "expected a device id in [0, 2^20)", 8},
                 Case{"garbage", "expected replica groups", 1},
                 Case{"[2,4]<=[8] trailing", "expected the end of replica_groups", 12},
                 Case{"mesh['x'=2,'y'=4], device_ids=(0,1) {'y'}", "expected as many device_ids as devices",
                      36},
                 Case{"[1048577,1048577]<=[1099513724929]", "expected an iota group shape", 35},
                 // The factorisation's own checks: 2 and 3 split an axis of 6 in ways that do
                 // not nest; (1)4 and (2)4 of an axis of 8 share its middle factor.
                 Case{"mesh['x'=6] {'x':(1)2,'x':(1)3}", "expected sub-axes that nest", 32},
                 Case{"mesh['x'=8] {'x':(1)4,'x':(2)4}", "expected group axes that do not overlap", 32}}) {
    Result<Groups> r = parse_replica_groups(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_TRUE(r.error().message.starts_with(c.expected)) << c.text << ": " << r.error().message;
    EXPECT_EQ(r.error().column, c.column) << c.text;
  }
}

TEST(HloReplicaGroups, SourceTargetPairs) {
  auto r = parse_source_target_pairs("{{0,1},{1,2},{2,0}}");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, (std::vector<std::pair<int, int>>{{0, 1}, {1, 2}, {2, 0}}));
  EXPECT_FALSE(parse_source_target_pairs("{{0,1,2}}").ok());
}

TEST(HloReplicaGroups, GroupModes) {
  EXPECT_EQ(group_mode(false, true, false), GroupMode::kCrossReplica);
  EXPECT_EQ(group_mode(true, false, false), GroupMode::kCrossPartition);
  EXPECT_EQ(group_mode(true, true, false), GroupMode::kCrossReplicaAndPartition);
  EXPECT_EQ(group_mode(true, true, true), GroupMode::kFlattenedId);
  // 2 replicas x 4 partitions; global id = replica * 4 + partition.
  auto part = resolve_groups({{0, 1}, {2, 3}}, GroupMode::kCrossPartition, 2, 4);
  ASSERT_TRUE(part.ok());
  EXPECT_EQ(*part, (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  auto rep = resolve_groups({{0, 1}}, GroupMode::kCrossReplica, 2, 4);
  ASSERT_TRUE(rep.ok());
  EXPECT_EQ(*rep, (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  auto both = resolve_groups({{0}}, GroupMode::kCrossReplicaAndPartition, 1, 4);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(*both, (Groups{{0, 1, 2, 3}}));
  auto all = resolve_groups({}, GroupMode::kCrossPartition, 1, 4);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, (Groups{{0, 1, 2, 3}}));
  auto flat = resolve_groups({{0, 7}}, GroupMode::kFlattenedId, 2, 4);
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(*flat, (Groups{{0, 7}}));
  EXPECT_FALSE(resolve_groups({{0, 8}}, GroupMode::kFlattenedId, 2, 4).ok());
  EXPECT_FALSE(resolve_groups({{4}}, GroupMode::kCrossPartition, 1, 4).ok());
  EXPECT_FALSE(resolve_groups({{0, 0, 1, 1, 2}}, GroupMode::kCrossPartition, 1, 4).ok());
  EXPECT_FALSE(resolve_groups({}, GroupMode::kFlattenedId, 1 << 11, 1 << 10).ok());
}

}  // namespace
}  // namespace aoizora::hlo
