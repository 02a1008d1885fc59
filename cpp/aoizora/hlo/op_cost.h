// Per-instruction compute cost, following XLA's HloCostAnalysis conventions so totals can be
// checked against `compiled.cost_analysis()["flops"]`: a multiply-add is 2 flops; dot and
// convolution (TPU compiles matmuls as convolutions with dim_labels) count 2 x output
// elements x contraction size; elementwise ops 1 flop per element (transcendentals 0);
// reduce and all-reduce the flops of their reducer per reduced element; fusions the sum over
// their called computation. Bytes are HBM bytes read + written (operands + result) of the
// instruction as scheduled; for a fusion only its boundary counts, and, as in XLA, an operand
// the fusion only slices (dynamic-slice, slice, gather, also through nested fusions and
// bitcasts and layout-only copies) costs the slices it reads, and an in-place dynamic-update-slice neither reads nor
// rewrites its buffer: only the update is written. A TPU continuation fusion (compute that
// runs while an async collective is in flight) counts only its original operands and outputs,
// named by its backend_config; the collective's buffers only pass through it.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include <optional>

#include "aoizora/compute/mxu.h"
#include "aoizora/compute/splash_kernel.h"
#include "aoizora/hlo/hlo_module.h"

namespace aoizora::hlo {

struct OpCost {
  double flops = 0;
  double bytes = 0;
  // A custom-call: flops estimated from shapes (2*M*N*K when they read as a matmul, else 0).
  // False for a Pallas kernel that kernel_cost.h prices from its shapes and block sizes.
  bool opaque = false;
  // The matmuls among its flops, as the MXU runs them (compute/mxu.h pads them to the tile).
  std::vector<compute::Matmul> matmuls;
  // A Pallas attention kernel, priced per grid step (compute/splash_kernel.h); else empty.
  std::optional<compute::SplashCall> kernel;
};

// The operands and root-tuple outputs (inclusive index ranges) that an instruction really
// reads and writes; all of them unless it is a continuation fusion.
struct Window {
  int64_t operand_first = 0, operand_last = std::numeric_limits<int64_t>::max();
  int64_t output_first = 0, output_last = std::numeric_limits<int64_t>::max();
  bool has_operand(int64_t k) const { return k >= operand_first && k <= operand_last; }
  bool has_output(int64_t k) const { return k >= output_first && k <= output_last; }
};
Window continuation_window(const Instruction& ins);
// A TPU continuation fusion: compute that runs while an async collective is in flight (its
// backend_config has a continuation_config).
bool is_continuation_fusion(const Instruction& ins);

// Memoizes the flops of called computations; cycles in malformed input count as zero.
class CostModel {
 public:
  explicit CostModel(const HloModule& module);

  OpCost cost(int computation, int instruction);
  // Flops of one execution of a computation (sum over its instructions).
  double computation_flops(int computation);
  // The matmuls of one execution of a computation (every instruction's, called ones included).
  const std::vector<compute::Matmul>& computation_matmuls(int computation);

 private:
  double flops(int computation, int instruction);
  std::vector<compute::Matmul> matmuls(int computation, int instruction);
  // Bytes computation `c` reads through instruction `ins` (a parameter or a bitcast of one).
  double read_bytes(int c, int ins, int depth);
  // A copy that only changes the layout (same element type and dims), or a fusion that is
  // nothing but one. In a fusion it maps each output element to one input element, so a
  // consumer that slices it reads only the slice, as through a bitcast. TPU7x's compiled
  // layer loops re-tile a stacked weight (T(16,128) -> T(8,128)) before slicing a layer out.
  bool is_layout_copy(const Computation& comp, const Instruction& u) const;
  // Bytes a fusion computation writes: its root, or only the update of an in-place
  // dynamic-update-slice root (also inside a root tuple).
  double written_bytes(int c, const Shape& result, const Window& window = {});

  const HloModule& m_;
  std::vector<int> state_;  // 0 = not computed, 1 = in progress, 2 = done
  std::vector<double> flops_;
  std::vector<int> matmul_state_;  // as state_, for matmuls_
  std::vector<std::vector<compute::Matmul>> matmuls_;
};

}  // namespace aoizora::hlo
