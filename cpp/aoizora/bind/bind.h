// The nanobind module aoizora._core is assembled from one binding file per stage, so each
// stage's bindings live next to nothing else.
#pragma once

#include <nanobind/nanobind.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "aoizora/base/status.h"

namespace aoizora::bind {

// Raised in Python as one subclass of aoizora.errors.CoreError (a ValueError) per ErrorCode,
// with Error::to_string() as its text; bind_base registers the translation.
class CoreError : public std::runtime_error {
 public:
  explicit CoreError(const std::string& what, ErrorCode code = ErrorCode::kInvalidArgument)
      : std::runtime_error(what), code_(code) {}
  explicit CoreError(const Error& error) : CoreError(error.to_string(), error.code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

// The value of a Result, or a CoreError carrying its one-line error and code.
template <typename T>
T unwrap(Result<T> result) {
  if (!result.ok()) throw CoreError(result.error());
  return std::move(result).value();
}

// Nothing on success; a CoreError carrying the one-line error and code otherwise.
inline void unwrap(const Status& status) {
  if (!status.ok()) throw CoreError(status.error());
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
