#include <nanobind/stl/string.h>

#include "aoizora/base/status.h"
#include "aoizora/bind/bind.h"

namespace nb = nanobind;

namespace aoizora::bind {

namespace {

// The Python class of each ErrorCode, from aoizora.errors; set once by bind_base.
PyObject* error_classes[5] = {};

PyObject* python_class(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return error_classes[0];
    case ErrorCode::kParse: return error_classes[1];
    case ErrorCode::kNotFound: return error_classes[2];
    case ErrorCode::kUnsupported: return error_classes[3];
    case ErrorCode::kInternal: return error_classes[4];
  }
  return error_classes[0];
}

}  // namespace

void bind_base(nb::module_& m) {
  // Every core error reaches Python as a subclass of aoizora.errors.CoreError, by its code,
  // with the one-line text of aoizora::Error::to_string(). aoizora._core.CoreError is the
  // same class, so `except _core.CoreError` (and `except ValueError`) catch them all.
  nb::module_ errors = nb::module_::import_("aoizora.errors");
  const char* names[5] = {"InvalidArgumentError", "ParseError", "NotFoundError",
                          "UnsupportedError", "InternalError"};
  for (int i = 0; i < 5; ++i) {
    nb::object cls = errors.attr(names[i]);
    error_classes[i] = cls.release().ptr();  // kept for the module's life
  }
  m.attr("CoreError") = errors.attr("CoreError");
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const CoreError& e) {
      PyErr_SetString(python_class(e.code()), e.what());
    }
  });
  m.attr("__version__") = "0.1.0";
}

}  // namespace aoizora::bind
