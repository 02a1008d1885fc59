#include "aoizora/hlo/hlo_parser.h"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aoizora/hlo/attribute_text.h"
#include "aoizora/hlo/hlo_lexer.h"
#include "aoizora/hlo/literal.h"
#include "aoizora/hlo/opcode_table.h"
#include "aoizora/hlo/shape_inference.h"
#include "aoizora/hlo/shape_parser.h"

namespace aoizora::hlo {
namespace {

// Attributes whose values name called computations (or hold them inline, `{...}`).
bool is_call_attribute(std::string_view key) {
  return key == "calls" || key == "to_apply" || key == "condition" || key == "body" ||
         key == "true_computation" || key == "false_computation" ||
         key == "branch_computations" || key == "called_computations" || key == "select" ||
         key == "scatter" || key == "comparator";
}

// Opcodes whose parentheses hold no operands: a literal, a parameter number.
bool has_raw_operands(std::string_view opcode) {
  return opcode == "constant" || opcode == "parameter";
}

enum class Async { kNone, kStart, kUpdate, kDone };

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Opcodes of their own that end in -start/-update/-done (XLA's HloOpcode names).
bool is_native_async_name(std::string_view op) {
  static constexpr std::string_view kNames[] = {
      "async-start", "async-update", "async-done", "all-gather-start", "all-gather-done",
      "all-reduce-start", "all-reduce-done", "collective-permute-start",
      "collective-permute-done", "copy-start", "copy-done", "send-done", "recv-done"};
  for (std::string_view n : kNames)
    if (op == n) return true;
  return false;
}

// `X-start`, `X-update`, `X-done` for an X without async opcodes of its own: XLA's syntax
// for async-start/-update/-done wrapping X. Sets *wrapped to X.
Async async_sugar(std::string_view op, std::string_view* wrapped) {
  if (op.size() < 6 || (op.back() != 't' && op.back() != 'e')) return Async::kNone;
  Async kind = Async::kNone;
  std::string_view x = op;
  if (ends_with(x, "-start")) kind = Async::kStart, x.remove_suffix(6);
  else if (ends_with(x, "-update")) kind = Async::kUpdate, x.remove_suffix(7);
  else if (ends_with(x, "-done")) kind = Async::kDone, x.remove_suffix(5);
  if (kind == Async::kNone || is_native_async_name(op)) return Async::kNone;
  *wrapped = x;
  return kind;
}

// X whose async forms are opcodes of their own (or none): `X-update`, `send-start`, ... are
// unknown opcodes to XLA.
bool has_own_async_forms(std::string_view x) {
  static constexpr std::string_view kNames[] = {"all-gather", "all-reduce", "collective-permute",
                                                "copy", "send", "recv", "async"};
  for (std::string_view n : kNames)
    if (x == n) return true;
  return false;
}

// XLA's identifiers: a letter or '_', then letters, digits, '_', '.', '-' (after one '%').
bool valid_name(std::string_view n) {
  if (n.empty() || !(is_alpha(n[0]) || n[0] == '_')) return false;
  for (char c : n)
    if (c == '%' || c == '$') return false;
  return true;
}

// The header attributes XLA's parser allows (`HloModule m, key=value, ...`).
bool is_header_attribute(std::string_view key) {
  static constexpr std::string_view kNames[] = {
      "alias_passthrough_params", "allow_spmd_sharding_propagation_to_output",
      "allow_spmd_sharding_propagation_to_parameters", "buffer_donor",
      "entry_computation_layout", "frontend_attributes", "input_output_alias", "is_scheduled",
      "num_partitions", "origin_recovery_table", "replica_count"};
  for (std::string_view k : kNames)
    if (key == k) return true;
  return false;
}

Async async_kind(std::string_view op) {
  if (op == "async-start") return Async::kStart;
  if (op == "async-update") return Async::kUpdate;
  if (op == "async-done") return Async::kDone;
  return Async::kNone;
}

// The async result form ((operands), outputs, state...).
bool is_async_shape(const Shape& s) {
  return s.is_tuple() && s.tuple.size() >= 2 && s.tuple[0].is_tuple();
}

// Same element types and dimensions (layouts aside).
bool same_shape(const Shape& a, const Shape& b) {
  if (a.type != b.type || a.dims != b.dims || a.tuple.size() != b.tuple.size()) return false;
  for (size_t i = 0; i < a.tuple.size(); ++i)
    if (!same_shape(a.tuple[i], b.tuple[i])) return false;
  return true;
}

std::string_view unquoted(std::string_view v) {
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') return v.substr(1, v.size() - 2);
  return v;
}

class Parser {
 public:
  Parser(std::string_view text, std::string filename) : lx_(text, std::move(filename)) {}

  Result<HloModule> module();

 private:
  // The computation being parsed and the names defined in it so far.
  struct Scope {
    Computation comp;
    std::unordered_map<std::string_view, int> names;
    int root = -1;
  };

  Status header();
  bool table();
  Status computation();
  Status instruction_list(Scope& scope, std::string_view what);
  Status instruction(Scope& scope);
  Result<int> rhs(Scope& scope, std::string_view name, size_t name_pos, bool attributes,
                  int depth);
  Status operands(Scope& scope, Instruction& ins, int depth);
  // rhs's checks after the operands, each as XLA makes it (ob: where the opcode is).
  Status check_operands(const Instruction& ins, bool has_shape, int want_operands, size_t ob);
  Status check_conditional(const Scope& scope, const Instruction& ins, AttributeSet* allowed,
                           size_t ob);
  Status rhs_attributes(Scope& scope, Instruction& ins, int depth, bool attributes,
                        AttributeSet* allowed, int required, size_t ob);
  Result<int> operand(Scope& scope, int depth);
  // Checks the names against `allowed` (each at most once) and the values' forms when given.
  Status attributes(Instruction& ins, int depth, const AttributeSet* allowed = nullptr,
                    int required = -1, std::string_view opcode = {});
  Status call_value(Instruction& ins, std::string_view key, int depth);
  Status control_predecessors(const Scope& scope, const Instruction& ins);
  Result<int> callee(int depth);
  bool inline_body_at(size_t brace) const;
  Result<int> add(Scope& scope, Instruction ins, size_t name_pos);
  std::string_view made_up(std::string name);
  Status async_op(Scope& scope, Instruction& ins, Async kind, bool sugar, size_t at);

  Lexer lx_;
  HloModule m_;
  std::unordered_map<std::string_view, int> computations_;  // by name, as defined so far
  std::vector<bool> async_called_;  // computations an async-start already wraps
};

std::string_view Parser::made_up(std::string name) {
  return m_.made_up_names->emplace_back(std::move(name));
}

Status Parser::header() {
  lx_.skip_ws();
  const size_t at = lx_.pos();
  if (!lx_.consume_word("HloModule")) {
    // XLA reads a module without the header when it opens with ENTRY or `name {`.
    const size_t after_name = skip_space_and_comments(lx_.text(), at + lx_.name().size());
    const bool entry = lx_.text().compare(at, 5, "ENTRY") == 0;
    lx_.set_pos(at);
    if (!entry && (after_name >= lx_.text().size() || lx_.text()[after_name] != '{'))
      return lx_.expected("'HloModule' at the start of the module", at);
    m_.header.has_header = false;
    return Status::success();
  }
  lx_.skip_ws();
  const size_t b = lx_.pos();
  m_.name = lx_.name();
  if (!valid_name(strip_percent(m_.name))) return lx_.expected("the module name", b);
  if (lx_.peek() == ':') lx_.advance();  // `HloModule name:` (XLA's lexer reads `name:`)
  Instruction holder;
  RETURN_IF_ERROR(attributes(holder, 0));
  for (const Attribute& a : holder.attributes()) {
    const size_t at = a.key.data() - lx_.text().data();
    // A misspelt num_partitions would leave one partition: refused, as XLA refuses it.
    if (!is_header_attribute(a.key))
      return lx_.error_at("unexpected module attribute '" + std::string(a.key) + "'", at);
    for (const Attribute& before : m_.attributes)
      if (before.key == a.key)
        return lx_.error_at("module attribute '" + std::string(a.key) + "' given twice", at);
    m_.attributes.push_back(a);
    if (a.key != "num_partitions" && a.key != "replica_count") {
      if (a.key == "is_scheduled") {
        if (a.value != "true" && a.value != "false")
          return lx_.expected("true or false", a.value.data() - lx_.text().data());
        m_.is_scheduled = a.value == "true";
      }
      continue;
    }
    std::optional<int64_t> n = attribute_int(a.value);
    if (!n)
      return lx_.expected("an integer " + std::string(a.key), a.value.data() - lx_.text().data());
    const int64_t v = (*n < 1 || *n > (1 << 20)) ? 1 : *n;
    if (a.key == "num_partitions") m_.num_partitions = v, m_.header.has_num_partitions = true;
    else m_.replica_count = v, m_.header.has_replica_count = true;
  }
  return Status::success();
}

// FileNames / FunctionNames / FileLocations / StackFrames: a keyword line, then numbered lines.
bool Parser::table() {
  static constexpr std::string_view kTables[] = {"FileNames", "FunctionNames", "FileLocations",
                                                 "StackFrames"};
  const std::string_view s = lx_.text();
  for (std::string_view t : kTables) {
    if (s.compare(lx_.pos(), t.size(), t) != 0) continue;
    size_t q = lx_.pos() + t.size();
    while (q < s.size() && (s[q] == ' ' || s[q] == '\t' || s[q] == '\r')) ++q;
    if (q < s.size() && s[q] != '\n') continue;
    lx_.set_pos(q);
    for (;;) {
      const size_t save = lx_.pos();
      lx_.skip_ws();
      if (!is_digit(lx_.peek())) {
        lx_.set_pos(save);
        return true;
      }
      size_t end = s.find('\n', lx_.pos());
      lx_.set_pos(end == std::string_view::npos ? s.size() : end);
    }
  }
  return false;
}

Result<int> Parser::add(Scope& scope, Instruction ins, size_t name_pos) {
  const int index = static_cast<int>(scope.comp.instructions.size());
  if (!scope.names.emplace(ins.name, index).second)
    return lx_.error_at("instruction '" + std::string(ins.name) + "' is defined twice in " +
                            "computation '" + std::string(scope.comp.name) + "'",
                        name_pos);
  scope.comp.instructions.push_back(std::move(ins));
  return index;
}

// One operand: `[shape] name` followed by ',' or ')', else a nested instruction
// `[shape] opcode(operands)` (XLA's rule), which is added to the computation before its user.
Result<int> Parser::operand(Scope& scope, int depth) {
  const size_t start = lx_.pos();
  if (can_be_shape(lx_)) {
    RETURN_IF_ERROR(read_shape(lx_, nullptr, depth + 1));
    lx_.skip_ws();
  }
  const size_t name_pos = lx_.pos();
  const std::string_view name = strip_percent(lx_.name());
  lx_.skip_ws();
  if (!name.empty() && (lx_.peek() == ',' || lx_.peek() == ')')) {
    auto it = scope.names.find(name);
    if (it != scope.names.end()) return it->second;
    return lx_.error_at("operand '" + std::string(name) + "' is not an instruction defined " +
                            "before it in computation '" + std::string(scope.comp.name) + "'",
                        name_pos);
  }
  if (name.empty() || lx_.peek() != '(')
    return lx_.expected("an operand name or a nested instruction", name_pos);
  lx_.set_pos(start);
  return rhs(scope, {}, start, /*attributes=*/false, depth + 1);
}

Status Parser::operands(Scope& scope, Instruction& ins, int depth) {
  const size_t open = lx_.pos();
  if (has_raw_operands(ins.opcode)) {
    RETURN_IF_ERROR(lx_.skip_balanced());
    ins.raw_operands = lx_.text().substr(open + 1, lx_.pos() - open - 2);
    return Status::success();
  }
  lx_.advance();  // '('
  if (lx_.consume(')')) return Status::success();
  for (;;) {
    lx_.skip_ws();
    ASSIGN_OR_RETURN(auto k, operand(scope, depth));
    ins.operands.push_back(k);
    if (lx_.consume(',')) continue;
    if (lx_.consume(')')) break;
    return lx_.expected("',' or ')' after an operand", lx_.pos());
  }
  ins.raw_operands = lx_.text().substr(open + 1, lx_.pos() - open - 2);
  return Status::success();
}

Status Parser::check_operands(const Instruction& ins, bool has_shape, int want_operands,
                              size_t ob) {
  // XLA insists on the operand count of most opcodes (not of a wrapped op: it gets the
  // start's operands as they are), and on a tuple's matching its shape.
  if (ins.opcode == "constant" && has_shape) {
    size_t at = 0;
    const std::string e = literal_error(ins.shape, ins.raw_operands, &at);
    if (!e.empty())
      return lx_.error_at(e, static_cast<size_t>(ins.raw_operands.data() - lx_.text().data()) + at);
  }
  if (want_operands >= 0 && static_cast<int>(ins.operands.size()) != want_operands)
    return lx_.error_at("'" + std::string(ins.opcode) + "' takes " +
                            std::to_string(want_operands) + " operand" +
                            (want_operands == 1 ? "" : "s") + ", found " +
                            std::to_string(ins.operands.size()),
                        ob);
  return Status::success();
}

// A conditional's first operand selects the branch: a pred true_/false_computation, an s32
// one of branch_computations (the attributes the other form names are not allowed).
Status Parser::check_conditional(const Scope& scope, const Instruction& ins,
                                 AttributeSet* allowed, size_t ob) {
  if (ins.opcode != "conditional") return Status::success();
  const Shape* index = ins.operands.empty() ? nullptr
                                            : &scope.comp.instructions[ins.operands[0]].shape;
  if (index == nullptr || !index->dims.empty() ||
      (index->type != PrimitiveType::kPred && index->type != PrimitiveType::kS32))
    return lx_.error_at("a conditional's first operand must be a pred or s32 scalar", ob);
  static const int kTrue = attribute_id("true_computation");
  static const int kFalse = attribute_id("false_computation");
  static const int kBranches = attribute_id("branch_computations");
  if (index->type == PrimitiveType::kPred) allowed->reset(kBranches);
  else allowed->reset(kTrue), allowed->reset(kFalse);
  return Status::success();
}

// The attributes of an instruction (a nested one may have none) and what they must agree on.
Status Parser::rhs_attributes(Scope& scope, Instruction& ins, int depth, bool attributes,
                              AttributeSet* allowed, int required, size_t ob) {
  if (attributes) {
    RETURN_IF_ERROR(this->attributes(ins, depth, allowed, required, ins.opcode));
    RETURN_IF_ERROR(control_predecessors(scope, ins));
    // Flattened ids need a channel (XLA refuses the text otherwise).
    static const int kUgdi = attribute_id("use_global_device_ids");
    if ((*allowed)[kUgdi] && ins.attr("use_global_device_ids") == "true" &&
        !ins.has_attr("channel_id"))
      return lx_.error_at("use_global_device_ids=true needs a channel_id", ob);
  } else if (required >= 0) {
    // A nested instruction has no attributes: one that needs an attribute is refused (XLA too).
    return lx_.error_at("'" + std::string(ins.opcode) + "' needs attribute '" +
                            std::string(attribute_name(required)) +
                            "', which a nested instruction cannot have",
                        ob);
  }
  return Status::success();
}

// instruction right-hand side: [shape] opcode(operands) [, attributes]. Adds the instruction
// (named `name`, or "<opcode>.anon" when nested) and returns its index.
Result<int> Parser::rhs(Scope& scope, std::string_view name, size_t name_pos, bool attributes,
                       int depth) {
  if (depth > kMaxNesting) return lx_.expected("operands nested less deeply", lx_.pos());
  Instruction ins;
  lx_.skip_ws();
  ins.line = lx_.line_of(name_pos);
  const bool has_shape = can_be_shape(lx_);
  if (has_shape) {
    RETURN_IF_ERROR(read_shape(lx_, &ins.shape, 0));
    lx_.skip_ws();
  }
  const size_t ob = lx_.pos();
  while (is_alpha(lx_.peek()) || is_digit(lx_.peek()) || lx_.peek() == '-' || lx_.peek() == '_')
    lx_.advance();
  ins.opcode = lx_.text().substr(ob, lx_.pos() - ob);
  if (ins.opcode.empty()) return lx_.expected("an opcode", ob);
  // `slice-start(...)` is XLA's way of writing an async-start that wraps a slice: read it so.
  Async async = async_sugar(ins.opcode, &ins.async_wrapped);
  const bool sugar = async != Async::kNone;
  const OpcodeRules* rules = find_opcode(sugar ? ins.async_wrapped : ins.opcode);
  if (rules == nullptr || (sugar && (has_own_async_forms(ins.async_wrapped) ||
                                     is_native_async_name(ins.async_wrapped))))
    return lx_.error_at("unknown opcode '" + std::string(ins.opcode) + "'", ob);
  if (!sugar) async = async_kind(ins.opcode);
  // The attributes XLA allows: an X-start's are X's (it parses them as the wrapped op's), an
  // X-update's or X-done's only the generic ones; all may name the async execution thread.
  static const int kThread = attribute_id("async_execution_thread");
  static const int kAliasing = attribute_id("output_to_operand_aliasing");
  AttributeSet allowed = sugar && async != Async::kStart ? generic_attributes() : rules->allowed;
  if (sugar) allowed.set(kThread);
  if (sugar && async == Async::kStart) allowed.set(kAliasing);  // the async-start's own
  int required = sugar && async != Async::kStart ? -1 : rules->required;
  if (!has_shape && !can_infer_shape(ins.opcode))
    return lx_.error_at("the result shape of '" + std::string(ins.opcode) +
                            "' cannot be inferred (XLA does not either): write it", ob);
  if (!lx_.consume('(')) return lx_.expected("'(' after the opcode", lx_.pos());
  lx_.set_pos(lx_.pos() - 1);
  RETURN_IF_ERROR(operands(scope, ins, depth));
  // A broadcast of a scalar needs no dimensions.
  if (ins.opcode == "broadcast" && ins.operands.size() == 1 &&
      scope.comp.instructions[ins.operands[0]].shape.dims.empty())
    required = -1;
  const int want_operands = sugar ? -1
                            : ins.opcode == "tuple" && has_shape && ins.shape.is_tuple()
                                ? static_cast<int>(ins.shape.tuple.size())
                                : rules->operands;
  RETURN_IF_ERROR(check_operands(ins, has_shape, want_operands, ob));
  RETURN_IF_ERROR(check_conditional(scope, ins, &allowed, ob));
  RETURN_IF_ERROR(rhs_attributes(scope, ins, depth, attributes, &allowed, required, ob));
  if (async != Async::kNone) {
    ins.opcode = async == Async::kStart ? "async-start"
                 : async == Async::kUpdate ? "async-update" : "async-done";
    RETURN_IF_ERROR(async_op(scope, ins, async, sugar, ob));
  }
  if (!has_shape) {
    auto shape = infer_shape(ins, scope.comp, m_);
    if (!shape.ok()) return lx_.error_at(shape.error().message, ob);
    ins.shape = std::move(*shape);
  }
  if (name.empty()) {
    std::string base = std::string(ins.opcode) + ".anon";
    std::string made = base;
    for (int k = 1; scope.names.count(made) != 0; ++k) made = base + "." + std::to_string(k);
    name = made_up(std::move(made));
  }
  ins.name = name;
  return add(scope, std::move(ins), name_pos);
}

// control-predecessors={a, %b}: each name an instruction defined before this one in its
// computation, as XLA resolves them (the rule of operands); else an error at the name. The
// instruction itself is not defined yet. The cursor is where it was on success.
Status Parser::control_predecessors(const Scope& scope, const Instruction& ins) {
  const std::string_view value = ins.attr("control-predecessors");
  if (value.empty()) return Status::success();
  const size_t resume = lx_.pos();
  lx_.set_pos(static_cast<size_t>(value.data() - lx_.text().data()));
  if (!lx_.consume('{')) return lx_.expected("'{' opening the control predecessors", lx_.pos());
  for (;;) {
    lx_.skip_ws();
    const size_t at = lx_.pos();
    const std::string_view name = strip_percent(lx_.name());
    if (name.empty()) return lx_.expected("an instruction name", at);
    if (scope.names.find(name) == scope.names.end())
      return lx_.error_at("control predecessor '" + std::string(name) +
                              "' is not an instruction defined before it in computation '" +
                              std::string(scope.comp.name) + "'",
                          at);
    if (lx_.consume(',')) continue;
    if (lx_.consume('}')) break;
    return lx_.expected("',' or '}' after a control predecessor", lx_.pos());
  }
  lx_.set_pos(resume);
  return Status::success();
}

// Checks an async-start/-update/-done as XLA's parser does and, for `X-start(operands)`,
// builds the computation it wraps: a parameter per operand and X (with the attributes
// written on the start) as root, named "async_wrapped" as XLA names it. `at` is the opcode.
Status Parser::async_op(Scope& scope, Instruction& ins, Async kind, bool sugar, size_t at) {
  auto fail = [&](const std::string& message) -> Status {
    return lx_.error_at(message, at);
  };
  if (kind == Async::kStart) {
    if (!is_async_shape(ins.shape))
      return fail("an async start's shape must be ((operands), outputs, state)");
    if (sugar) {
      Computation wrapped;
      wrapped.name = "async_wrapped";
      for (size_t k = 0; k < ins.operands.size(); ++k) {
        Instruction p;
        p.name = k == 0 ? std::string_view("async_param")
                        : made_up("async_param." + std::to_string(k));
        p.opcode = "parameter";
        p.line = ins.line;
        p.shape = scope.comp.instructions[ins.operands[k]].shape;
        p.raw_operands = made_up(std::to_string(k));
        wrapped.instructions.push_back(std::move(p));
      }
      Instruction op;
      op.name = ins.async_wrapped;
      op.opcode = ins.async_wrapped;
      op.line = ins.line;
      op.shape = ins.shape.tuple[1];
      op.is_root = true;
      op.attribute_text = ins.attribute_text;
      op.called = std::move(ins.called);
      op.called_keys = std::move(ins.called_keys);
      for (size_t k = 0; k < ins.operands.size(); ++k) op.operands.push_back(static_cast<int>(k));
      wrapped.root = static_cast<int>(wrapped.instructions.size());
      wrapped.instructions.push_back(std::move(op));
      m_.computations.push_back(std::move(wrapped));
      ins.called = {static_cast<int>(m_.computations.size()) - 1};
      ins.called_keys = {"calls"};
      return Status::success();
    }
    const int c = ins.callee("calls");
    if (c < 0) return fail("async-start needs calls=");
    if (async_called_.size() < m_.computations.size()) async_called_.resize(m_.computations.size());
    if (async_called_[c])
      return fail("computation '" + std::string(m_.computations[c].name) +
                  "' is already wrapped by another async-start");
    async_called_[c] = true;
    const Computation& callee = m_.computations[c];
    ins.async_wrapped = callee.instructions[callee.root].opcode;
    return Status::success();
  }
  // -update, -done: one operand, the async-start or -update they continue.
  const Instruction* prev = ins.operands.size() == 1 ? &scope.comp.instructions[ins.operands[0]]
                                                     : nullptr;
  if (prev == nullptr || (prev->opcode != "async-start" && prev->opcode != "async-update"))
    return fail("an async update or done takes one operand, the async op it continues");
  if (sugar && prev->async_wrapped != ins.async_wrapped)
    return fail("expected the async wrapped opcode '" + std::string(prev->async_wrapped) +
                "', found '" + std::string(ins.async_wrapped) + "'");
  ins.async_wrapped = prev->async_wrapped;
  if (kind == Async::kUpdate && !same_shape(ins.shape, prev->shape))
    return fail("an async update's shape must be its operand's");
  const int c = ins.callee("calls");
  if (c >= 0 && (prev->called.empty() || prev->called[0] != c))
    return fail("calls= names another computation than the async op's");
  const std::string_view thread = ins.attr("async_execution_thread");
  if (!thread.empty()) {
    const Instruction* start = prev;
    while (start->opcode == "async-update") start = &scope.comp.instructions[start->operands[0]];
    std::string_view want = unquoted(start->attr("async_execution_thread"));
    if (want.empty()) want = "main";
    if (unquoted(thread) != want)
      return fail("async_execution_thread differs from the async-start's ('" +
                  std::string(want) + "')");
  }
  return Status::success();
}

Status Parser::instruction(Scope& scope) {
  lx_.skip_ws();
  const size_t start = lx_.pos();
  const bool is_root = lx_.consume_word("ROOT");
  lx_.skip_ws();
  const size_t name_pos = lx_.pos();
  const std::string_view name = strip_percent(lx_.name());
  if (!valid_name(name)) return lx_.expected("an instruction name", name_pos);
  if (!lx_.consume('=')) return lx_.expected("'=' after the instruction name", lx_.pos());
  ASSIGN_OR_RETURN(auto index, rhs(scope, name, name_pos, /*attributes=*/true, 0));
  if (is_root) {
    if (scope.root >= 0) return lx_.error_at("a second ROOT in one computation", start);
    scope.root = index;
  }
  return Status::success();
}

// Instructions up to the '}' closing the body (the cursor is just past its '{').
Status Parser::instruction_list(Scope& scope, std::string_view what) {
  lx_.skip_ws();
  if (lx_.peek() == '}') return lx_.expected("an instruction in " + std::string(what), lx_.pos());
  for (;;) {
    lx_.skip_ws();
    if (lx_.eof()) return lx_.expected("'}' closing " + std::string(what), lx_.pos());
    if (lx_.peek() == '}') break;
    RETURN_IF_ERROR(instruction(scope));
  }
  lx_.advance();
  Computation& comp = scope.comp;
  comp.root = scope.root >= 0 ? scope.root : static_cast<int>(comp.instructions.size()) - 1;
  comp.instructions[comp.root].is_root = true;
  return Status::success();
}

// A computation written inline as an attribute value, `{ instructions }`, named "_" as XLA
// names it; it joins the module before the computation that holds it.
Result<int> Parser::callee(int depth) {
  lx_.skip_ws();
  if (lx_.peek() == '{') {
    if (depth > kMaxNesting) return lx_.expected("computations nested less deeply", lx_.pos());
    lx_.advance();
    Scope scope;
    scope.comp.name = "_";
    RETURN_IF_ERROR(instruction_list(scope, "the inline computation"));
    m_.computations.push_back(std::move(scope.comp));
    return static_cast<int>(m_.computations.size()) - 1;
  }
  const size_t at = lx_.pos();
  const std::string_view name = strip_percent(lx_.name());
  if (name.empty()) return lx_.expected("a computation name", at);
  auto it = computations_.find(name);
  if (it == computations_.end())
    return lx_.error_at("computation '" + std::string(name) + "' is not defined before its use " +
                            "(XLA needs callees first)", at);
  return it->second;
}

// Whether the '{' at `brace` opens an inline body (`{ name = ...` or `{ ROOT ...`) rather
// than a list of computation names.
bool Parser::inline_body_at(size_t brace) const {
  const std::string_view s = lx_.text();
  size_t p = skip_space_and_comments(s, brace + 1);
  if (s.compare(p, 4, "ROOT") == 0) return true;
  while (p < s.size() && is_name_char(s[p])) ++p;
  p = skip_space_and_comments(s, p);
  return p < s.size() && s[p] == '=';
}

Status Parser::call_value(Instruction& ins, std::string_view key, int depth) {
  auto one = [&]() -> Status {
    ASSIGN_OR_RETURN(auto c, callee(depth + 1));
    ins.called.push_back(c);
    ins.called_keys.push_back(key);
    return Status::success();
  };
  if (lx_.peek() != '{' || inline_body_at(lx_.pos())) return one();
  lx_.advance();  // a list: {a, b} or {{...}, b}
  if (lx_.consume('}')) return Status::success();
  for (;;) {
    RETURN_IF_ERROR(one());
    if (lx_.consume(',')) continue;
    if (lx_.consume('}')) return Status::success();
    return lx_.expected("',' or '}' in the computation list", lx_.pos());
  }
}

// ", key=value" pairs, over as many lines as they take (XLA's lexer sees no lines), with
// comments between them; ins.attribute_text keeps their text.
Status Parser::attributes(Instruction& ins, int depth, const AttributeSet* allowed,
                          int required, std::string_view opcode) {
  const size_t begin = lx_.pos();
  size_t end = begin;
  AttributeSet seen;
  for (;;) {
    lx_.skip_ws();
    if (lx_.peek() != ',') break;
    lx_.advance();
    lx_.skip_ws();
    const size_t kb = lx_.pos();
    const std::string_view key = lx_.name();
    if (key.empty()) return lx_.expected("an attribute name", kb);
    if (lx_.peek() != '=') return lx_.expected("'=' right after the attribute name", lx_.pos());
    int id = -1;
    if (allowed != nullptr) {
      id = attribute_id(key);
      if (id < 0 || !(*allowed)[id])
        return lx_.error_at("unexpected attribute '" + std::string(key) + "' for '" +
                                std::string(opcode) + "' (XLA allows " +
                                attribute_names(*allowed) + ")",
                            kb);
      if (seen[id])
        return lx_.error_at("attribute '" + std::string(key) + "' given twice", kb);
      seen.set(id);
    }
    lx_.advance();
    lx_.skip_ws();
    const size_t vb = lx_.pos();
    if (is_call_attribute(key)) {
      RETURN_IF_ERROR(call_value(ins, key, depth));
      end = lx_.pos();
      continue;
    }
    const ValueEnd ve = attribute_value_end(lx_.text(), vb, key);
    if (!ve.ok) return lx_.expected("the end of the string or bracket opened here", ve.bad);
    if (ve.end == vb) return lx_.expected("a value for attribute '" + std::string(key) + "'", vb);
    const char* what = "";
    if (id >= 0 && !attribute_value_ok(id, lx_.text().substr(vb, ve.end - vb), &what))
      return lx_.expected(std::string(what) + " as the value of '" + std::string(key) + "'", vb);
    lx_.set_pos(ve.end);
    end = ve.end;
  }
  if (required >= 0 && !seen[required])
    return lx_.error_at("'" + std::string(opcode) + "' needs attribute '" +
                            std::string(attribute_name(required)) + "'",
                        begin);
  lx_.set_pos(end);
  ins.attribute_text = lx_.text().substr(begin, end - begin);
  return Status::success();
}

// [ENTRY] name [(params) -> shape] { instructions } [, execution_thread="..."]
Status Parser::computation() {
  lx_.skip_ws();
  const size_t entry_pos = lx_.pos();
  Scope scope;
  Computation& comp = scope.comp;
  if (lx_.consume_word("ENTRY")) {
    comp.is_entry = true;
    lx_.skip_ws();
  }
  const size_t nb = lx_.pos();
  comp.name = strip_percent(lx_.name());
  if (!valid_name(comp.name)) return lx_.expected("a computation name or 'ENTRY'", nb);
  if (lx_.consume('(')) {
    lx_.set_pos(lx_.pos() - 1);
    RETURN_IF_ERROR(lx_.skip_balanced());
    if (!lx_.consume('-') || lx_.peek() != '>')
      return lx_.expected("'->' and the result shape after the parameters", lx_.pos());
    lx_.advance();
    Shape result;
    RETURN_IF_ERROR(read_shape(lx_, &result, 0));
  }
  if (!lx_.consume('{')) return lx_.expected("'{' opening the computation body", lx_.pos());
  RETURN_IF_ERROR(instruction_list(scope, "computation '" + std::string(comp.name) + "'"));
  Instruction holder;  // `}, execution_thread="..."`
  RETURN_IF_ERROR(attributes(holder, 0));
  if (comp.is_entry && m_.entry >= 0) return lx_.error_at("a second ENTRY computation", entry_pos);
  const int index = static_cast<int>(m_.computations.size());
  if (!computations_.emplace(comp.name, index).second)
    return lx_.error_at("computation '" + std::string(comp.name) + "' is defined twice", nb);
  if (comp.is_entry) m_.entry = index;
  m_.computations.push_back(std::move(comp));
  return Status::success();
}

Result<HloModule> Parser::module() {
  RETURN_IF_ERROR(header());
  for (;;) {
    lx_.skip_ws();
    if (lx_.eof()) break;
    if (table()) continue;
    RETURN_IF_ERROR(computation());
  }
  if (m_.computations.empty()) return lx_.expected("at least one computation", lx_.pos());
  if (m_.entry < 0) m_.entry = static_cast<int>(m_.computations.size()) - 1;
  if (!m_.header.has_header)
    m_.name = made_up("module_" + std::string(m_.computations[m_.entry].name));
  return std::move(m_);
}

Result<Shape> shape_only(std::string_view text) {
  Lexer lx(text, "");
  Shape out;
  RETURN_IF_ERROR(read_shape(lx, &out, 0));
  lx.skip_ws();
  if (!lx.eof()) return lx.expected("end of the shape", lx.pos());
  return out;
}

}  // namespace

Result<Layout> parse_layout(std::string_view layout_text) {
  std::string braced = std::string(layout_text) + "}";
  Lexer lx(braced, "");
  Layout out;
  RETURN_IF_ERROR(read_layout(lx, &out, -1));
  if (!lx.eof()) return lx.expected("the end of the layout", lx.pos());
  return out;
}

Result<HloModule> parse_hlo_module(std::string_view text, std::string filename) {
  return Parser(text, std::move(filename)).module();
}

Result<Shape> parse_shape(std::string_view text) { return shape_only(text); }

}  // namespace aoizora::hlo
