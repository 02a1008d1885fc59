// Trip counts of while loops: from the while's backend_config (`"known_trip_count":{"n":"4"}`)
// or, failing that, from the loop condition's compare of the induction variable against a
// constant (looking through a fusion root and copies), with the initial value taken from the
// while's operand tuple and the step from the body's update of the variable (a constant
// added or subtracted); where either is not a constant, the count is unknown.
#pragma once

#include <cstdint>
#include <optional>

#include "aoizora/hlo/hlo_module.h"

namespace aoizora::hlo {

// The number of body executions of the while instruction `instruction` of `computation`, or
// nullopt when neither source gives it.
std::optional<int64_t> while_trip_count(const HloModule& module, int computation,
                                        int instruction);

}  // namespace aoizora::hlo
