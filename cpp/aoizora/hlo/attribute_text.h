// Where an attribute value of HLO text ends: the one rule that the parser (which validates
// attribute lists) and Instruction::attr (which re-reads them on demand) share.
//
// A value starts at its first character (after `key=` and any spaces, newlines or comments)
// and, being one token to XLA's lexer, ends before a top-level ',', space, unmatched closing
// bracket, newline or comment: `dimensions={0} ROOT r = ...` is a value and the next
// instruction. Strings and bracketed groups (which may span lines) are skipped whole. The
// mesh form of replica_groups keeps its space and its ", device_ids=(...)", and a literal its
// spaces.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace aoizora::hlo {

struct ValueEnd {
  size_t end = 0;  // one past the value's last non-space character
  bool ok = true;  // false: an unterminated string or bracket (end is then the text's end)
  size_t bad = 0;  // where the unterminated string or bracket opened
};

// `key` is the attribute's name: a custom-call's `literal=` (a shape, a space, its values)
// is the one value that goes on after a top-level space.
ValueEnd attribute_value_end(std::string_view text, size_t value_begin, std::string_view key);

// An attribute value ends at a top-level ',' except the mesh form of replica_groups, which
// keeps its ", device_ids=(...)": for a value starting at `value_begin` and a top-level comma
// at `comma`, the position to go on scanning from, or npos when the comma ends the value.
size_t mesh_value_continues(std::string_view text, size_t value_begin, size_t comma);

// The whole numbers of an attribute value, in order, whatever separates them:
// "{1,2}" -> [1, 2]. Lenient (for cost estimates): signs and junk are skipped.
std::vector<int64_t> attribute_ints(std::string_view value);

// A value that is one whole number, all of it ("7", "-1"), or nullopt ("7}", "", "x").
std::optional<int64_t> attribute_int(std::string_view value);

}  // namespace aoizora::hlo
