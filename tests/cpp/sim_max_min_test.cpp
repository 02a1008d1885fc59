#include "aoizora/sim/max_min.h"

#include <gtest/gtest.h>

#include <cmath>
#include <span>

namespace aoizora::sim {
namespace {

TEST(SimMaxMin, OneLinkSplitsEvenly) {
  auto r = max_min_rates({{0}, {0}, {0}}, {9.0});
  ASSERT_EQ(r.size(), 3u);
  for (double x : r) EXPECT_DOUBLE_EQ(x, 3.0);
}

// Textbook: B crosses both links; link 1 (cap 4) is B and C's bottleneck at 2 each; A then
// takes what B leaves on link 0.
TEST(SimMaxMin, TwoLinksBottleneckFirst) {
  auto r = max_min_rates({{0}, {0, 1}, {1}}, {10.0, 4.0});
  EXPECT_DOUBLE_EQ(r[0], 8.0);
  EXPECT_DOUBLE_EQ(r[1], 2.0);
  EXPECT_DOUBLE_EQ(r[2], 2.0);
}

// A flow limited elsewhere (C by link 1) frees its share of link 0 for the others.
TEST(SimMaxMin, FlowLimitedElsewhere) {
  auto r = max_min_rates({{0}, {0}, {0, 1}}, {9.0, 1.0});
  EXPECT_DOUBLE_EQ(r[2], 1.0);
  EXPECT_DOUBLE_EQ(r[0], 4.0);
  EXPECT_DOUBLE_EQ(r[1], 4.0);
}

// Parking lot: one long flow over three unit links, one short flow per link: all get 1/2.
TEST(SimMaxMin, ParkingLot) {
  auto r = max_min_rates({{0, 1, 2}, {0}, {1}, {2}}, {1.0, 1.0, 1.0});
  for (double x : r) EXPECT_DOUBLE_EQ(x, 0.5);
}

// Unequal capacities along a path: the long flow gets the tightest share, short flows the rest.
TEST(SimMaxMin, ThreeLevels) {
  // links: 0 cap 3 (flows 0,1,2), 1 cap 10 (flows 2,3), 2 cap 1 (flows 1)
  auto r = max_min_rates({{0}, {0, 2}, {0, 1}, {1}}, {3.0, 10.0, 1.0});
  EXPECT_DOUBLE_EQ(r[1], 1.0);   // limited by link 2
  EXPECT_DOUBLE_EQ(r[0], 1.0);   // link 0: (3 - 1) / 2
  EXPECT_DOUBLE_EQ(r[2], 1.0);
  EXPECT_DOUBLE_EQ(r[3], 9.0);   // link 1 leftover
}

TEST(SimMaxMin, FlowWithoutLinksIsUnconstrained) {
  auto r = max_min_rates({{}, {0}}, {5.0});
  EXPECT_TRUE(std::isinf(r[0]));
  EXPECT_DOUBLE_EQ(r[1], 5.0);
}

// The solver keeps scratch between calls; a second, different problem must not see the first.
TEST(SimMaxMin, SolverIsReusable) {
  MaxMinSolver solver({10.0, 4.0});
  std::vector<int> a{0}, b{0, 1}, c{1};
  std::vector<std::span<const int>> first{a, b, c};
  std::vector<double> rates;
  solver.solve(first, rates);
  EXPECT_DOUBLE_EQ(rates[0], 8.0);
  std::vector<std::span<const int>> second{c, c};
  solver.solve(second, rates);
  ASSERT_EQ(rates.size(), 2u);
  EXPECT_DOUBLE_EQ(rates[0], 2.0);
  EXPECT_DOUBLE_EQ(rates[1], 2.0);
  std::vector<std::span<const int>> third{a};
  solver.solve(third, rates);
  EXPECT_DOUBLE_EQ(rates[0], 10.0);
}

// Max-min invariants on a larger random instance: no link over capacity, and every flow has a
// saturated link on its path on which it has the largest rate.
TEST(SimMaxMin, RandomInstanceIsMaxMinFair) {
  const int links = 12, flows = 40;
  std::vector<double> cap(links);
  uint32_t x = 12345;
  auto rnd = [&] { x = x * 1664525u + 1013904223u; return x >> 8; };
  for (int l = 0; l < links; ++l) cap[l] = 1.0 + rnd() % 10;
  std::vector<std::vector<int>> fl(flows);
  for (auto& f : fl) {
    int len = 1 + rnd() % 4;
    for (int k = 0; k < len; ++k) {
      int l = rnd() % links;
      if (std::find(f.begin(), f.end(), l) == f.end()) f.push_back(l);
    }
  }
  auto r = max_min_rates(fl, cap);
  std::vector<double> load(links, 0);
  for (int i = 0; i < flows; ++i)
    for (int l : fl[i]) load[l] += r[i];
  for (int l = 0; l < links; ++l) EXPECT_LE(load[l], cap[l] * (1 + 1e-12));
  for (int i = 0; i < flows; ++i) {
    bool bottleneck = false;
    for (int l : fl[i]) {
      if (load[l] < cap[l] * (1 - 1e-9)) continue;
      bool largest = true;
      for (int j = 0; j < flows; ++j)
        if (std::find(fl[j].begin(), fl[j].end(), l) != fl[j].end() && r[j] > r[i] * (1 + 1e-9))
          largest = false;
      if (largest) bottleneck = true;
    }
    EXPECT_TRUE(bottleneck) << "flow " << i;
  }
}

}  // namespace
}  // namespace aoizora::sim
