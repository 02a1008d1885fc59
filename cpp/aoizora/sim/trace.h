// Chrome trace export (the JSON that Perfetto and chrome://tracing open) of a simulation run
// with SimOptions::record_timeline: one track per chip with its ops (compute, waiting for
// group members, communicating, extrapolated iterations) and one counter per busy link
// (GB/s over time). Times are in microseconds of simulated time.
#pragma once

#include <string>

#include "aoizora/base/status.h"
#include "aoizora/sim/simulator.h"
#include "aoizora/topo/topology.h"

namespace aoizora::sim {

// The trace as a JSON document. Deterministic for the same result.
std::string trace_json(const SimResult& result, const topo::Topology& topology);

// Writes trace_json to `path` atomically (a temporary file next to it, then a rename), so a
// reader never sees half a trace. An error names the path and the failing step.
Status write_trace(const SimResult& result, const topo::Topology& topology,
                   const std::string& path);

}  // namespace aoizora::sim
