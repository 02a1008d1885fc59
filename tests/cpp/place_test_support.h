// Shared by the place/ and stage2/ placement tests: the catalog topologies they run on.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "aoizora/topo/catalog.h"

namespace aoizora::place {

// The named catalog topology (e.g. "v5e:2x4"), after a test failure if the name is unknown.
inline topo::Topology must(const std::string& name) {
  Result<topo::Topology> t = topo::make_topology(name);
  EXPECT_TRUE(t.ok()) << name;
  return std::move(t).value();
}

}  // namespace aoizora::place
