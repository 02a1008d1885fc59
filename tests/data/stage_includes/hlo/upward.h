// A fixture for the StageIncludes tests (CMakeLists.txt): an hlo/ header that includes a
// stage above hlo (place/) beside ones it may include.
#pragma once

#include "aoizora/base/status.h"
#include "aoizora/hlo/shape.h"
#include "aoizora/place/placement.h"
