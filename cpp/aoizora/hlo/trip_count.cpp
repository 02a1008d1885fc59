#include "aoizora/hlo/trip_count.h"

#include <charconv>
#include <string_view>

namespace aoizora::hlo {
namespace {

std::optional<int64_t> parse_int(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '"')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '"')) s.remove_suffix(1);
  int64_t v;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<int64_t> known_trip_count(std::string_view backend_config) {
  size_t k = backend_config.find("\"known_trip_count\"");
  if (k == std::string_view::npos) return std::nullopt;
  return backend_config_int(backend_config, "n", k);
}

// Follows copies and bitcasts to the producing instruction.
int through_copies(const Computation& c, int i) {
  for (int guard = 0; guard < 64 && i >= 0; ++guard) {
    const Instruction& ins = c.instructions[i];
    if ((ins.opcode == "copy" || ins.opcode == "bitcast" || ins.opcode == "convert") &&
        !ins.operands.empty())
      i = ins.operands[0];
    else
      break;
  }
  return i;
}

std::optional<int64_t> constant_value(const Computation& c, int i) {
  i = through_copies(c, i);
  if (i < 0 || c.instructions[i].opcode != "constant") return std::nullopt;
  return parse_int(c.instructions[i].raw_operands);
}

// A value inside a computation: which instruction, and in which computation.
struct Ref {
  const Computation* comp;
  int index;
};

// What the body adds to element `index` of the loop tuple each trip: its root tuple's element
// `index` as `add(gte(param, index), constant)` (either order) or `subtract(gte, constant)`,
// through copies. nullopt when the update has another form.
std::optional<int64_t> induction_step(const HloModule& m, const Instruction& w, int64_t index) {
  const int body = w.callee("body");
  if (body < 0 || index < 0) return std::nullopt;
  const Computation& bc = m.computations[body];
  if (bc.root < 0) return std::nullopt;
  const Instruction& root = bc.instructions[bc.root];
  if (root.opcode != "tuple" || static_cast<size_t>(index) >= root.operands.size())
    return std::nullopt;
  const int u = through_copies(bc, root.operands[static_cast<size_t>(index)]);
  if (u < 0) return std::nullopt;
  const Instruction& update = bc.instructions[u];
  if ((update.opcode != "add" && update.opcode != "subtract") || update.operands.size() != 2)
    return std::nullopt;
  auto is_ivar = [&](int i) {
    i = through_copies(bc, i);
    return i >= 0 && bc.instructions[i].opcode == "get-tuple-element" &&
           parse_int(bc.instructions[i].attr("index")) == index;
  };
  if (update.opcode == "add") {
    if (is_ivar(update.operands[0])) return constant_value(bc, update.operands[1]);
    if (is_ivar(update.operands[1])) return constant_value(bc, update.operands[0]);
    return std::nullopt;
  }
  if (!is_ivar(update.operands[0])) return std::nullopt;
  if (auto c = constant_value(bc, update.operands[1])) return -*c;
  return std::nullopt;
}

}  // namespace

namespace {

// The initial value of element `index` of the while's operand tuple when it is a constant
// (else the count is unknown: none of the grid's compiled programs has such a loop).
std::optional<int64_t> initial_value(const Computation& caller, const Instruction& w,
                                     std::optional<int64_t> index) {
  std::optional<int64_t> start;
  if (index && !w.operands.empty() && w.operands[0] >= 0) {
    int t = through_copies(caller, w.operands[0]);
    if (t >= 0 && caller.instructions[t].opcode == "tuple" && *index >= 0 &&
        static_cast<size_t>(*index) < caller.instructions[t].operands.size()) {
      int e = caller.instructions[t].operands[*index];
      if (e >= 0) start = constant_value(caller, e);
    }
  }
  return start;
}

// Trips of a loop whose variable starts at init, moves by step (towards the limit) and runs
// while `variable dir limit` holds; nullopt when a != loop never meets its limit.
std::optional<int64_t> trips(std::string_view dir, int64_t init, int64_t limit, int64_t step) {
  const int64_t stride = step > 0 ? step : -step;
  int64_t span = 0;  // values of the variable the loop runs through, counted by 1
  if (dir == "LT") span = limit - init;
  else if (dir == "LE") span = limit - init + 1;
  else if (dir == "GT") span = init - limit;
  else if (dir == "GE") span = init - limit + 1;
  else if (dir == "NE") span = limit > init ? limit - init : init - limit;
  else return std::nullopt;
  if (span <= 0) return 0;
  if (dir == "NE" && span % stride != 0) return std::nullopt;  // never meets the limit
  return (span + stride - 1) / stride;
}

}  // namespace

std::optional<int64_t> while_trip_count(const HloModule& m, int ci, int wi) {
  const Computation& caller = m.computations[ci];
  const Instruction& w = caller.instructions[wi];
  if (auto n = known_trip_count(w.attr("backend_config"))) return *n >= 0 ? *n : 0;
  int cond = w.callee("condition");
  if (cond < 0) return std::nullopt;
  const Computation& cc = m.computations[cond];
  // The compare, possibly the root of a fusion at the condition's root.
  const Computation* comp = &cc;
  int cmp = through_copies(cc, cc.root);
  const Instruction* fusion = nullptr;
  if (cmp >= 0 && cc.instructions[cmp].opcode == "fusion" && !cc.instructions[cmp].called.empty()) {
    fusion = &cc.instructions[cmp];
    comp = &m.computations[fusion->called[0]];
    cmp = through_copies(*comp, comp->root);
  }
  if (cmp < 0 || comp->instructions[cmp].opcode != "compare" ||
      comp->instructions[cmp].operands.size() != 2)
    return std::nullopt;
  const Instruction& compare = comp->instructions[cmp];
  // Resolves an operand of the compare to the condition computation (through the fusion).
  auto resolve = [&](int k) -> Ref {
    int i = through_copies(*comp, compare.operands[k]);
    if (fusion != nullptr && i >= 0 && comp->instructions[i].opcode == "parameter") {
      auto p = parse_int(comp->instructions[i].raw_operands);
      if (p && *p >= 0 && static_cast<size_t>(*p) < fusion->operands.size())
        return {&cc, through_copies(cc, fusion->operands[*p])};
    }
    return {comp, i};
  };
  Ref a = resolve(0), b = resolve(1);
  std::string_view dir = compare.attr("direction");
  std::optional<int64_t> limit;
  const Instruction* ivar = nullptr;
  if (a.index >= 0 && b.index >= 0) {
    if (auto v = constant_value(*b.comp, b.index)) {
      limit = v;
      ivar = &a.comp->instructions[a.index];
    } else if (auto u = constant_value(*a.comp, a.index)) {
      limit = u;
      ivar = &b.comp->instructions[b.index];
      // constant OP ivar: mirror the direction.
      if (dir == "LT") dir = "GT";
      else if (dir == "GT") dir = "LT";
      else if (dir == "LE") dir = "GE";
      else if (dir == "GE") dir = "LE";
    }
  }
  if (!limit || ivar == nullptr || ivar->opcode != "get-tuple-element") return std::nullopt;
  const std::optional<int64_t> index = parse_int(ivar->attr("index"));
  const std::optional<int64_t> start = initial_value(caller, w, index);
  if (!start) return std::nullopt;
  const int64_t init = *start;
  constexpr int64_t kBig = int64_t{1} << 40;  // keeps the arithmetic below from overflowing
  if (*limit > kBig || *limit < -kBig || init > kBig || init < -kBig) return std::nullopt;
  // The step: what the body adds to the variable (the TPU compiler's windowed einsum loops
  // count by 2, one trip per pair of shards). A variable updated any other way, or moving
  // away from its limit, leaves the count unknown.
  const std::optional<int64_t> found = index ? induction_step(m, w, *index) : std::nullopt;
  if (!found) return std::nullopt;
  const int64_t step = *found;
  const bool up = dir == "LT" || dir == "LE" || (dir == "NE" && *limit > init);
  if (step == 0 || step >= kBig || step <= -kBig || up != (step > 0)) return std::nullopt;
  return trips(dir, init, *limit, step);
}

}  // namespace aoizora::hlo
