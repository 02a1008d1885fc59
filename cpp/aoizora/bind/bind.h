// The nanobind module aoizora._core is assembled from one binding file per stage, so each
// stage's bindings live next to nothing else.
#pragma once

#include <nanobind/nanobind.h>

#include <stdexcept>
#include <utility>

#include "aoizora/base/status.h"

namespace aoizora::bind {

// Raised in Python as aoizora._core.CoreError (a ValueError) with Error::to_string().
class CoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The value of a Result, or a CoreError carrying its one-line error.
template <typename T>
T unwrap(Result<T> result) {
  if (!result.ok()) throw CoreError(result.error().to_string());
  return std::move(result).value();
}

// Nothing on success; a CoreError carrying the one-line error otherwise.
inline void unwrap(const Status& status) {
  if (!status.ok()) throw CoreError(status.error().to_string());
}

void bind_base(nanobind::module_& m);
void bind_hlo(nanobind::module_& m);
void bind_topo(nanobind::module_& m);
void bind_place(nanobind::module_& m);
void bind_cost(nanobind::module_& m);    // flows and Q2
void bind_stage2(nanobind::module_& m);  // the placement search
void bind_sim(nanobind::module_& m);
void bind_stage1(nanobind::module_& m);

}  // namespace aoizora::bind
