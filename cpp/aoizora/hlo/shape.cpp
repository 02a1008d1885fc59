#include "aoizora/hlo/shape.h"

#include <algorithm>
#include <array>
#include <utility>

namespace aoizora::hlo {
namespace {

struct TypeInfo {
  std::string_view name;
  PrimitiveType type;
  int bits;
};

constexpr std::array<TypeInfo, 34> kTypes = {{
    {"pred", PrimitiveType::kPred, 8},
    {"s1", PrimitiveType::kS1, 1},
    {"s2", PrimitiveType::kS2, 2},
    {"s4", PrimitiveType::kS4, 4},
    {"s8", PrimitiveType::kS8, 8},
    {"s16", PrimitiveType::kS16, 16},
    {"s32", PrimitiveType::kS32, 32},
    {"s64", PrimitiveType::kS64, 64},
    {"u1", PrimitiveType::kU1, 1},
    {"u2", PrimitiveType::kU2, 2},
    {"u4", PrimitiveType::kU4, 4},
    {"u8", PrimitiveType::kU8, 8},
    {"u16", PrimitiveType::kU16, 16},
    {"u32", PrimitiveType::kU32, 32},
    {"u64", PrimitiveType::kU64, 64},
    {"f4e2m1fn", PrimitiveType::kF4E2M1FN, 4},
    {"f8e3m4", PrimitiveType::kF8E3M4, 8},
    {"f8e4m3", PrimitiveType::kF8E4M3, 8},
    {"f8e4m3fn", PrimitiveType::kF8E4M3FN, 8},
    {"f8e4m3b11fnuz", PrimitiveType::kF8E4M3B11FNUZ, 8},
    {"f8e4m3fnuz", PrimitiveType::kF8E4M3FNUZ, 8},
    {"f8e5m2", PrimitiveType::kF8E5M2, 8},
    {"f8e5m2fnuz", PrimitiveType::kF8E5M2FNUZ, 8},
    {"f8e8m0fnu", PrimitiveType::kF8E8M0FNU, 8},
    {"f16", PrimitiveType::kF16, 16},
    {"bf16", PrimitiveType::kBF16, 16},
    {"f32", PrimitiveType::kF32, 32},
    {"f64", PrimitiveType::kF64, 64},
    {"c64", PrimitiveType::kC64, 64},
    {"c128", PrimitiveType::kC128, 128},
    {"token", PrimitiveType::kToken, 0},
    {"opaque", PrimitiveType::kOpaque, 0},
    {"tuple", PrimitiveType::kTuple, 0},
    {"invalid", PrimitiveType::kInvalid, 0},
}};

constexpr int64_t kSaturated = int64_t{1} << 60;

}  // namespace

PrimitiveType primitive_type_from_name(std::string_view name) {
  for (const TypeInfo& t : kTypes)
    if (t.name == name) return t.type;
  return PrimitiveType::kInvalid;
}

std::string_view primitive_type_name(PrimitiveType type) {
  for (const TypeInfo& t : kTypes)
    if (t.type == type) return t.name;
  return "invalid";
}

int bit_width(PrimitiveType type) {
  for (const TypeInfo& t : kTypes)
    if (t.type == type) return t.bits;
  return 0;
}

int64_t Shape::num_elements() const {
  if (!is_array()) return 0;
  // Saturates instead of overflowing: a malformed file must not cause undefined behaviour.
  int64_t n = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(n, d, &n)) return kSaturated;
  return n;
}

int64_t Shape::byte_size() const {
  if (is_tuple()) {
    int64_t total = 0;
    for (const Shape& s : tuple) total = std::min(total + s.byte_size(), kSaturated);
    return total;
  }
  if (!is_array()) return 0;
  const int64_t n = num_elements();
  const int bits = bit_width(type);
  if (n > kSaturated / 128) return kSaturated;
  return (n * bits + 7) / 8;
}

}  // namespace aoizora::hlo
