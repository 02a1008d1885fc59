#include <nanobind/stl/string.h>

#include "aoizora/base/status.h"
#include "aoizora/bind/bind.h"

namespace nb = nanobind;

namespace aoizora::bind {

void bind_base(nb::module_& m) {
  // Every core error reaches Python as aoizora._core.CoreError with the one-line text of
  // aoizora::Error::to_string().
  static nb::exception<CoreError> core_error(m, "CoreError", PyExc_ValueError);
  (void)core_error;
  m.attr("__version__") = "0.1.0";
}

}  // namespace aoizora::bind
