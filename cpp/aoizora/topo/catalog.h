// The catalog of TPU slices by name ("v5e:2x4", "v4:2x2x2", ...) and of generations' chip
// figures. A generation's ChipSpec is its shipped hardware profile (topo/profile.h,
// profiles/<generation>.json); a profile file given by the user (`--hardware FILE`) replaces
// it. Wraparound rules: REFERENCE.md §2 (see catalog.cpp). Deterministic; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "aoizora/base/status.h"
#include "aoizora/topo/profile.h"
#include "aoizora/topo/topology.h"

namespace aoizora::topo {

// A topology from the catalog by name ("v5e:2x4", "v4:2x2x2", "v5p:4x4x4", ...) or from a
// JSON file path. Unknown names give an error that lists the valid ones.
Result<Topology> make_topology(const std::string& name_or_path);

// As above, then, when `hardware_path` is not empty, the chip figures of the profile file
// it names replace the generation's (with_hardware). Errors name the file.
Result<Topology> make_topology(const std::string& name_or_path, const std::string& hardware_path);

// `t` with `spec` as its chip figures: every grid link (dim >= 0) takes the profile's link
// bandwidth and hop latency; links of a custom topology keep their own. An error when the
// profile's generation differs from the topology's (a custom topology takes any).
Result<Topology> with_hardware(Topology t, const ChipSpec& spec);

// The catalog's valid names, for messages and `aoizora topology --list`.
std::vector<std::string> catalog_names();

// The shipped profile of a generation ("v4", "v5e", "v5p", "v6e", "tpu7x"; "7x"/"v7x" alias
// "tpu7x"), or an error listing the valid ones.
Result<HardwareProfile> hardware_profile(const std::string& generation);

// hardware_profile(generation).spec.
Result<ChipSpec> chip_spec(const std::string& generation);

// The shipped v5e profile's figures: the default chip of Q1 and Stage 1 when no topology
// says otherwise. Cannot fail (the shipped profiles are tested to parse).
ChipSpec default_chip_spec();

}  // namespace aoizora::topo
