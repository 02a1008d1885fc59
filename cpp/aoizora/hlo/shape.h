// Shapes of compiled HLO: arrays (element type, dims, layout with tiling and memory space),
// tuples (possibly nested), tokens. Only what the planner needs: sizes in bytes and element
// counts; layouts are kept as text for inspection (byte sizes ignore tile padding).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace aoizora::hlo {

enum class PrimitiveType : uint8_t {
  kInvalid,
  kPred,
  kS1, kS2, kS4, kS8, kS16, kS32, kS64,
  kU1, kU2, kU4, kU8, kU16, kU32, kU64,
  kF4E2M1FN, kF8E3M4, kF8E4M3, kF8E4M3FN, kF8E4M3B11FNUZ, kF8E4M3FNUZ, kF8E5M2,
  kF8E5M2FNUZ, kF8E8M0FNU,
  kF16, kBF16, kF32, kF64, kC64, kC128,
  kToken, kOpaque,
  kTuple,
};

// The HLO spelling ("bf16", "f8e4m3fn", ...); kInvalid for an unknown name.
PrimitiveType primitive_type_from_name(std::string_view name);
std::string_view primitive_type_name(PrimitiveType type);
// Bits per element (pred = 8, s4 = 4, token/tuple = 0).
int bit_width(PrimitiveType type);

struct Layout {
  std::vector<int64_t> minor_to_major;
  std::vector<std::vector<int64_t>> tiles;  // T(8,128)(2,1) -> {{8,128},{2,1}}
  int64_t memory_space = 0;                 // S(n); 0 = default HBM
};

struct Shape {
  PrimitiveType type = PrimitiveType::kInvalid;
  std::vector<int64_t> dims;   // a bounded dynamic dim `<=N` keeps its bound N; `?` is 0
  bool has_layout = false;
  // The layout as printed between the braces ("1,0:T(8,128)(2,1)S(1)"), checked by the
  // parser but decoded only on demand (parse_layout in hlo_parser.h): most readers never
  // need it, and decoding every layout would cost allocations on every instruction.
  std::string_view layout_text;
  std::vector<Shape> tuple;    // element shapes when type == kTuple

  bool is_tuple() const { return type == PrimitiveType::kTuple; }
  bool is_array() const { return type != PrimitiveType::kTuple && type != PrimitiveType::kToken &&
                                 type != PrimitiveType::kOpaque && type != PrimitiveType::kInvalid; }
  // Elements of an array (1 for a scalar); 0 for tuples and tokens.
  int64_t num_elements() const;
  // Dense bytes of the array, or of all leaves of a tuple (sub-byte types rounded up).
  int64_t byte_size() const;
};

}  // namespace aoizora::hlo
