#include "aoizora/hlo/op_cost.h"

#include <algorithm>
#include <string_view>

#include "aoizora/hlo/attribute_text.h"
#include "aoizora/hlo/kernel_cost.h"
#include "aoizora/hlo/matmul_shape.h"

namespace aoizora::hlo {
namespace {

bool one_of(std::string_view op, std::initializer_list<std::string_view> set) {
  for (std::string_view s : set)
    if (op == s) return true;
  return false;
}

bool is_elementwise(std::string_view op) {
  return one_of(op, {"add", "subtract", "multiply", "divide", "maximum", "minimum", "remainder",
                     "and", "or", "xor", "not", "negate", "abs", "sign", "compare", "select",
                     "clamp", "convert", "floor", "ceil", "round-nearest-afz",
                     "round-nearest-even", "shift-left", "shift-right-arithmetic",
                     "shift-right-logical", "real", "imag", "complex", "is-finite", "popcnt",
                     "count-leading-zeros", "stochastic-convert"});
}

// Zero-cost bookkeeping: no flops and no HBM traffic of their own.
bool is_free(std::string_view op) {
  return one_of(op, {"parameter", "constant", "get-tuple-element", "tuple", "bitcast",
                     "after-all", "partition-id", "replica-id", "while", "call", "conditional",
                     "opt-barrier", "add-dependency", "domain", "async-done", "async-update",
                     "copy-done", "send-done", "recv-done", "all-gather-done", "all-reduce-done",
                     "collective-permute-done", "get-dimension-size", "set-dimension-size"});
}

double elements(const Shape& s) {
  if (s.is_tuple()) {
    double n = 0;
    for (const Shape& t : s.tuple) n += elements(t);
    return n;
  }
  return static_cast<double>(s.num_elements());
}

// One window attribute ("size=2x12 stride=1x11 lhs_dilate=2x12 pad=0_0x1_1") as numbers
// per spatial dimension; `fill` where the attribute is absent.
std::vector<int64_t> window_field(std::string_view window, std::string_view key, size_t n,
                                  int64_t fill) {
  std::vector<int64_t> out(n, fill);
  size_t at = 0;
  while ((at = window.find(key, at)) != std::string_view::npos) {
    if ((at == 0 || window[at - 1] == ' ') && at + key.size() < window.size() &&
        window[at + key.size()] == '=')
      break;
    at += key.size();
  }
  if (at == std::string_view::npos) return out;
  size_t b = at + key.size() + 1, e = window.find(' ', b);
  std::vector<int64_t> v = attribute_ints(window.substr(b, e == std::string_view::npos ? e : e - b));
  for (size_t i = 0; i < n && i < v.size(); ++i) out[i] = v[i];
  return out;
}

// FLOPs of a convolution as XLA's HloCostAnalysis counts them: per spatial dimension only the
// (output, kernel) position pairs that land on a real input element, so windows over
// dilated (holed) inputs, as the TPU compiler writes batched matmuls
// ("window={size=2x12 stride=1x11 lhs_dilate=2x12}"), cost what they compute.
double convolution_flops(const Instruction& ins, const Shape* lhs, const Shape* kernel) {
  std::string_view labels = ins.attr("dim_labels");
  size_t us = labels.find('_'), arrow = labels.find("->");
  if (lhs == nullptr || kernel == nullptr || us == std::string_view::npos ||
      arrow == std::string_view::npos || arrow < us)
    return 0;
  std::string_view ll = labels.substr(0, us), kl = labels.substr(us + 1, arrow - us - 1),
                   ol = labels.substr(arrow + 2);
  const Shape& out = ins.shape.is_tuple() && !ins.shape.tuple.empty() ? ins.shape.tuple[0]
                                                                       : ins.shape;
  auto dim = [](const Shape& s, std::string_view l, char c) -> int64_t {
    size_t k = l.find(c);
    return k == std::string_view::npos || k >= s.dims.size() ? 1 : s.dims[k];
  };
  size_t spatial = 0;
  for (char c : kl)
    if (c >= '0' && c <= '9') ++spatial;
  std::string_view window = ins.attr("window");
  std::vector<int64_t> stride = window_field(window, "stride", spatial, 1);
  std::vector<int64_t> lhs_dilate = window_field(window, "lhs_dilate", spatial, 1);
  std::vector<int64_t> rhs_dilate = window_field(window, "rhs_dilate", spatial, 1);
  std::vector<int64_t> pad = window_field(window, "pad", 2 * spatial, 0);  // lo_hi pairs
  double positions = 1;
  for (size_t i = 0; i < spatial; ++i) {
    const char c = static_cast<char>('0' + i);
    const int64_t in_n = dim(*lhs, ll, c), k_n = dim(*kernel, kl, c), out_n = dim(out, ol, c);
    if (lhs_dilate[i] <= 0 || k_n * out_n > (int64_t{1} << 26)) {
      positions *= static_cast<double>(k_n) * static_cast<double>(out_n);  // not worth exactness
      continue;
    }
    int64_t valid = 0;
    for (int64_t k = 0; k < k_n; ++k)
      for (int64_t o = 0; o < out_n; ++o) {
        const int64_t undilated = o * stride[i] - pad[2 * i] + k * rhs_dilate[i];
        if (undilated % lhs_dilate[i] != 0) continue;
        const int64_t at = undilated / lhs_dilate[i];
        if (at >= 0 && at < in_n) ++valid;
      }
    positions *= static_cast<double>(valid);
  }
  int64_t feature_groups = 1, batch_groups = 1;
  for (int64_t v : attribute_ints(ins.attr("feature_group_count"))) feature_groups = std::max<int64_t>(v, 1);
  for (int64_t v : attribute_ints(ins.attr("batch_group_count"))) batch_groups = std::max<int64_t>(v, 1);
  const double in_features = static_cast<double>(dim(*lhs, ll, 'f')) / feature_groups;
  const double out_features = static_cast<double>(dim(out, ol, 'f'));
  const double batch = static_cast<double>(dim(*lhs, ll, 'b')) / batch_groups;
  return 2 * in_features * out_features * batch * positions;
}

// The shape of an instruction's k-th operand, or nullptr.
const Shape* operand_shape(const Computation& comp, const Instruction& ins, size_t k) {
  if (k >= ins.operands.size() || ins.operands[k] < 0) return nullptr;
  return &comp.instructions[ins.operands[k]].shape;
}

// Index of the instruction `parameter(k)` of a computation, or -1.
int parameter_index(const Computation& comp, size_t k) {
  for (size_t i = 0; i < comp.instructions.size(); ++i) {
    const Instruction& ins = comp.instructions[i];
    if (ins.opcode != "parameter") continue;
    std::vector<int64_t> n = attribute_ints(ins.raw_operands);
    if (n.size() == 1 && static_cast<size_t>(n[0]) == k) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

CostModel::CostModel(const HloModule& module)
    : m_(module),
      state_(module.computations.size(), 0),
      flops_(module.computations.size(), 0),
      matmul_state_(module.computations.size(), 0),
      matmuls_(module.computations.size()) {}

const std::vector<compute::Matmul>& CostModel::computation_matmuls(int c) {
  static const std::vector<compute::Matmul> kNone;
  if (c < 0 || static_cast<size_t>(c) >= matmul_state_.size()) return kNone;
  if (matmul_state_[c] != 0) return matmuls_[c];  // done, or a call cycle (empty so far)
  matmul_state_[c] = 1;
  std::vector<compute::Matmul> all;
  const Computation& comp = m_.computations[c];
  for (size_t i = 0; i < comp.instructions.size(); ++i) {
    std::vector<compute::Matmul> mine = matmuls(c, static_cast<int>(i));
    all.insert(all.end(), mine.begin(), mine.end());
  }
  matmuls_[c] = std::move(all);
  matmul_state_[c] = 2;
  return matmuls_[c];
}

std::vector<compute::Matmul> CostModel::matmuls(int c, int i) {
  const Computation& comp = m_.computations[c];
  const Instruction& ins = comp.instructions[i];
  const std::string_view op = ins.opcode;
  auto operand = [&](size_t k) { return operand_shape(comp, ins, k); };
  std::optional<compute::Matmul> one;
  if (op == "dot" && operand(0) != nullptr && operand(1) != nullptr)
    one = dot_matmul(ins, *operand(0), *operand(1));
  if (op == "convolution") one = convolution_matmul(ins, flops(c, i));
  if (op == "custom-call") {
    if (auto kernel = attention_kernel_cost(comp, ins)) return kernel->matmuls;
    if (operand(0) != nullptr && operand(1) != nullptr)
      one = custom_call_matmul(ins, *operand(0), *operand(1));
  }
  if (one) return {*one};
  std::vector<compute::Matmul> out;
  if (op == "fusion" || op == "call" || op == "async-start" || op == "while") {
    for (int k : ins.called) {
      const auto& mine = computation_matmuls(k);
      out.insert(out.end(), mine.begin(), mine.end());
    }
  } else if (op == "conditional") {  // the most expensive branch stands for it (flops)
    int best = -1;
    for (int k : ins.called)
      if (best < 0 || computation_flops(k) > computation_flops(best)) best = k;
    if (best >= 0) out = computation_matmuls(best);
  }
  return out;
}

double CostModel::computation_flops(int c) {
  if (c < 0 || static_cast<size_t>(c) >= state_.size()) return 0;
  if (state_[c] == 2) return flops_[c];
  if (state_[c] == 1) return 0;  // a call cycle in malformed input
  state_[c] = 1;
  double total = 0;
  const Computation& comp = m_.computations[c];
  for (size_t i = 0; i < comp.instructions.size(); ++i) total += flops(c, static_cast<int>(i));
  flops_[c] = total;
  state_[c] = 2;
  return total;
}

double CostModel::flops(int c, int i) {
  const Computation& comp = m_.computations[c];
  const Instruction& ins = comp.instructions[i];
  const std::string_view op = ins.opcode;
  auto operand = [&](size_t k) { return operand_shape(comp, ins, k); };
  auto called_flops = [&]() {
    double f = 0;
    for (int k : ins.called) f += computation_flops(k);
    return f;
  };
  const double out = elements(ins.shape);
  if (op == "dot") {
    const Shape* lhs = operand(0);
    double k = 1;
    if (lhs != nullptr)
      for (int64_t d : attribute_ints(ins.attr("lhs_contracting_dims")))
        if (d >= 0 && static_cast<size_t>(d) < lhs->dims.size()) k *= lhs->dims[d];
    return 2 * out * k;
  }
  if (op == "convolution") return convolution_flops(ins, operand(0), operand(1));
  if (op == "fusion" || op == "call" || op == "async-start") return called_flops();
  if (op == "while") return called_flops();  // body and condition once, as XLA counts
  if (op == "conditional") {
    double f = 0;
    for (int k : ins.called) f = std::max(f, computation_flops(k));
    return f;
  }
  if (op == "reduce" || op == "reduce-window") {
    const Shape* in = operand(0);
    double per = ins.called.empty() ? 1 : computation_flops(ins.called[0]);
    if (op == "reduce" && in != nullptr) {
      double n_out = ins.shape.is_tuple() && !ins.shape.tuple.empty()
                         ? static_cast<double>(ins.shape.tuple[0].num_elements())
                         : out;
      return (static_cast<double>(in->num_elements()) - n_out) * per;
    }
    double window = 1;
    for (int64_t w : attribute_ints(ins.attr("window").substr(0, ins.attr("window").find(' ')))) window *= w;
    return out * window * per;
  }
  if (op == "all-reduce" || op == "all-reduce-start" || op == "reduce-scatter") {
    double per = ins.called.empty() ? 1 : computation_flops(ins.called[0]);
    return out * per;
  }
  if (op == "custom-call") {
    if (auto kernel = attention_kernel_cost(comp, ins)) return kernel->flops;  // kernel_cost.h
    // Opaque kernel. When the shapes read as a (batched) matmul, [..,M,K] x [..,K,N] ->
    // [..,M,N], count 2*M*N*K per batch; otherwise it moves data (bytes only), as XLA counts.
    const Shape* a = operand(0);
    const Shape* b = operand(1);
    const auto& r = ins.shape.dims;
    if (a != nullptr && b != nullptr && ins.shape.is_array() && r.size() >= 2 &&
        a->dims.size() == r.size() && b->dims.size() == r.size()) {
      const size_t n = r.size();
      if (a->dims[n - 2] == r[n - 2] && b->dims[n - 1] == r[n - 1] &&
          a->dims[n - 1] == b->dims[n - 2])
        return 2 * out * static_cast<double>(a->dims[n - 1]);
    }
    return 0;
  }
  if (is_elementwise(op)) return out;
  return 0;
}

bool is_continuation_fusion(const Instruction& ins) {
  return ins.attr("backend_config").find("\"continuation_config\"") != std::string_view::npos;
}

Window continuation_window(const Instruction& ins) {
  if (!is_continuation_fusion(ins)) return {};
  const std::string_view config = ins.attr("backend_config");
  Window w;
  w.operand_first = backend_config_int(config, "operand_original_start").value_or(0);
  w.operand_last = backend_config_int(config, "operand_original_end").value_or(w.operand_last);
  w.output_first = backend_config_int(config, "output_tuple_original_start").value_or(0);
  w.output_last = backend_config_int(config, "output_tuple_original_end").value_or(w.output_last);
  return w;
}

OpCost CostModel::cost(int c, int i) {
  OpCost r;
  const Computation& comp = m_.computations[c];
  const Instruction& ins = comp.instructions[i];
  r.flops = flops(c, i);
  r.matmuls = matmuls(c, i);
  const bool async_start = ins.opcode == "async-start";
  r.opaque = ins.opcode == "custom-call" || (async_start && ins.async_wrapped == "custom-call");
  if (ins.opcode == "custom-call") {
    // The TPU compiler's AllocateBuffer only reserves a buffer that later ops write whole
    // (a broadcast it found overwritten): no HBM traffic and no compute of its own.
    if (ins.attr("custom_call_target") == "\"AllocateBuffer\"") {
      r.flops = 0;
      r.matmuls.clear();
      r.opaque = false;
      return r;
    }
    if (auto kernel = attention_kernel_cost(comp, ins)) {  // a modelled Pallas kernel
      r.bytes = kernel->bytes;
      r.kernel = kernel->call;
      r.opaque = false;
      return r;
    }
  }
  if (is_free(ins.opcode)) return r;
  // An async copy or slice (a DMA, e.g. a layer's weights into another memory space; a
  // `slice-start` is an async-start wrapping a slice) reads and writes the buffer it moves:
  // element 1 of its result tuple. Its operand may be the whole array it slices, and its
  // -done only waits.
  if ((ins.opcode == "copy-start" || (async_start && ins.async_wrapped == "slice")) &&
      ins.shape.is_tuple() && ins.shape.tuple.size() > 1) {
    r.bytes = 2.0 * static_cast<double>(ins.shape.tuple[1].byte_size());
    return r;
  }
  const bool fusion = ins.opcode == "fusion" && !ins.called.empty();
  const Window window = continuation_window(ins);
  double bytes = fusion ? written_bytes(ins.called[0], ins.shape, window)
                        : static_cast<double>(ins.shape.byte_size());
  for (size_t k = 0; k < ins.operands.size(); ++k) {
    if (ins.operands[k] < 0 || !window.has_operand(static_cast<int64_t>(k))) continue;
    const double full = static_cast<double>(comp.instructions[ins.operands[k]].shape.byte_size());
    const int param = fusion ? parameter_index(m_.computations[ins.called[0]], k) : -1;
    bytes += param >= 0 ? std::min(full, read_bytes(ins.called[0], param, 0)) : full;
  }
  r.bytes = bytes;
  return r;
}

bool CostModel::is_layout_copy(const Computation& comp, const Instruction& u) const {
  auto same_array = [](const Shape& a, const Shape& b) {
    return a.is_array() && a.type == b.type && a.dims == b.dims;
  };
  if (u.opcode == "copy")
    return u.operands.size() == 1 && u.operands[0] >= 0 &&
           same_array(u.shape, comp.instructions[u.operands[0]].shape);
  if (u.opcode != "fusion" || u.called.empty() || u.operands.size() != 1) return false;
  const Computation& body = m_.computations[u.called[0]];
  if (body.root < 0) return false;
  const Instruction& root = body.instructions[body.root];
  return root.opcode == "copy" && root.operands.size() == 1 && root.operands[0] >= 0 &&
         body.instructions[root.operands[0]].opcode == "parameter" &&
         same_array(root.shape, body.instructions[root.operands[0]].shape);
}

double CostModel::read_bytes(int c, int target, int depth) {
  const Computation& comp = m_.computations[c];
  const double full = static_cast<double>(comp.instructions[target].shape.byte_size());
  if (depth > 8) return full;
  double sliced = 0;
  bool used = false;
  for (size_t j = 0; j < comp.instructions.size(); ++j) {
    const Instruction& u = comp.instructions[j];
    for (size_t k = 0; k < u.operands.size(); ++k) {
      if (u.operands[k] != target) continue;
      used = true;
      const std::string_view op = u.opcode;
      if (k == 0 && (op == "dynamic-slice" || op == "slice" || op == "gather")) {
        sliced += static_cast<double>(u.shape.byte_size());
      } else if (k == 0 && op == "dynamic-update-slice") {
        // Updated in place: the buffer is not read, only the update written (written_bytes).
      } else if (op == "bitcast" || op == "get-tuple-element" ||
                 (k == 0 && is_layout_copy(comp, u))) {
        sliced += read_bytes(c, static_cast<int>(j), depth + 1);
      } else if (op == "fusion" && !u.called.empty()) {
        const int param = parameter_index(m_.computations[u.called[0]], k);
        if (param < 0) return full;
        sliced += read_bytes(u.called[0], param, depth + 1);
      } else {
        return full;  // read whole by an ordinary consumer
      }
      if (sliced >= full) return full;
    }
  }
  return used ? sliced : 0;
}

double CostModel::written_bytes(int c, const Shape& result, const Window& window) {
  const Computation& comp = m_.computations[c];
  if (comp.root < 0) return static_cast<double>(result.byte_size());
  auto one = [&](int i) -> double {
    const Instruction& r = comp.instructions[i];
    if (r.opcode == "dynamic-update-slice" && r.operands.size() > 1 && r.operands[1] >= 0)
      return static_cast<double>(comp.instructions[r.operands[1]].shape.byte_size());
    return static_cast<double>(r.shape.byte_size());
  };
  const Instruction& root = comp.instructions[comp.root];
  if (root.opcode != "tuple") return one(comp.root);
  double total = 0;
  for (size_t j = 0; j < root.operands.size(); ++j)
    if (root.operands[j] >= 0 && window.has_output(static_cast<int64_t>(j)))
      total += one(root.operands[j]);
  return total;
}

}  // namespace aoizora::hlo
