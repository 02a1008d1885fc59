#include "aoizora/bind/bind.h"

namespace nb = nanobind;

namespace aoizora::bind {

void bind_shlo(nb::module_& m) { (void)m; }

}  // namespace aoizora::bind
