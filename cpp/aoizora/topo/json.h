// A small JSON reader for topology files: objects, arrays, numbers, strings, true/false/null.
// Enough for hand-written fabric descriptions; not a general-purpose library (no \u escapes
// beyond ASCII, numbers as double).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "aoizora/base/status.h"

namespace aoizora::topo::json {

struct Value {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  std::map<std::string, Value> object;

  bool is_object() const { return type == Type::kObject; }
  bool is_array() const { return type == Type::kArray; }
  bool is_number() const { return type == Type::kNumber; }
  // Member `key` of an object, or nullptr.
  const Value* find(const std::string& key) const;
};

// Parses `text`; errors carry line and column, and `file` when given.
Result<Value> parse(const std::string& text, const std::string& file = "");

}  // namespace aoizora::topo::json
