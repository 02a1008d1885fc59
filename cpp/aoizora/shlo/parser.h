// Parser for the StableHLO MLIR text that `jax.jit(f).lower(...).as_text()` prints, with
// Shardy (`sdy.*`) or GSPMD (`mhlo.sharding`) shardings. It reads ops in pretty and generic
// form without knowing every op: an op is its results, its name, its operands (`%x`
// references), its regions, and a trailing type signature. Errors carry line and column.
#pragma once

#include <string_view>

#include "aoizora/base/status.h"
#include "aoizora/shlo/ir.h"

namespace aoizora::shlo {

Result<Module> parse_module(std::string_view text);

}  // namespace aoizora::shlo
