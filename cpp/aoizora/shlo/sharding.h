// Shardings of tensors over a named device mesh, as Shardy prints them
// (`#sdy.sharding<@mesh, [{"x"}, {"y", ?}]>`) and as GSPMD prints them
// (`mhlo.sharding = "{devices=[2,4]<=[8]}"`). A GSPMD tile assignment has no axis names:
// each tiled dimension becomes a synthetic axis named by its device-id stride and size
// ("s4x2"), so two GSPMD shardings that split the same devices the same way share axes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "aoizora/base/status.h"

namespace aoizora::shlo {

struct MeshAxis {
  std::string name;
  int64_t size = 1;
};

struct Mesh {
  std::string name;              // without '@'
  std::vector<MeshAxis> axes;    // major to minor
  int64_t num_devices() const;
  // Size of an axis by name, or 0 when unknown.
  int64_t axis_size(std::string_view axis) const;
};

// One axis (or sub-axis "x":(pre)size) a tensor dimension is split over.
struct AxisRef {
  std::string name;
  int64_t pre = 1;   // sub-axis pre-size; 1 for a whole axis
  int64_t size = 0;  // sub-axis size; 0 = the whole axis
  bool operator==(const AxisRef&) const = default;
};

struct DimSharding {
  std::vector<AxisRef> axes;  // major to minor
  bool open = false;          // "?" : the partitioner may shard it further
  bool operator==(const DimSharding&) const = default;
};

struct TensorSharding {
  std::string mesh;                 // mesh name; empty for a fully replicated value
  std::vector<DimSharding> dims;    // one per tensor dimension (may be empty = replicated)
  std::vector<AxisRef> replicated;  // explicitly replicated axes (informational)
  bool manual = false;              // GSPMD "{manual}"
  bool maximal = false;             // GSPMD "{maximal device=k}"
  bool operator==(const TensorSharding&) const = default;
};

// A set of meshes by name, used to resolve axis sizes.
struct MeshTable {
  std::vector<Mesh> meshes;
  const Mesh* find(std::string_view name) const;
  // Size of an axis reference in `mesh` (sub-axis size, or the axis size), 1 if unknown.
  int64_t size_of(std::string_view mesh, const AxisRef& axis) const;
};

// Parses the inside of `<@mesh, [{"x"}, {}], replicated={"y"}>` (with or without the
// leading "#sdy.sharding" and the angle brackets). Offsets in errors are 0-based into text.
Result<TensorSharding> parse_sdy_sharding(std::string_view text);

// Parses a GSPMD sharding string such as "{devices=[2,1,4]<=[2,4]T(1,0)
// last_tile_dim_replicate}". Synthetic axes are added to `mesh` (named "gspmd") as needed.
Result<TensorSharding> parse_gspmd_sharding(std::string_view text, int64_t num_devices,
                                            Mesh* mesh);

// Product of axis sizes that split dimension d (1 when unsharded or d out of range).
int64_t shard_factor(const MeshTable& meshes, const TensorSharding& s, size_t d);
// All axes the sharding uses, in dimension order.
std::vector<AxisRef> used_axes(const TensorSharding& s);
// `{"x"}, {}` style, for messages and tests.
std::string to_string(const TensorSharding& s);
std::string to_string(const AxisRef& a);
// `x`, or `x:(1)2` for a sub-axis: how per-axis tables and reports name an axis.
std::string axis_label(const AxisRef& a);
std::vector<std::string> axis_labels(const std::vector<AxisRef>& axes);

// Number of devices the sharding splits a tensor over.
int64_t num_shards(const MeshTable& meshes, const TensorSharding& s);

}  // namespace aoizora::shlo
