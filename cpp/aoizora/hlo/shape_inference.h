// Result shapes that HLO text may leave out (`ROOT y = add(x, x)`), inferred as XLA's parser
// infers them. XLA infers only some opcodes (can_infer_shape: elementwise ops, compare,
// select, tuple, get-tuple-element, dot, reduce, ...; never convert, reshape, collectives,
// custom-call or fusion); we infer the ones the cost model and the loader read, and give a
// clear Error for the rest of XLA's list. Layouts are left out of inferred shapes.
#pragma once

#include <string_view>

#include "aoizora/base/status.h"
#include "aoizora/hlo/hlo_module.h"

namespace aoizora::hlo {

// Whether XLA's parser accepts `opcode` without a result shape.
bool can_infer_shape(std::string_view opcode);

// The result shape of `ins`, whose operands index into `comp` and whose called computations
// index into `m`. The Error carries only the message; the parser adds the position.
Result<Shape> infer_shape(const Instruction& ins, const Computation& comp, const HloModule& m);

}  // namespace aoizora::hlo
