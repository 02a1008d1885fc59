// A lightweight IR of a parsed HLO module: computations of instructions with shapes,
// operands (resolved to indices), called computations (resolved to indices) and the raw text
// of every attribute. It does not round-trip the module; it keeps what the planner reads.
//
// Every string_view points into the text the module was parsed from: that text must outlive
// the module.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aoizora/hlo/shape.h"

namespace aoizora::hlo {

struct Attribute {
  std::string_view key;
  std::string_view value;  // raw text, e.g. "{{0,1},{2,3}}", "%add", "\"foo\"", "{...json...}"
};

// The integer that follows `"key"` in a backend_config's JSON text (`"key":"12"` or
// `"key":12`), looking from `from` on; nullopt when the key or a number is missing.
std::optional<int64_t> backend_config_int(std::string_view config, std::string_view key,
                                          size_t from = 0);

struct Instruction {
  std::string_view name;    // without the leading '%'; "<opcode>.anon[.N]" when nested
  std::string_view opcode;  // "fusion", "all-gather-start", "async-start", ...
  // For async-start/-update/-done: the opcode of the op they wrap ("slice" for a printed
  // `slice-start`, which the parser reads as XLA does: an async-start calling a computation
  // of parameters and that slice), or the root opcode of the computation an explicit
  // async-start `calls`. Empty for every other opcode.
  std::string_view async_wrapped;
  Shape shape;
  bool is_root = false;
  int line = 0;                            // 1-based line of the instruction in the text
  std::vector<int> operands;               // indices of earlier instructions of the computation
  std::string_view raw_operands;           // text between the opcode's parentheses
  // The attribute list as printed (", key=value, ...", possibly over several lines with
  // comments between attributes), validated by the parser and split on
  // demand by attr(): keeping one view instead of a vector of pairs per instruction keeps the
  // IR near the size of the text.
  std::string_view attribute_text;
  std::vector<int> called;                 // computation indices (calls, to_apply, body, ...)
  std::vector<std::string_view> called_keys;  // the attribute of each, parallel to `called`

  // The raw value of attribute `key`, or an empty view when absent.
  std::string_view attr(std::string_view key) const;
  bool has_attr(std::string_view key) const;
  // Every attribute, in order.
  std::vector<Attribute> attributes() const;
  // The computation attribute `key` calls (the first, for a list), or -1.
  int callee(std::string_view key) const;
};

struct Computation {
  std::string_view name;
  bool is_entry = false;
  int root = -1;                           // index of the ROOT (the last one when unmarked)
  std::vector<Instruction> instructions;   // in text (= schedule) order
};

// What the module header left to be inferred (replica_count / num_partitions absent).
struct HeaderFacts {
  bool has_replica_count = false;
  bool has_num_partitions = false;
  bool has_header = true;  // false: the text had no `HloModule` line
};

struct HloModule {
  std::string_view name;
  std::vector<Attribute> attributes;       // header attributes (num_partitions, ...)
  int64_t num_partitions = 1;
  int64_t replica_count = 1;
  bool is_scheduled = false;
  HeaderFacts header;
  int entry = -1;                          // index into computations
  // In definition order: a computation inlined as an attribute value (`to_apply={...}`, named
  // "_") comes before the computation that holds it, as callees come before callers.
  std::vector<Computation> computations;
  // Text of names the parser made up (nested instructions, a header-less module's name),
  // which the string_views above may point into. Shared so that a copy stays valid.
  std::shared_ptr<std::deque<std::string>> made_up_names = std::make_shared<std::deque<std::string>>();

  // The computation called `name` (with or without '%'), or -1.
  int find_computation(std::string_view name) const;
};

}  // namespace aoizora::hlo
