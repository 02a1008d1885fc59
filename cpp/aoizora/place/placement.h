// A placement maps each logical device (partition id, i.e. index into mesh.devices.flat)
// to a physical chip. In JAX the device order of the Mesh *is* the placement.
#pragma once

#include <string>
#include <vector>

namespace aoizora::place {

struct Placement {
  std::string name;               // "default", "axis-order y,x", "snake", "search#12", ...
  std::vector<int> chip_of;       // chip_of[partition id] = chip id
};

}  // namespace aoizora::place
