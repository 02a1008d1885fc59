// Checks a constant's literal against its shape as XLA's parser does: a scalar (which fills
// an array), or braces
// nested as deep as the rank with as many elements as each dimension (`{...}` for an elided
// array), a tuple in parentheses; numbers, true/false, inf/nan, complex `(re, im)`; integer
// values integral and in their type's range. Float ranges and NaN payloads are not checked.
// Internal to hlo/.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "aoizora/hlo/shape.h"

namespace aoizora::hlo {

// Empty when `text` (what the constant's parentheses hold) is a literal of `shape`; else what
// is wrong, with *at set to its offset in `text`.
std::string literal_error(const Shape& shape, std::string_view text, size_t* at);

}  // namespace aoizora::hlo
