// The part of a StableHLO module that Stage 1 reads: functions, ops with their operands,
// result types, shardings, regions and raw attribute text. Values are numbered per module;
// an op refers to its operands by value id. The parser keeps each op's attribute text
// (everything outside its regions) so analyses can read the attributes they need.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aoizora/shlo/sharding.h"

namespace aoizora::shlo {

struct TensorType {
  std::string dtype;            // "bf16", "f32", "i1", "token", "tuple", ...
  std::vector<int64_t> shape;   // empty for a scalar
  double element_bytes = 0;     // 0.5 for i4, 0 for tokens
  int64_t num_elements() const;
  double bytes() const { return element_bytes * static_cast<double>(num_elements()); }
  bool operator==(const TensorType&) const = default;
};

// Parses "tensor<2x256xbf16>", "tensor<i32>", "!stablehlo.token", "tuple<...>".
Result<TensorType> parse_tensor_type(std::string_view text);

struct Value {
  std::string name;                      // "%0", "%0#1", "%arg3"
  TensorType type;
  std::optional<TensorSharding> sharding;  // as annotated in the text, if any
};

struct Block;

struct Op {
  std::string name;                 // "stablehlo.dot_general", "func.call", "sdy.manual_computation"
  std::vector<int> operands;        // value ids
  std::vector<int> results;         // value ids
  std::vector<Block> regions;
  std::string attrs;                // the op text outside its regions (attributes, types)
  std::string callee;               // func.call / custom_call target, without '@'
  int line = 0;                     // 1-based position of the op in the text
  int column = 0;
};

struct Block {
  std::vector<int> args;            // value ids
  std::vector<Op> ops;
};

struct Func {
  std::string name;
  bool is_public = false;
  std::vector<int> args;                             // value ids (shardings on the values)
  std::vector<TensorType> result_types;
  std::vector<std::optional<TensorSharding>> result_shardings;
  Block body;
};

struct Module {
  std::string name;
  int64_t num_partitions = 1;
  int64_t num_replicas = 1;
  MeshTable meshes;
  std::vector<Func> funcs;
  std::vector<Value> values;
  bool shardy = false;   // shardings came as sdy attributes (else GSPMD or none)

  const Func* find_func(std::string_view name) const;
  const Func* entry() const;   // "main", else the first public function
};

// Attribute helpers over Op::attrs.
// The integer list after `key = [` or `key = array<i64: ...>` (e.g. "contracting_dims"),
// nullopt when absent. For "contracting_dims = [1] x [0]" `which` selects the side.
std::optional<std::vector<int64_t>> attr_int_list(std::string_view attrs, std::string_view key,
                                                  int which = 0);
// The integer after `key = ` (e.g. "split_count = 4 : i64").
std::optional<int64_t> attr_int(std::string_view attrs, std::string_view key);
// The rows of `key = dense<[[0, 1], [2, 3]]>` (replica_groups, source_target_pairs).
std::optional<std::vector<std::vector<int64_t>>> attr_dense_2d(std::string_view attrs,
                                                               std::string_view key);

}  // namespace aoizora::shlo
