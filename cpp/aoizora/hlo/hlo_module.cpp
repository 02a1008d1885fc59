#include "aoizora/hlo/hlo_module.h"

namespace aoizora::hlo {

std::string_view Instruction::attr(std::string_view key) const {
  for (const Attribute& a : attributes)
    if (a.key == key) return a.value;
  return {};
}

bool Instruction::has_attr(std::string_view key) const {
  for (const Attribute& a : attributes)
    if (a.key == key) return true;
  return false;
}

int HloModule::find_computation(std::string_view name) const {
  if (!name.empty() && name.front() == '%') name.remove_prefix(1);
  for (size_t i = 0; i < computations.size(); ++i)
    if (computations[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace aoizora::hlo
