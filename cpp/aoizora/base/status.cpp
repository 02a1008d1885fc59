#include "aoizora/base/status.h"

namespace aoizora {

std::string Error::to_string() const {
  std::string out;
  if (!file.empty()) out += file + ":";
  if (line > 0) {
    out += std::to_string(line) + ":";
    if (column > 0) out += std::to_string(column) + ":";
  }
  if (!out.empty()) out += " ";
  return out + message;
}

}  // namespace aoizora
