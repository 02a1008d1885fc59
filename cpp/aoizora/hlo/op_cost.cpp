#include "aoizora/hlo/op_cost.h"

#include <charconv>
#include <string_view>

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

// {1,2} -> [1,2]
std::vector<int64_t> ints(std::string_view v) {
  std::vector<int64_t> out;
  size_t i = 0;
  while (i < v.size()) {
    while (i < v.size() && !(v[i] >= '0' && v[i] <= '9')) ++i;
    size_t b = i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
    int64_t x;
    if (b < i && std::from_chars(v.data() + b, v.data() + i, x).ec == std::errc())
      out.push_back(x);
  }
  return out;
}

double elements(const Shape& s) {
  if (s.is_tuple()) {
    double n = 0;
    for (const Shape& t : s.tuple) n += elements(t);
    return n;
  }
  return static_cast<double>(s.num_elements());
}

}  // namespace

CostModel::CostModel(const HloModule& module)
    : m_(module), state_(module.computations.size(), 0), flops_(module.computations.size(), 0) {}

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
  auto operand = [&](size_t k) -> const Shape* {
    if (k >= ins.operands.size() || ins.operands[k] < 0) return nullptr;
    return &comp.instructions[ins.operands[k]].shape;
  };
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
      for (int64_t d : ints(ins.attr("lhs_contracting_dims")))
        if (d >= 0 && static_cast<size_t>(d) < lhs->dims.size()) k *= lhs->dims[d];
    return 2 * out * k;
  }
  if (op == "convolution") {
    // dim_labels=b01f_01io->b01f: the kernel's input-feature and spatial dims are contracted.
    const Shape* kernel = operand(1);
    std::string_view labels = ins.attr("dim_labels");
    size_t us = labels.find('_'), arrow = labels.find("->");
    double k = 1;
    if (kernel != nullptr && us != std::string_view::npos && arrow != std::string_view::npos &&
        arrow > us) {
      std::string_view kl = labels.substr(us + 1, arrow - us - 1);
      for (size_t d = 0; d < kl.size() && d < kernel->dims.size(); ++d)
        if (kl[d] != 'o') k *= kernel->dims[d];
    }
    return 2 * out * k;
  }
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
    for (int64_t w : ints(ins.attr("window").substr(0, ins.attr("window").find(' ')))) window *= w;
    return out * window * per;
  }
  if (op == "all-reduce" || op == "all-reduce-start" || op == "reduce-scatter") {
    double per = ins.called.empty() ? 1 : computation_flops(ins.called[0]);
    return out * per;
  }
  if (op == "custom-call") {
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

OpCost CostModel::cost(int c, int i) {
  OpCost r;
  const Computation& comp = m_.computations[c];
  const Instruction& ins = comp.instructions[i];
  r.flops = flops(c, i);
  r.opaque = ins.opcode == "custom-call";
  if (is_free(ins.opcode)) return r;
  double bytes = static_cast<double>(ins.shape.byte_size());
  for (int k : ins.operands)
    if (k >= 0) bytes += static_cast<double>(comp.instructions[k].shape.byte_size());
  r.bytes = bytes;
  return r;
}

}  // namespace aoizora::hlo
