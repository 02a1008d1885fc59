// A hand-written, single-pass parser for HLO module text (`compiled.as_text()`, XLA dumps).
//
// It accepts every attribute it does not understand (balanced braces, brackets, parentheses
// and strings are skipped), the FileNames/FunctionNames/FileLocations/StackFrames tables,
// `/*index=5*/` comments and instruction lines with or without '%' and inline operand
// shapes. Malformed input gives an Error with line, column and what was expected; the parser
// never throws, never reads out of bounds and never recurses without bound.
#pragma once

#include <string>
#include <string_view>

#include "aoizora/base/status.h"
#include "aoizora/hlo/hlo_module.h"

namespace aoizora::hlo {

// The module's string_views point into `text`, which must outlive it.
Result<HloModule> parse_hlo_module(std::string_view text, std::string filename = "");

// Parses one shape, e.g. "bf16[8,128]{1,0:T(8,128)(2,1)S(1)}" or "(f32[], s32[4])".
// The shape's string_views point into `text`.
Result<Shape> parse_shape(std::string_view text);

// Decodes Shape::layout_text, e.g. "1,0:T(8,128)(2,1)S(1)".
Result<Layout> parse_layout(std::string_view layout_text);

}  // namespace aoizora::hlo
