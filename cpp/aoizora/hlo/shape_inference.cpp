#include "aoizora/hlo/shape_inference.h"

#include <algorithm>
#include <charconv>
#include <string>
#include <vector>

namespace aoizora::hlo {
namespace {

// XLA's parser infers the shape of these opcodes (CanInferShape in xla/hlo/parser).
constexpr std::string_view kInferable[] = {
    "abs", "acos", "acosh", "asin", "asinh", "add", "add-dependency", "after-all", "atan2",
    "atanh", "batch-norm-grad", "batch-norm-inference", "batch-norm-training", "broadcast",
    "call", "ceil", "cholesky", "clamp", "count-leading-zeros", "compare", "complex",
    "concatenate", "conditional", "convolution", "copy", "cosine", "cosh", "opt-barrier",
    "divide", "domain", "dot", "erf", "exponential", "exponential-minus-one", "fft", "floor",
    "gather", "get-dimension-size", "set-dimension-size", "get-tuple-element", "imag",
    "is-finite", "log", "log-plus-one", "logistic", "and", "not", "or", "xor", "map", "maximum",
    "minimum", "multiply", "mulhi", "negate", "pad", "partition-id", "popcnt", "power",
    "ragged-dot", "real", "reduce", "remainder", "replica-id", "reverse", "round-nearest-afz",
    "round-nearest-even", "rsqrt", "scan", "scaled-dot", "scatter", "select", "shift-left",
    "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sinh", "sqrt", "cbrt",
    "reduce-window", "select-and-scatter", "sort", "subtract", "tan", "tanh", "transpose",
    "triangular-solve", "tuple", "while", "topk"};

// Result = operand 0's shape.
constexpr std::string_view kSameAsOperand[] = {
    "acos", "acosh", "asin", "asinh", "add", "atan2", "atanh", "ceil", "cholesky",
    "count-leading-zeros", "copy", "cosine", "cosh", "opt-barrier", "divide", "domain", "erf",
    "exponential", "exponential-minus-one", "floor", "log", "log-plus-one", "logistic", "and",
    "not", "or", "xor", "maximum", "minimum", "multiply", "mulhi", "negate", "popcnt", "power",
    "remainder", "reverse", "round-nearest-afz", "round-nearest-even", "rsqrt", "shift-left",
    "shift-right-arithmetic", "shift-right-logical", "sign", "sine", "sinh", "sqrt", "cbrt",
    "subtract", "tan", "tanh", "add-dependency", "while"};

bool in(std::string_view op, const std::string_view* list, size_t n) {
  return std::find(list, list + n, op) != list + n;
}


// "{1,0}" or "1" -> {1, 0} / {1}; nullopt-like false on anything else.
bool int_list(std::string_view v, std::vector<int64_t>* out) {
  out->clear();
  if (!v.empty() && v.front() == '{') {
    if (v.back() != '}') return false;
    v = v.substr(1, v.size() - 2);
  }
  size_t p = 0;
  while (p < v.size()) {
    while (p < v.size() && (v[p] == ' ' || v[p] == ',')) ++p;
    if (p >= v.size()) break;
    int64_t x;
    auto [ptr, ec] = std::from_chars(v.data() + p, v.data() + v.size(), x);
    if (ec != std::errc()) return false;
    out->push_back(x);
    p = static_cast<size_t>(ptr - v.data());
  }
  return true;
}

Shape with_dims(PrimitiveType type, std::vector<int64_t> dims) {
  Shape s;
  s.type = type;
  s.dims = std::move(dims);
  return s;
}

PrimitiveType real_type(PrimitiveType t) {
  return t == PrimitiveType::kC64 ? PrimitiveType::kF32
         : t == PrimitiveType::kC128 ? PrimitiveType::kF64 : t;
}

Result<Shape> dot(const Instruction& ins, const Shape& lhs, const Shape& rhs) {
  std::vector<int64_t> lb, lc, rb, rc;
  if (!int_list(ins.attr("lhs_batch_dims"), &lb) || !int_list(ins.attr("rhs_batch_dims"), &rb) ||
      !int_list(ins.attr("lhs_contracting_dims"), &lc) ||
      !int_list(ins.attr("rhs_contracting_dims"), &rc))
    return Error::invalid("dot: unreadable dimension numbers");
  auto valid = [](const std::vector<int64_t>& d, const Shape& s) {
    for (int64_t x : d)
      if (x < 0 || x >= static_cast<int64_t>(s.dims.size())) return false;
    return true;
  };
  if (!valid(lb, lhs) || !valid(lc, lhs) || !valid(rb, rhs) || !valid(rc, rhs) ||
      lb.size() != rb.size())
    return Error::invalid("dot: dimension numbers out of the operands' ranks");
  std::vector<int64_t> dims;
  for (int64_t d : lb) dims.push_back(lhs.dims[d]);
  auto free = [&](const Shape& s, const std::vector<int64_t>& b, const std::vector<int64_t>& c) {
    for (int64_t d = 0; d < static_cast<int64_t>(s.dims.size()); ++d)
      if (std::find(b.begin(), b.end(), d) == b.end() && std::find(c.begin(), c.end(), d) == c.end())
        dims.push_back(s.dims[d]);
  };
  free(lhs, lb, lc);
  free(rhs, rb, rc);
  const PrimitiveType t = bit_width(rhs.type) > bit_width(lhs.type) ? rhs.type : lhs.type;
  return with_dims(t, std::move(dims));
}

Result<Shape> reduce(const Instruction& ins, const Computation& comp, const HloModule& m) {
  std::vector<int64_t> reduced;
  if (!int_list(ins.attr("dimensions"), &reduced) || ins.called.empty() || ins.operands.empty())
    return Error::invalid("reduce: needs dimensions= and to_apply=");
  const size_t n = ins.operands.size() / 2;
  const Computation& f = m.computations[ins.called[0]];
  const Shape& root = f.instructions[f.root].shape;
  Shape out;
  out.type = PrimitiveType::kTuple;
  for (size_t i = 0; i < n; ++i) {
    const Shape& in = comp.instructions[ins.operands[i]].shape;
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < static_cast<int64_t>(in.dims.size()); ++d)
      if (std::find(reduced.begin(), reduced.end(), d) == reduced.end()) dims.push_back(in.dims[d]);
    PrimitiveType t = root.is_tuple() && i < root.tuple.size() ? root.tuple[i].type : root.type;
    out.tuple.push_back(with_dims(t, std::move(dims)));
  }
  if (n == 1) return out.tuple[0];
  return out;
}

Result<Shape> reshaping(const Instruction& ins, const Shape& a, const Computation& comp) {
  std::vector<int64_t> d;
  const std::string_view op = ins.opcode;
  if (op == "transpose") {
    if (!int_list(ins.attr("dimensions"), &d) || d.size() != a.dims.size())
      return Error::invalid("transpose: dimensions= must permute the operand's dimensions");
    std::vector<int64_t> dims;
    for (int64_t x : d) {
      if (x < 0 || x >= static_cast<int64_t>(a.dims.size())) return Error::invalid("transpose: bad dimension");
      dims.push_back(a.dims[x]);
    }
    return with_dims(a.type, std::move(dims));
  }
  // concatenate
  if (!int_list(ins.attr("dimensions"), &d) || d.size() != 1 || d[0] < 0 ||
      d[0] >= static_cast<int64_t>(a.dims.size()))
    return Error::invalid("concatenate: needs one dimension in dimensions=");
  Shape out = with_dims(a.type, a.dims);
  out.dims[d[0]] = 0;
  for (int k : ins.operands) {
    const Shape& s = comp.instructions[k].shape;
    if (s.dims.size() != a.dims.size()) return Error::invalid("concatenate: operands of different ranks");
    out.dims[d[0]] += s.dims[d[0]];
  }
  return out;
}

Result<Shape> pad(const Instruction& ins, const Shape& a) {
  std::string_view cfg = ins.attr("padding");
  Shape out = with_dims(a.type, {});
  size_t p = 0;
  for (size_t i = 0; i < a.dims.size(); ++i) {
    int64_t v[3] = {0, 0, 0};
    for (int k = 0; k < 3 && p < cfg.size(); ++k) {
      auto [ptr, ec] = std::from_chars(cfg.data() + p, cfg.data() + cfg.size(), v[k]);
      if (ec != std::errc()) return Error::invalid("pad: unreadable padding=");
      p = static_cast<size_t>(ptr - cfg.data());
      if (p < cfg.size() && cfg[p] == '_') ++p;
      else break;
    }
    if (p < cfg.size() && cfg[p] == 'x') ++p;
    const int64_t d = a.dims[i];
    out.dims.push_back(v[0] + v[1] + d + (d > 0 ? (d - 1) * v[2] : 0));
  }
  return out;
}

}  // namespace

bool can_infer_shape(std::string_view opcode) {
  return in(opcode, kInferable, std::size(kInferable));
}

Result<Shape> infer_shape(const Instruction& ins, const Computation& comp, const HloModule& m) {
  const std::string_view op = ins.opcode;
  const auto operand = [&](size_t i) -> const Shape& {
    return comp.instructions[ins.operands[i]].shape;
  };
  const size_t n = ins.operands.size();
  const auto need = [&](size_t k) { return n >= k; };
  if (op == "tuple") {
    Shape out;
    out.type = PrimitiveType::kTuple;
    for (size_t i = 0; i < n; ++i) out.tuple.push_back(operand(i));
    return out;
  }
  if (op == "after-all") return with_dims(PrimitiveType::kToken, {});
  if (op == "partition-id" || op == "replica-id") return with_dims(PrimitiveType::kU32, {});
  if (op == "get-dimension-size") return with_dims(PrimitiveType::kS32, {});
  if (op == "call" || op == "conditional") {
    if (ins.called.empty()) return Error::invalid(std::string(op) + ": calls no computation");
    const Computation& f = m.computations[ins.called.back()];
    return f.instructions[f.root].shape;
  }
  if (op == "reduce") return reduce(ins, comp, m);
  if (!need(1)) return Error::invalid("'" + std::string(op) + "' without operands: write its shape");
  const Shape& a = operand(0);
  if (in(op, kSameAsOperand, std::size(kSameAsOperand))) {
    if (n == 2 && a.dims.empty() && !operand(1).dims.empty()) return operand(1);
    return a;
  }
  if (op == "abs" || op == "real" || op == "imag") return with_dims(real_type(a.type), a.dims);
  if (op == "is-finite") return with_dims(PrimitiveType::kPred, a.dims);
  if (op == "compare") return with_dims(PrimitiveType::kPred, a.dims.empty() && n == 2 ? operand(1).dims : a.dims);
  if (op == "complex")
    return with_dims(a.type == PrimitiveType::kF64 ? PrimitiveType::kC128 : PrimitiveType::kC64, a.dims);
  if ((op == "select" || op == "clamp") && need(3)) return operand(1);
  if (op == "get-tuple-element") {
    std::vector<int64_t> index;
    if (!int_list(ins.attr("index"), &index) || index.size() != 1 || !a.is_tuple() ||
        index[0] < 0 || index[0] >= static_cast<int64_t>(a.tuple.size()))
      return Error::invalid("get-tuple-element: index= out of the operand's tuple");
    return a.tuple[index[0]];
  }
  if (op == "transpose" || op == "concatenate") return reshaping(ins, a, comp);
  if (op == "dot" && need(2)) return dot(ins, a, operand(1));
  if (op == "pad") return pad(ins, a);
  if (op == "sort") {
    if (n == 1) return a;
    Shape out;
    out.type = PrimitiveType::kTuple;
    for (size_t i = 0; i < n; ++i) out.tuple.push_back(operand(i));
    return out;
  }
  if (op == "map" && !ins.called.empty()) {
    const Computation& f = m.computations[ins.called[0]];
    return with_dims(f.instructions[f.root].shape.type, a.dims);
  }
  return Error::invalid("the result shape of '" + std::string(op) +
                        "' is not inferred here (XLA would infer it): write it");
}

}  // namespace aoizora::hlo
