// Shapes and layouts in HLO text, read at a Lexer's cursor: arrays `f32[8,128]{1,0:T(8,128)}`
// (spaces and comments allowed between tokens, as XLA's lexer allows: `s32 [5, 10] {1, 0}`),
// tuples `(f32[], s32[4])`, buffers `b(f32[16])` (read as the shape they hold), token and
// opaque. A `{` after the dimensions opens a layout only when an integer or ':' follows it,
// so that `-> f32[4]{` can open a computation body. Internal to hlo/ (hlo_parser.h has the
// public parse_shape and parse_layout).
#pragma once

#include "aoizora/base/status.h"
#include "aoizora/hlo/hlo_lexer.h"
#include "aoizora/hlo/shape.h"

namespace aoizora::hlo {

constexpr int kMaxNesting = 64;  // tuple and operand nesting; deeper input is an Error

// Whether a shape starts at the cursor (which is at a token, not at a space).
bool can_be_shape(const Lexer& lx);

// Reads a shape into `out`, or only checks it when `out` is null (operand shapes).
Status read_shape(Lexer& lx, Shape* out, int depth = 0);

// Reads a layout's contents with the cursor just after its '{', through the '}'. `rank` is
// the shape's rank (the number of minor_to_major entries a layout must list), or -1 to skip
// that check.
Status read_layout(Lexer& lx, Layout* out, int rank);

}  // namespace aoizora::hlo
