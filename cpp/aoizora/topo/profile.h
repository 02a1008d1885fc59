// Hardware profiles: a generation's ChipSpec as a versioned JSON document, with where each
// figure comes from. One file per generation ships in profiles/ (compiled into the library
// by CMake, so the catalog needs no file at run time); `--hardware FILE` reads another.
//
// Format (schema "aoizora.hardware/1"; every figure in SI units, all keys below required
// except "cores_per_chip" (default 1), "intra_chip_link" and "provenance", no other keys
// allowed; two cores per chip need an intra-chip link and one core none):
//   {"schema": "aoizora.hardware/1", "generation": "v5e", "device_kind": "TPU v5 lite",
//    "peak_flops": 1.97e14, "hbm_bytes": 1.6e10, "hbm_bandwidth": 8.19e11,
//    "mxu_size": 128, "mxu_efficiency": 1.0,
//    "link_bandwidth": 4.5e10, "hop_latency": 1e-6,
//    "collective_latency": {"all-gather": 1e-6, "all-reduce": 1e-6, "reduce-scatter": 1e-6,
//                           "all-to-all": 1e-6, "collective-permute": 1e-6,
//                           "collective-broadcast": 1e-6},
//    "algorithms": {"line": "bidirectional-line", "wrapped-axis": "bidirectional-ring",
//                   "grid": "dimension-order", "other": "unidirectional-ring"},
//    "cores_per_chip": 1 | 2,
//    "intra_chip_link": null | {"bandwidth": 1.2e12, "latency": 5e-7},
//    "provenance": {"fitted": false, "note": "...", "fitted_to": ["id", ...],
//                   "sources": {"<figure key>": "where it comes from", ...},
//                   "fitted_on": "2026-12-03", "fitted_parameters": ["link_bandwidth", ...],
//                   "residuals": {"<id>": {"before": -0.55, "after": 0.02}, ...},
//                   "basis": {"<field>": {"basis": "fitted" | "nominal"} |
//                             {"basis": "derived", "from": "v5e collective_latency.all-gather",
//                              "rule": "..."}, ...}}}
// (fitted_on, fitted_parameters, residuals and basis are optional and written by `aoizora
// calibrate`; they are written back only when set.) basis says, per field, whether its figure
// was fitted to measurements, derived from fitted generations by a stated rule, or is the
// nominal (vendor, REFERENCE) one. Its fields are basis_fields() (collective_latency per kind,
// intra_chip_link only when the chip has one); when given it must name every one of them, and
// every fitted_parameters entry must be "fitted" there.
// Errors name the field: unknown keys, missing keys, wrong types, negative or non-finite
// numbers, an unknown schema version, an algorithm the cost model does not implement. A key
// that older profiles carried and no model read ("dma_fixed_seconds"), at the top, in
// provenance.sources or in provenance.basis, is refused with a line saying to delete it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "aoizora/base/status.h"
#include "aoizora/topo/chip_spec.h"

namespace aoizora::topo {

inline constexpr const char* kHardwareSchema = "aoizora.hardware/1";

// The error of one measured point against the simulator, as a fraction of the measured time
// ((simulated - measured) / measured), on the profile before and after a fit.
struct FitResidual {
  double before = 0;
  double after = 0;
  bool operator==(const FitResidual&) const = default;
};

// How one field's figure was obtained (provenance.basis).
struct FieldBasis {
  std::string basis;  // "fitted", "derived" or "nominal"
  std::string from;   // derived: the generation and field it comes from ("v5e collective_latency.all-gather")
  std::string rule;   // derived: the rule, in words
  bool operator==(const FieldBasis&) const = default;
};

// The fields provenance.basis covers: every figure a model reads, a collective's fixed cost
// per kind ("collective_latency.all-gather", ...); "intra_chip_link" only on two-core chips.
std::vector<std::string> basis_fields(bool intra_chip_link);

// Where a profile's figures come from.
struct Provenance {
  bool fitted = false;                       // true once fitted to measurements
  std::string note;                          // one paragraph for a human
  std::vector<std::string> fitted_to;        // ids of the measurements it was fitted to
  std::map<std::string, std::string> sources;  // figure key -> source
  std::string fitted_on;                     // UTC date of the fit (YYYY-MM-DD); "" if none
  // Figures the fit set ("link_bandwidth", "collective_latency.all-reduce", ...); the
  // others are the base profile's.
  std::vector<std::string> fitted_parameters;
  std::map<std::string, FitResidual> residuals;  // measurement id -> error before/after
  std::map<std::string, FieldBasis> basis;       // field -> fitted, derived or nominal; empty if not stated
  bool operator==(const Provenance&) const = default;
};

struct HardwareProfile {
  ChipSpec spec;
  Provenance provenance;
  bool operator==(const HardwareProfile&) const = default;
};

// Parses a profile from JSON text; `file` labels errors (empty for text).
Result<HardwareProfile> profile_from_json(const std::string& text, const std::string& file = "");

// Reads and parses a profile file; an unreadable file is an error naming it.
Result<HardwareProfile> read_profile_file(const std::string& path);

// The profile as JSON text in the format above (deterministic; numbers round-trip exactly).
std::string profile_to_json(const HardwareProfile& profile);

// The shipped profile text of a generation ("v4", "v5e", "v5p", "v6e", "tpu7x"), compiled in
// from profiles/<generation>.json; empty when there is none. Defined in a file CMake
// generates (shipped_profiles.cpp in the build tree).
std::string shipped_profile_text(const std::string& generation);

}  // namespace aoizora::topo
