// What XLA's HLO text parser allows of each opcode: the operand count it insists on, the
// attributes it accepts (every opcode's generic ones and its own) and the one it requires
// first, as jaxlib's parser answers for each opcode (fuzz/hlo_opcode_table.py asks it and
// prints the rows of opcode_table.cpp). Also the form of the values the parser checks for
// the attributes the planner reads. Internal to hlo/.
#pragma once

#include <bitset>
#include <string>
#include <string_view>

namespace aoizora::hlo {

constexpr int kMaxAttributeNames = 192;
using AttributeSet = std::bitset<kMaxAttributeNames>;

struct OpcodeRules {
  std::string_view name;
  int operands = -1;     // the operand count XLA insists on, or -1
  AttributeSet allowed;  // the generic attributes and the opcode's own
  int required = -1;     // the attribute XLA requires first (an id), or -1
};

// The rules of `opcode`, or nullptr when XLA has no such opcode.
const OpcodeRules* find_opcode(std::string_view opcode);
// The id of an attribute name some opcode allows, or -1.
int attribute_id(std::string_view name);
std::string_view attribute_name(int id);
// Every opcode's attributes (backend_config, metadata, sharding, ...).
const AttributeSet& generic_attributes();
// Names of the set's attributes, comma-separated and sorted (for errors).
std::string attribute_names(const AttributeSet& set);

// Whether `value` has the form XLA's parser requires for attribute `id` (an integer, true or
// false, a braced integer list, a string, replica groups, source-target pairs, a comparison
// direction, a fusion kind); true for the attributes whose values are not checked here.
// Sets *what to the form expected when not.
bool attribute_value_ok(int id, std::string_view value, const char** what);

}  // namespace aoizora::hlo
