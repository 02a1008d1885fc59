#include "aoizora/place/placement.h"

#include <numeric>

namespace aoizora::place {
namespace {

std::string coords_text(const topo::DeviceCoords& c, int cores_per_chip) {
  std::string out = "(" + std::to_string(c[0]) + ", " + std::to_string(c[1]) + ", " + std::to_string(c[2]);
  if (cores_per_chip > 1) out += ", core " + std::to_string(c[3]);
  return out + ")";
}

}  // namespace

Status validate(const Placement& p, const topo::Topology& t) {
  const int n = t.num_devices();
  std::vector<char> used(static_cast<size_t>(n), 0);
  for (size_t i = 0; i < p.device_of.size(); ++i) {
    const int d = p.device_of[i];
    if (d < 0 || d >= n)
      return Error::invalid("placement '" + p.name + "' puts partition " + std::to_string(i) + " on device " +
                            std::to_string(d) + ", outside 0.." + std::to_string(n - 1));
    if (used[static_cast<size_t>(d)]++)
      return Error::invalid("placement '" + p.name + "' puts two partitions on device " + std::to_string(d));
  }
  return Status::success();
}

Result<Placement> placement_from_coords(const topo::Topology& t,
                                        const std::vector<topo::DeviceCoords>& coords,
                                        std::string name) {
  Placement p;
  p.name = std::move(name);
  for (const auto& c : coords) {
    const int id = t.device_at(c);
    if (id < 0) return Error::invalid("no device at " + coords_text(c, t.cores_per_chip()) + " in " + t.name);
    p.device_of.push_back(id);
  }
  RETURN_IF_ERROR(validate(p, t));
  return p;
}

std::vector<topo::DeviceCoords> coords_of(const topo::Topology& t, const Placement& p) {
  std::vector<topo::DeviceCoords> out;
  out.reserve(p.device_of.size());
  for (int d : p.device_of) out.push_back(t.device_coords(d));
  return out;
}

Placement row_major(const topo::Topology& t) {
  Placement p{"row-major", std::vector<int>(static_cast<size_t>(t.num_devices()))};
  std::iota(p.device_of.begin(), p.device_of.end(), 0);
  return p;
}

}  // namespace aoizora::place
