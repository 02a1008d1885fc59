#include "aoizora/hlo/hlo_parser.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <unordered_map>
#include <utility>

namespace aoizora::hlo {
namespace {

constexpr int kMaxNesting = 64;  // tuple nesting; deeper input is rejected, not recursed into

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '-' || c == '$' || c == '%';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// Characters that end a run of ordinary attribute text: quotes, brackets, ',' and newline.
struct SpecialTable {
  bool special[256] = {};
  constexpr SpecialTable() {
    for (unsigned char c : std::string_view("\"(){}[],\n")) special[c] = true;
  }
};
constexpr SpecialTable kSpecial;

std::string_view strip_percent(std::string_view s) {
  if (!s.empty() && s.front() == '%') s.remove_prefix(1);
  return s;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' ||
                        s.front() == '\r'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' ||
                        s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// Attributes whose values name called computations.
bool is_call_attribute(std::string_view key) {
  return key == "calls" || key == "to_apply" || key == "condition" || key == "body" ||
         key == "true_computation" || key == "false_computation" ||
         key == "branch_computations" || key == "called_computations" || key == "select" ||
         key == "scatter" || key == "comparator";
}

class Parser {
 public:
  Parser(std::string_view text, std::string filename)
      : s_(text), filename_(std::move(filename)) {}

  Result<HloModule> module();
  Result<Shape> shape_only();
  Result<Layout> layout_only();

 private:
  // --- errors and positions ---
  int line_of(size_t pos) {
    if (pos < line_pos_) {
      line_pos_ = 0;
      line_ = 1;
    }
    line_ += static_cast<int>(std::count(s_.data() + line_pos_, s_.data() + pos, '\n'));
    line_pos_ = pos;
    return line_;
  }
  Error error(std::string what, size_t pos) {
    pos = std::min(pos, s_.size());
    int line = line_of(pos);
    size_t bol = s_.rfind('\n', pos == 0 ? 0 : pos - 1);
    bol = (bol == std::string_view::npos || pos == 0) ? 0 : bol + 1;
    if (pos > 0 && s_[pos - 1] == '\n') bol = pos;
    std::string found;
    if (pos >= s_.size()) {
      found = "end of input";
    } else {
      size_t end = pos;
      while (end < s_.size() && end - pos < 20 && s_[end] != '\n') ++end;
      found = "'" + std::string(s_.substr(pos, end - pos)) + "'";
    }
    return Error{"expected " + what + ", found " + found, filename_, line,
                 static_cast<int>(pos - bol) + 1};
  }

  bool eof() const { return p_ >= s_.size(); }
  char peek() const { return p_ < s_.size() ? s_[p_] : '\0'; }

  // Skips spaces, newlines and /* */ and // comments.
  void skip_ws() {
    while (p_ < s_.size()) {
      char c = s_[p_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++p_;
      } else if (c == '/' && p_ + 1 < s_.size() && s_[p_ + 1] == '*') {
        size_t end = s_.find("*/", p_ + 2);
        p_ = end == std::string_view::npos ? s_.size() : end + 2;
      } else if (c == '/' && p_ + 1 < s_.size() && s_[p_ + 1] == '/') {
        size_t end = s_.find('\n', p_);
        p_ = end == std::string_view::npos ? s_.size() : end;
      } else {
        break;
      }
    }
  }
  // Skips spaces and tabs on the current line only.
  void skip_blank() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\t' || s_[p_] == '\r')) ++p_;
  }
  bool consume(char c) {
    skip_ws();
    if (peek() == c) {
      ++p_;
      return true;
    }
    return false;
  }
  bool consume_word(std::string_view w) {
    if (s_.compare(p_, w.size(), w) != 0) return false;
    size_t after = p_ + w.size();
    if (after < s_.size() && is_name_char(s_[after])) return false;
    p_ = after;
    return true;
  }
  std::string_view name() {
    size_t b = p_;
    while (p_ < s_.size() && is_name_char(s_[p_])) ++p_;
    return s_.substr(b, p_ - b);
  }
  bool integer(int64_t* out) {
    skip_ws();
    size_t b = p_;
    if (peek() == '-') ++p_;
    while (p_ < s_.size() && is_digit(s_[p_])) ++p_;
    auto [ptr, ec] = std::from_chars(s_.data() + b, s_.data() + p_, *out);
    if (ec != std::errc() || ptr != s_.data() + p_) {
      p_ = b;
      return false;
    }
    return true;
  }

  // Skips a string starting at p_ (which holds the quote). False when unterminated.
  bool skip_string() {
    char q = s_[p_++];
    while (p_ < s_.size()) {
      const char* hit = static_cast<const char*>(
          memchr(s_.data() + p_, q, s_.size() - p_));
      if (hit == nullptr) break;
      size_t at = static_cast<size_t>(hit - s_.data());
      size_t bs = 0;  // count the backslashes right before the quote
      while (at - bs > p_ && s_[at - bs - 1] == '\\') ++bs;
      p_ = at + 1;
      if (bs % 2 == 0) return true;
    }
    p_ = s_.size();
    return false;
  }

  // Skips a balanced group starting at p_ ('(', '{' or '['), strings included.
  Result<bool> skip_balanced() {
    size_t start = p_;
    int depth = 0;
    while (p_ < s_.size()) {
      while (p_ < s_.size() && !kSpecial.special[static_cast<unsigned char>(s_[p_])]) ++p_;
      if (p_ >= s_.size()) break;
      char c = s_[p_];
      if (c == '"') {
        if (!skip_string()) return error("a closing '\"'", start);
        continue;
      }
      if (c == '(' || c == '{' || c == '[') {
        ++depth;
      } else if (c == ')' || c == '}' || c == ']') {
        --depth;
        if (depth == 0) {
          ++p_;
          return true;
        }
      }
      ++p_;
    }
    return error("a closing bracket for the group opened here", start);
  }

  // The raw text of an attribute value: up to a top-level ',' or newline, or an unmatched
  // closing bracket. The mesh form of replica_groups keeps its ", device_ids=(...)".
  Result<std::string_view> value() {
    skip_blank();
    size_t b = p_;
    int depth = 0;
    while (p_ < s_.size()) {
      while (p_ < s_.size() && !kSpecial.special[static_cast<unsigned char>(s_[p_])]) ++p_;
      if (p_ >= s_.size()) break;
      char c = s_[p_];
      if (c == '"') {
        size_t at = p_;
        if (!skip_string()) return error("a closing '\"'", at);
        continue;
      }
      if (c == '(' || c == '{' || c == '[') {
        ++depth;
      } else if (c == ')' || c == '}' || c == ']') {
        if (depth == 0) break;
        --depth;
      } else if (depth == 0 && (c == '\n' || c == ',')) {
        if (c == ',') {
          if (size_t resume = mesh_value_continues(s_, b, p_); resume != std::string_view::npos) {
            p_ = resume;
            continue;
          }
        }
        break;
      }
      ++p_;
    }
    if (depth != 0) return error("a closing bracket in the attribute value", b);
    return trim(s_.substr(b, p_ - b));
  }

  // ", key=value" pairs until something else follows. Keeps them in `out` when given, and
  // records the values of call attributes (calls=, to_apply=, ...) for `calls_of`.
  Result<bool> attributes(std::vector<Attribute>* out, int calls_of = -1) {
    for (;;) {
      skip_blank();
      if (peek() != ',') return true;
      ++p_;
      skip_blank();
      size_t kb = p_;
      std::string_view key = name();
      if (key.empty()) return error("an attribute name", kb);
      skip_blank();
      if (peek() != '=') {
        // A bare word attribute (rare); keep it with an empty value.
        if (out != nullptr) out->push_back({key, {}});
        continue;
      }
      ++p_;
      auto v = value();
      if (!v.ok()) return v.error();
      if (out != nullptr) out->push_back({key, *v});
      if (calls_of >= 0 && is_call_attribute(key)) pending_calls_.push_back({calls_of, *v});
    }
  }

  Result<bool> shape(Shape* out, int depth);
  Result<bool> layout(Layout* out);
  Result<bool> computation(HloModule* m);
  Result<bool> instruction(Computation* comp, bool* is_root);
  Result<bool> header(HloModule* m);
  bool table();

  std::string_view s_;
  size_t p_ = 0;
  std::string filename_;
  // Call attribute values, by instruction of the computation being parsed, resolved to
  // computation indices once every computation is known.
  struct PendingCall {
    int instruction;
    std::string_view value;
  };
  std::vector<PendingCall> pending_calls_;
  struct ModuleCalls {
    int computation;
    std::vector<PendingCall> calls;
  };
  std::vector<ModuleCalls> module_calls_;
  // Name -> index within the computation being parsed, and operands named before their
  // definition (instruction, operand slot, name).
  std::unordered_map<std::string_view, int> names_;
  struct Forward {
    int instruction;
    int slot;
    std::string_view name;
  };
  std::vector<Forward> forward_;
  size_t line_pos_ = 0;
  int line_ = 1;
};

Result<bool> Parser::layout(Layout* out) {
  // At p_ just after '{'.
  skip_ws();
  while (peek() != ':' && peek() != '}') {
    int64_t v;
    if (!integer(&v)) return error("a layout dimension", p_);
    if (out != nullptr) out->minor_to_major.push_back(v);
    skip_ws();
    if (peek() == ',') ++p_;
    else if (peek() != ':' && peek() != '}') return error("',', ':' or '}' in the layout", p_);
    skip_ws();
  }
  if (peek() == ':') {
    ++p_;
    for (;;) {
      skip_ws();
      char c = peek();
      if (c == '}') break;
      if (c == 'T' && p_ + 1 < s_.size() && s_[p_ + 1] == '(') {
        ++p_;
        while (peek() == '(') {
          ++p_;
          std::vector<int64_t> tile;
          // Tile dims may be '*' (a combined dim); record it as -1.
          skip_ws();
          while (peek() != ')') {
            if (peek() == '*') {
              ++p_;
              if (out != nullptr) tile.push_back(-1);
            } else {
              int64_t v;
              if (!integer(&v)) return error("a tile dimension", p_);
              if (out != nullptr) tile.push_back(v);
            }
            skip_ws();
            if (peek() == ',') ++p_;
            else if (peek() != ')') return error("',' or ')' in a tile", p_);
            skip_ws();
          }
          ++p_;
          if (out != nullptr) out->tiles.push_back(std::move(tile));
        }
        continue;
      }
      if (c == 'S' && p_ + 1 < s_.size() && s_[p_ + 1] == '(') {
        p_ += 2;
        int64_t v;
        if (!integer(&v)) return error("a memory space", p_);
        if (out != nullptr) out->memory_space = v;
        if (!consume(')')) return error("')'", p_);
        continue;
      }
      // Other layout attributes (E(..), D(..), L(..), #(..), *(..), P(..), SC(..), M(..)):
      // a word or a symbol followed by parenthesised groups.
      size_t b = p_;
      while (p_ < s_.size() && (is_alpha(s_[p_]) || s_[p_] == '#' || s_[p_] == '*')) ++p_;
      if (p_ == b) return error("a layout attribute or '}'", p_);
      while (peek() == '(') {
        auto r = skip_balanced();
        if (!r.ok()) return r.error();
      }
    }
  }
  if (peek() != '}') return error("'}' closing the layout", p_);
  ++p_;
  return true;
}

Result<bool> Parser::shape(Shape* out, int depth) {
  if (depth > kMaxNesting) return error("a shape nested less deeply", p_);
  skip_ws();
  if (peek() == '(') {
    ++p_;
    out->type = PrimitiveType::kTuple;
    skip_ws();
    if (peek() == ')') {
      ++p_;
      return true;
    }
    for (;;) {
      out->tuple.emplace_back();
      auto r = shape(&out->tuple.back(), depth + 1);
      if (!r.ok()) return r;
      skip_ws();
      if (peek() == ',') {
        ++p_;
        continue;
      }
      if (peek() == ')') {
        ++p_;
        return true;
      }
      return error("',' or ')' in a tuple shape", p_);
    }
  }
  size_t b = p_;
  while (p_ < s_.size() && (is_alpha(s_[p_]) || is_digit(s_[p_]))) ++p_;
  std::string_view type_name = s_.substr(b, p_ - b);
  out->type = primitive_type_from_name(type_name);
  if (out->type == PrimitiveType::kInvalid || out->type == PrimitiveType::kTuple)
    return error("an element type such as f32 or bf16", b);
  if (peek() != '[') {
    if (out->type == PrimitiveType::kToken || out->type == PrimitiveType::kOpaque) return true;
    return error("'[' after the element type", p_);
  }
  ++p_;
  skip_ws();
  while (peek() != ']') {
    if (peek() == '?') {
      ++p_;
      out->dims.push_back(0);
    } else {
      if (peek() == '<' && p_ + 1 < s_.size() && s_[p_ + 1] == '=') p_ += 2;
      int64_t v;
      if (!integer(&v) || v < 0) return error("a dimension size", p_);
      out->dims.push_back(v);
    }
    skip_ws();
    if (peek() == ',') {
      ++p_;
      skip_ws();
    } else if (peek() != ']') {
      return error("',' or ']' in the dimensions", p_);
    }
  }
  ++p_;
  if (peek() == '{') {
    ++p_;
    size_t lb = p_;
    out->has_layout = true;
    auto r = layout(nullptr);
    if (!r.ok()) return r;
    out->layout_text = s_.substr(lb, p_ - 1 - lb);
  }
  return true;
}

Result<bool> Parser::header(HloModule* m) {
  skip_ws();
  if (!consume_word("HloModule")) return error("'HloModule' at the start of the module", p_);
  skip_blank();
  size_t b = p_;
  m->name = name();
  if (m->name.empty()) return error("the module name", b);
  auto r = attributes(&m->attributes);
  if (!r.ok()) return r;
  for (const Attribute& a : m->attributes) {
    int64_t v = 0;
    auto parse_int = [&](std::string_view t) {
      auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      return ec == std::errc() && ptr == t.data() + t.size();
    };
    if (a.key == "num_partitions" && parse_int(a.value)) m->num_partitions = v;
    if (a.key == "replica_count" && parse_int(a.value)) m->replica_count = v;
    if (a.key == "is_scheduled") m->is_scheduled = a.value == "true";
  }
  if (m->num_partitions < 1 || m->num_partitions > (1 << 20)) m->num_partitions = 1;
  if (m->replica_count < 1 || m->replica_count > (1 << 20)) m->replica_count = 1;
  return true;
}

// FileNames / FunctionNames / FileLocations / StackFrames: a keyword line, then numbered lines.
bool Parser::table() {
  static constexpr std::string_view kTables[] = {"FileNames", "FunctionNames", "FileLocations",
                                                 "StackFrames"};
  for (std::string_view t : kTables) {
    if (s_.compare(p_, t.size(), t) != 0) continue;
    size_t q = p_ + t.size();
    while (q < s_.size() && (s_[q] == ' ' || s_[q] == '\t' || s_[q] == '\r')) ++q;
    if (q < s_.size() && s_[q] != '\n') continue;
    p_ = q;
    for (;;) {
      size_t save = p_;
      skip_ws();
      if (!is_digit(peek())) {
        p_ = save;
        return true;
      }
      size_t end = s_.find('\n', p_);
      p_ = end == std::string_view::npos ? s_.size() : end;
    }
  }
  return false;
}

Result<bool> Parser::instruction(Computation* comp, bool* is_root) {
  skip_ws();
  size_t start = p_;
  *is_root = false;
  if (consume_word("ROOT")) {
    *is_root = true;
    skip_ws();
  }
  Instruction ins;
  ins.line = line_of(start);
  size_t nb = p_;
  ins.name = strip_percent(name());
  if (ins.name.empty()) return error("an instruction name", nb);
  if (!consume('=')) return error("'=' after the instruction name", p_);
  auto r = shape(&ins.shape, 0);
  if (!r.ok()) return r;
  skip_ws();
  size_t ob = p_;
  while (p_ < s_.size() && (is_alpha(s_[p_]) || is_digit(s_[p_]) || s_[p_] == '-' ||
                            s_[p_] == '_'))
    ++p_;
  ins.opcode = s_.substr(ob, p_ - ob);
  if (ins.opcode.empty()) return error("an opcode", ob);
  skip_ws();
  if (peek() != '(') return error("'(' after the opcode", p_);
  size_t lb = p_;
  auto bal = skip_balanced();
  if (!bal.ok()) return bal.error();
  ins.raw_operands = s_.substr(lb + 1, p_ - lb - 2);
  if (ins.opcode != "constant" && ins.opcode != "parameter" && ins.opcode != "iota") {
    // Operands: "%a, %b" or "f32[2]{0} %a, ..." (names are the last word of each piece).
    std::string_view rest = ins.raw_operands;
    int depth = 0;
    size_t piece = 0;
    for (size_t i = 0; i <= rest.size(); ++i) {
      char c = i < rest.size() ? rest[i] : ',';
      if (c == '"') {  // strings inside operands are unusual; skip them
        size_t j = rest.find('"', i + 1);
        if (j == std::string_view::npos) break;
        i = j;
        continue;
      }
      if (c == '(' || c == '{' || c == '[') ++depth;
      else if (c == ')' || c == '}' || c == ']') --depth;
      else if (c == ',' && depth == 0) {
        std::string_view op = trim(rest.substr(piece, i - piece));
        piece = i + 1;
        if (op.empty()) continue;
        size_t sp = op.find_last_of(" \t\n");
        if (sp != std::string_view::npos) op = op.substr(sp + 1);
        op = strip_percent(op);
        auto it = names_.find(op);
        if (it == names_.end()) {
          forward_.push_back({static_cast<int>(comp->instructions.size()),
                              static_cast<int>(ins.operands.size()), op});
          ins.operands.push_back(-1);
        } else {
          ins.operands.push_back(it->second);
        }
      }
    }
  }
  size_t ab = p_;
  auto a = attributes(nullptr, static_cast<int>(comp->instructions.size()));
  if (!a.ok()) return a;
  ins.attribute_text = s_.substr(ab, p_ - ab);
  names_.emplace(ins.name, static_cast<int>(comp->instructions.size()));
  comp->instructions.push_back(std::move(ins));
  return true;
}

Result<bool> Parser::computation(HloModule* m) {
  skip_ws();
  Computation comp;
  if (consume_word("ENTRY")) {
    comp.is_entry = true;
    skip_ws();
  }
  size_t nb = p_;
  comp.name = strip_percent(name());
  if (comp.name.empty()) return error("a computation name or 'ENTRY'", nb);
  skip_ws();
  if (peek() == '(') {
    auto r = skip_balanced();
    if (!r.ok()) return r;
    skip_ws();
  }
  if (peek() == '-' && p_ + 1 < s_.size() && s_[p_ + 1] == '>') {
    p_ += 2;
    Shape result;
    auto r = shape(&result, 0);
    if (!r.ok()) return r;
    skip_ws();
  }
  // Computation-level attributes such as ", execution_thread=..." may precede the brace.
  if (peek() == ',') {
    std::vector<Attribute> ignored;
    auto r = attributes(&ignored);
    if (!r.ok()) return r;
    skip_ws();
  }
  if (peek() != '{') return error("'{' opening the computation body", p_);
  ++p_;
  names_.clear();
  forward_.clear();
  pending_calls_.clear();
  int root = -1;
  for (;;) {
    skip_ws();
    if (eof()) return error("'}' closing computation '" + std::string(comp.name) + "'", p_);
    if (peek() == '}') {
      ++p_;
      break;
    }
    bool is_root = false;
    auto r = instruction(&comp, &is_root);
    if (!r.ok()) return r;
    if (is_root) root = static_cast<int>(comp.instructions.size()) - 1;
  }
  if (comp.instructions.empty()) return error("at least one instruction in the computation", p_);
  if (root < 0) root = static_cast<int>(comp.instructions.size()) - 1;
  comp.instructions[root].is_root = true;
  comp.root = root;
  // Operands named before their definition (unusual outside hand-written text).
  for (const Forward& f : forward_) {
    auto it = names_.find(f.name);
    if (it != names_.end()) comp.instructions[f.instruction].operands[f.slot] = it->second;
  }
  if (!pending_calls_.empty())
    module_calls_.push_back({static_cast<int>(m->computations.size()), pending_calls_});
  if (comp.is_entry) m->entry = static_cast<int>(m->computations.size());
  m->computations.push_back(std::move(comp));
  return true;
}

Result<HloModule> Parser::module() {
  HloModule m;
  auto h = header(&m);
  if (!h.ok()) return h.error();
  for (;;) {
    skip_ws();
    if (eof()) break;
    if (table()) continue;
    auto r = computation(&m);
    if (!r.ok()) return r.error();
  }
  if (m.computations.empty()) return error("at least one computation", p_);
  if (m.entry < 0) m.entry = static_cast<int>(m.computations.size()) - 1;
  std::unordered_map<std::string_view, int> by_name;
  by_name.reserve(m.computations.size() * 2);
  for (size_t i = 0; i < m.computations.size(); ++i)
    by_name.emplace(m.computations[i].name, static_cast<int>(i));
  for (const ModuleCalls& mc : module_calls_) {
    Computation& c = m.computations[mc.computation];
    for (const PendingCall& call : mc.calls) {
      Instruction& ins = c.instructions[call.instruction];
      {
        std::string_view v = call.value;
        if (!v.empty() && v.front() == '{') v = v.substr(1, v.size() >= 2 ? v.size() - 2 : 0);
        size_t b = 0;
        for (size_t i = 0; i <= v.size(); ++i) {
          if (i < v.size() && v[i] != ',') continue;
          std::string_view n = strip_percent(trim(v.substr(b, i - b)));
          b = i + 1;
          if (n.empty()) continue;
          auto it = by_name.find(n);
          if (it == by_name.end())
            return Error{"instruction '" + std::string(ins.name) + "' calls unknown computation '" +
                             std::string(n) + "'",
                         filename_, ins.line, 0};
          ins.called.push_back(it->second);
        }
      }
    }
  }
  return m;
}

Result<Shape> Parser::shape_only() {
  Shape out;
  auto r = shape(&out, 0);
  if (!r.ok()) return r.error();
  skip_ws();
  if (!eof()) return error("end of the shape", p_);
  return out;
}

Result<Layout> Parser::layout_only() {
  Layout out;
  auto r = layout(&out);
  if (!r.ok()) return r.error();
  if (!eof()) return error("the end of the layout", p_);
  return out;
}

}  // namespace

Result<Layout> parse_layout(std::string_view layout_text) {
  std::string braced = std::string(layout_text) + "}";
  Result<Layout> r = Parser(braced, "").layout_only();
  return r;
}

Result<HloModule> parse_hlo_module(std::string_view text, std::string filename) {
  return Parser(text, std::move(filename)).module();
}

Result<Shape> parse_shape(std::string_view text) { return Parser(text, "").shape_only(); }

}  // namespace aoizora::hlo
