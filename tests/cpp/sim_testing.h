// Shared by the simulator tests: unwraps a simulation that must succeed.
#pragma once

#include <gtest/gtest.h>

#include <utility>

#include "aoizora/sim/simulator.h"

namespace aoizora::sim {

// The result, or an empty one after a test failure naming the error.
inline SimResult Ok(Result<SimResult> r) {
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().to_string());
  return r.ok() ? std::move(r).value() : SimResult{};
}

}  // namespace aoizora::sim
