#include "aoizora/shlo/parser.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

namespace aoizora::shlo {
namespace {

bool is_name_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$' || c == '-';
}

// Splits `a, b<c, d>, (e, f)` at top-level commas.
std::vector<std::string_view> split_top(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t j = 0; j < s.size(); ++j) {
    char c = s[j];
    if (c == '-' && j + 1 < s.size() && s[j + 1] == '>') {
      ++j;
      continue;
    }
    if (c == '<' || c == '(' || c == '[' || c == '{') ++depth;
    if (c == '>' || c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(s.substr(start, j - start));
      start = j + 1;
    }
  }
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Text of the balanced `<...>` starting at s[pos] == '<' (inclusive), string-aware.
std::string_view balanced(std::string_view s, size_t pos, char open, char close) {
  int depth = 0;
  for (size_t j = pos; j < s.size(); ++j) {
    if (s[j] == '"') {
      size_t k = j + 1;
      while (k < s.size() && s[k] != '"') k += (s[k] == '\\') ? 2 : 1;
      j = k;
      continue;
    }
    if (s[j] == '-' && open == '<' && j + 1 < s.size() && s[j + 1] == '>') {
      ++j;
      continue;
    }
    if (s[j] == open) ++depth;
    if (s[j] == close && --depth == 0) return s.substr(pos, j - pos + 1);
  }
  return s.substr(pos);
}

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {
    line_starts_.push_back(0);
    for (size_t j = 0; j < s_.size(); ++j)
      if (s_[j] == '\n') line_starts_.push_back(j + 1);
  }

  Result<Module> run() {
    skip_ws();
    // Attribute aliases (#loc = ...) may precede the module.
    while (i_ < s_.size() && s_[i_] == '#') {
      skip_line();
      skip_ws();
    }
    if (!eat_word("module")) return err(i_, "expected 'module'");
    skip_ws();
    if (peek() == '@') {
      ++i_;
      m_.name = read_name();
    }
    skip_ws();
    if (eat_word("attributes")) {
      skip_ws();
      if (peek() != '{') return err(i_, "expected '{' after 'attributes'");
      std::string_view attrs = balanced(s_, i_, '{', '}');
      i_ += attrs.size();
      if (auto n = attr_int(attrs, "mhlo.num_partitions")) m_.num_partitions = *n;
      if (auto n = attr_int(attrs, "mhlo.num_replicas")) m_.num_replicas = *n;
    }
    skip_ws();
    if (!eat('{')) return err(i_, "expected '{' to open the module body");
    while (true) {
      skip_ws();
      if (i_ >= s_.size()) return err(i_, "unexpected end of text: the module body is not closed");
      if (peek() == '}') {
        ++i_;
        break;
      }
      if (eat_word("sdy.mesh")) {
        if (auto e = parse_mesh(); !e.message.empty()) return e;
      } else if (eat_word("func.func")) {
        if (auto e = parse_func(); !e.message.empty()) return e;
      } else {
        skip_op_text();
      }
    }
    if (m_.funcs.empty()) return err(i_, "the module has no func.func");
    if (!gspmd_mesh_.axes.empty()) m_.meshes.meshes.push_back(gspmd_mesh_);
    return std::move(m_);
  }

 private:
  // ---- low-level scanning ----
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool eat(char c) {
    if (peek() == c) {
      ++i_;
      return true;
    }
    return false;
  }
  bool eat_word(std::string_view w) {
    if (s_.substr(i_, w.size()) == w && (i_ + w.size() >= s_.size() || !is_name_char(s_[i_ + w.size()]))) {
      i_ += w.size();
      return true;
    }
    return false;
  }
  void skip_ws() {
    while (i_ < s_.size()) {
      if (std::isspace(static_cast<unsigned char>(s_[i_]))) {
        ++i_;
      } else if (s_.substr(i_, 2) == "//") {
        skip_line();
      } else {
        break;
      }
    }
  }
  // A '{' at pos that ends its line opens a region or body (an attribute dictionary never
  // ends a line in the printed form).
  bool opens_region(size_t pos) const {
    size_t k = pos + 1;
    while (k < s_.size() && (s_[k] == ' ' || s_[k] == '\t' || s_[k] == '\r')) ++k;
    return k >= s_.size() || s_[k] == '\n';
  }
  void skip_spaces() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  void skip_line() {
    while (i_ < s_.size() && s_[i_] != '\n') ++i_;
  }
  std::string read_name() {
    size_t j = i_;
    if (j < s_.size() && s_[j] == '"') {
      size_t k = s_.find('"', j + 1);
      if (k == std::string_view::npos) k = s_.size() - 1;
      i_ = k + 1;
      return std::string(s_.substr(j + 1, k - j - 1));
    }
    while (j < s_.size() && is_name_char(s_[j])) ++j;
    std::string out(s_.substr(i_, j - i_));
    i_ = j;
    return out;
  }
  // A type token: `tensor<...>`, `!stablehlo.token`, `tuple<...>`.
  std::string_view read_type() {
    size_t j = i_;
    while (j < s_.size() && (is_name_char(s_[j]) || s_[j] == '!')) ++j;
    if (j < s_.size() && s_[j] == '<') j += balanced(s_, j, '<', '>').size();
    std::string_view t = s_.substr(i_, j - i_);
    i_ = j;
    return t;
  }
  Error err(size_t pos, std::string msg) const {
    auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), pos);
    size_t line = static_cast<size_t>(it - line_starts_.begin());
    size_t col = pos - line_starts_[line - 1] + 1;
    return Error{std::move(msg), "", static_cast<int>(line), static_cast<int>(col)};
  }
  std::pair<int, int> line_col(size_t pos) const {
    Error e = err(pos, "");
    return {e.line, e.column};
  }
  // Skips one unknown top-level item: up to a newline outside brackets.
  void skip_op_text() {
    int depth = 0;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '"') {
        size_t k = s_.find('"', i_ + 1);
        i_ = k == std::string_view::npos ? s_.size() : k + 1;
        continue;
      }
      if (c == '{' || c == '(' || c == '[') ++depth;
      if (c == '}' || c == ')' || c == ']') --depth;
      if (c == '\n' && depth <= 0) break;
      ++i_;
    }
  }

  // ---- values and scopes ----
  int new_value(std::string name, TensorType type) {
    m_.values.push_back(Value{std::move(name), std::move(type), std::nullopt});
    return static_cast<int>(m_.values.size()) - 1;
  }
  void define(const std::string& name, int id, int count = 1) { scopes_.back()[name] = {id, count}; }
  // Value id of "%x" or "%x#k", or -1.
  int lookup(std::string_view ref) const {
    std::string base(ref);
    int k = 0;
    if (size_t h = base.find('#'); h != std::string::npos) {
      k = std::atoi(base.c_str() + h + 1);
      base.resize(h);
    }
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = it->find(base);
      if (f != it->end()) return k < f->second.second ? f->second.first + k : -1;
    }
    return -1;
  }

  // Sharding in an attribute dictionary text: sdy.sharding or mhlo.sharding.
  Result<std::optional<TensorSharding>> sharding_in(std::string_view dict, size_t pos) {
    size_t k = dict.find("#sdy.sharding<");
    if (k != std::string_view::npos) {
      m_.shardy = true;
      Result<TensorSharding> t = parse_sdy_sharding(balanced(dict, k + 13, '<', '>'));
      if (!t.ok()) return err(pos, "bad sdy.sharding: " + t.error().message);
      return std::optional<TensorSharding>(*t);
    }
    k = dict.find("mhlo.sharding = \"");
    if (k != std::string_view::npos) {
      size_t a = k + 16;
      size_t b = dict.find('"', a + 1);
      Result<TensorSharding> t =
          parse_gspmd_sharding(dict.substr(a + 1, b - a - 1), m_.num_partitions, &gspmd_mesh_);
      if (!t.ok()) return err(pos, "bad mhlo.sharding: " + t.error().message);
      return std::optional<TensorSharding>(*t);
    }
    return std::optional<TensorSharding>();
  }

  // ---- module items ----
  Error parse_mesh() {
    skip_ws();
    size_t at = i_;
    if (!eat('@')) return err(i_, "expected '@name' after sdy.mesh");
    Mesh mesh;
    mesh.name = read_name();
    skip_ws();
    if (!eat('=')) return err(i_, "expected '=' in sdy.mesh");
    skip_ws();
    if (!eat('<')) return err(i_, "expected '<' in sdy.mesh");
    skip_ws();
    if (!eat('[')) return err(i_, "expected '[' of the mesh axes");
    while (true) {
      skip_ws();
      if (eat(']')) break;
      if (peek() != '"') return err(i_, "expected a quoted mesh axis name");
      MeshAxis a;
      a.name = read_name();
      skip_ws();
      if (!eat('=')) return err(i_, "expected '=' after a mesh axis name");
      skip_ws();
      size_t j = i_;
      while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
      if (j == i_) return err(i_, "expected the size of mesh axis '" + a.name + "'");
      a.size = std::stoll(std::string(s_.substr(j, i_ - j)));
      mesh.axes.push_back(a);
      skip_ws();
      eat(',');
    }
    (void)at;
    skip_op_text();  // device_ids, '>' and the stablehlo.mesh dictionary
    m_.meshes.meshes.push_back(std::move(mesh));
    return Error{};
  }

  Error parse_func() {
    Func f;
    skip_ws();
    if (eat_word("public")) f.is_public = true;
    else if (eat_word("private")) f.is_public = false;
    else f.is_public = true;
    skip_ws();
    if (!eat('@')) return err(i_, "expected '@name' after func.func");
    f.name = read_name();
    scopes_.assign(1, {});
    skip_ws();
    if (!eat('(')) return err(i_, "expected '(' of the argument list of @" + f.name);
    while (true) {
      skip_ws();
      if (eat(')')) break;
      if (!eat('%')) return err(i_, "expected '%argN' in the argument list of @" + f.name);
      int id = -1;
      if (auto e = typed_argument("argument", &id); !e.message.empty()) return e;
      f.args.push_back(id);
      skip_ws();
      if (peek() == '{') {
        std::string_view dict = balanced(s_, i_, '{', '}');
        auto sh = sharding_in(dict, i_);
        if (!sh.ok()) return sh.error();
        m_.values[static_cast<size_t>(id)].sharding = *sh;
        i_ += dict.size();
      }
      skip_ws();
      if (eat(')')) break;
      if (!eat(',')) return err(i_, "expected ',' or ')' in the argument list of @" + f.name);
    }
    skip_ws();
    if (s_.substr(i_, 2) == "->") {
      i_ += 2;
      skip_ws();
      bool paren = eat('(');
      while (true) {
        skip_ws();
        if (paren && eat(')')) break;
        size_t tpos = i_;
        Result<TensorType> t = parse_tensor_type(read_type());
        if (!t.ok()) return err(tpos, t.error().message);
        f.result_types.push_back(*t);
        f.result_shardings.emplace_back();
        skip_spaces();
        if (peek() == '{' && !opens_region(i_)) {
          std::string_view dict = balanced(s_, i_, '{', '}');
          auto sh = sharding_in(dict, i_);
          if (!sh.ok()) return sh.error();
          f.result_shardings.back() = *sh;
          i_ += dict.size();
        }
        skip_spaces();
        if (!paren) break;
        if (eat(')')) break;
        if (!eat(',')) return err(i_, "expected ',' or ')' in the results of @" + f.name);
      }
    }
    skip_ws();
    if (eat_word("attributes")) {
      skip_ws();
      i_ += balanced(s_, i_, '{', '}').size();
      skip_ws();
    }
    if (!eat('{')) return err(i_, "expected '{' to open the body of @" + f.name);
    if (auto e = parse_block_ops(&f.body); !e.message.empty()) return e;
    m_.funcs.push_back(std::move(f));
    return Error{};
  }

  // Ops until the closing '}' (consumed). Handles ^bb labels.
  // After a '%': "name: tensor<...>" defines a new value in scope and sets *id. `what` names
  // it in errors ("argument", "block argument"); an empty message means success.
  Error typed_argument(const std::string& what, int* id) {
    std::string name = "%" + read_name();
    skip_ws();
    if (!eat(':')) return err(i_, "expected ':' after " + what + " " + name);
    skip_ws();
    size_t tpos = i_;
    Result<TensorType> t = parse_tensor_type(read_type());
    if (!t.ok()) return err(tpos, t.error().message);
    *id = new_value(name, *t);
    define(name, *id);
    return Error{};
  }

  Error parse_block_ops(Block* block) {
    while (true) {
      skip_ws();
      if (i_ >= s_.size()) return err(i_, "unexpected end of text inside a region");
      if (eat('}')) return Error{};
      if (peek() == '^') {
        // ^bb0(%a: type, ...):
        while (i_ < s_.size() && s_[i_] != '(' && s_[i_] != ':') ++i_;
        if (eat('(')) {
          while (true) {
            skip_ws();
            if (eat(')')) break;
            if (!eat('%')) return err(i_, "expected a block argument");
            int id = -1;
            if (auto e = typed_argument("block argument", &id); !e.message.empty()) return e;
            block->args.push_back(id);
            skip_ws();
            eat(',');
          }
        }
        skip_ws();
        eat(':');
        continue;
      }
      Op op;
      if (auto e = parse_op(&op); !e.message.empty()) return e;
      block->ops.push_back(std::move(op));
    }
  }

  struct Def {
    std::string name;
    std::string type;  // empty for while's `%it = %init` (typed later)
  };

  // Opens a region at s_[i_] == '{' with the given block arguments.
  Error parse_region(Op* op, const std::vector<std::pair<std::string, TensorType>>& args) {
    ++i_;  // '{'
    scopes_.emplace_back();
    Block b;
    for (const auto& [name, type] : args) {
      int id = new_value(name, type);
      define(name, id);
      b.args.push_back(id);
    }
    Error e = parse_block_ops(&b);
    scopes_.pop_back();
    op->regions.push_back(std::move(b));
    return e;
  }

  // Region arguments declared in the header since the last region.
  Result<std::vector<std::pair<std::string, TensorType>>> region_args(
      const std::vector<Def>& defs, std::string_view header, size_t pos) {
    std::vector<std::pair<std::string, TensorType>> out;
    bool untyped = !defs.empty() && defs.front().type.empty();
    std::vector<std::string_view> types;
    if (untyped) {
      // stablehlo.while(%it = %x, ...) : T1, T2 -- types after the last " : ".
      size_t k = header.rfind(" : ");
      if (k == std::string_view::npos) return err(pos, "expected the types of the while arguments");
      std::string_view list = header.substr(k + 3);
      if (size_t c = list.find(" cond"); c != std::string_view::npos) list = list.substr(0, c);
      types = split_top(list);
      if (types.size() < defs.size()) return err(pos, "fewer types than while arguments");
    }
    for (size_t d = 0; d < defs.size(); ++d) {
      std::string_view tt = untyped ? trim(types[d]) : std::string_view(defs[d].type);
      Result<TensorType> t = parse_tensor_type(tt);
      if (!t.ok()) return err(pos, t.error().message);
      out.emplace_back(defs[d].name, *t);
    }
    return out;
  }

  Error parse_op(Op* op) {
    size_t start = i_;
    std::tie(op->line, op->column) = line_col(start);
    std::vector<std::pair<std::string, int>> results;
    if (peek() == '%') {
      while (true) {
        skip_spaces();
        if (!eat('%')) return err(i_, "expected a result name");
        std::string name = "%" + read_name();
        int count = 1;
        if (eat(':')) {
          size_t j = i_;
          while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) ++i_;
          if (j == i_) return err(i_, "expected a result count after '" + name + ":'");
          count = std::stoi(std::string(s_.substr(j, i_ - j)));
        }
        results.emplace_back(name, count);
        skip_spaces();
        if (eat(',')) continue;
        if (eat('=')) break;
        return err(i_, "expected '=' after the results of an op");
      }
      skip_spaces();
    }
    size_t name_pos = i_;
    op->name = read_name();
    if (op->name.empty()) return err(name_pos, "expected an op name");
    if (op->name == "return") op->name = "func.return";
    if (op->name == "call") op->name = "func.call";

    std::string header;
    std::vector<Def> defs, while_defs;
    std::vector<std::string> operand_refs;
    int depth = 0;
    while (i_ < s_.size()) {
      char c = s_[i_];
      if (c == '"') {
        size_t k = s_.find('"', i_ + 1);
        while (k != std::string_view::npos && s_[k - 1] == '\\') k = s_.find('"', k + 1);
        if (k == std::string_view::npos) return err(i_, "unterminated string");
        header.append(s_.substr(i_, k - i_ + 1));
        i_ = k + 1;
        continue;
      }
      if (c == '-' && i_ + 1 < s_.size() && s_[i_ + 1] == '>') {
        header += "->";
        i_ += 2;
        continue;
      }
      if (c == '%') {
        size_t at = i_;
        ++i_;
        std::string ref = "%";
        while (i_ < s_.size() && (is_name_char(s_[i_]) || s_[i_] == '#')) ref += s_[i_++];
        header += ref;
        if (peek() == ':') {
          // `%a: type` declares a region argument.
          ++i_;
          header += ':';
          skip_spaces();
          std::string_view t = read_type();
          header.append(t);
          defs.push_back({ref, std::string(t)});
        } else if (s_.substr(i_, 3) == " = ") {
          defs.push_back({ref, ""});
          while_defs.push_back(defs.back());
        } else {
          if (lookup(ref) < 0) return err(at, "use of undefined value " + ref);
          op->operands.push_back(lookup(ref));
        }
        continue;
      }
      if (c == '{' || c == '(' || c == '[' || c == '<') {
        if (c == '{') {
          size_t k = i_ + 1;
          while (k < s_.size() && (s_[k] == ' ' || s_[k] == '\t')) ++k;
          if (k >= s_.size() || s_[k] == '\n') {
            auto args = region_args(while_defs.empty() ? defs : while_defs, header, i_);
            if (!args.ok()) return args.error();
            if (auto e = parse_region(op, *args); !e.message.empty()) return e;
            header += "{R}";
            defs.clear();
            continue;
          }
        }
        ++depth;
      } else if (c == '}' || c == ')' || c == ']' || c == '>') {
        if (depth == 0) break;  // belongs to an enclosing construct
        --depth;
      } else if (c == '\n' && depth == 0) {
        size_t k = i_ + 1;
        while (k < s_.size() && std::isspace(static_cast<unsigned char>(s_[k]))) ++k;
        std::string_view next = s_.substr(k, 8);
        if (next.starts_with("cond") || next.starts_with("do ") || next.starts_with("do{") ||
            next.starts_with("reducer")) {
          header += ' ';
          i_ = k;
          continue;
        }
        break;
      }
      header += c;
      ++i_;
    }
    if (depth != 0) return err(start, "unbalanced brackets in op " + op->name);

    // Callee / custom-call target.
    {
      std::string_view h = header;
      size_t at = h.find('@');
      if ((op->name == "func.call" || op->name == "stablehlo.custom_call") && at != std::string_view::npos &&
          trim(h.substr(0, at)).empty()) {
        size_t j = at + 1;
        while (j < h.size() && (is_name_char(h[j]))) ++j;
        op->callee = std::string(h.substr(at + 1, j - at - 1));
      } else if (size_t k = h.find("call_target_name = \""); k != std::string_view::npos) {
        size_t a = k + 20;
        op->callee = std::string(h.substr(a, h.find('"', a) - a));
      } else if (size_t k2 = h.find("callee = @"); k2 != std::string_view::npos) {
        size_t j = k2 + 10;
        while (j < h.size() && is_name_char(h[j])) ++j;
        op->callee = std::string(h.substr(k2 + 10, j - k2 - 10));
      }
    }

    // Result types from the trailing signature.
    int nresults = 0;
    for (auto& r : results) nresults += r.second;
    std::vector<TensorType> rtypes;
    if (nresults > 0) {
      size_t k = std::string::npos;
      {
        int d = 0;
        for (size_t j = 0; j + 2 < header.size(); ++j) {
          char c = header[j];
          if (c == '"') {
            size_t q = header.find('"', j + 1);
            while (q != std::string::npos && header[q - 1] == '\\') q = header.find('"', q + 1);
            if (q == std::string::npos) break;
            j = q;
            continue;
          }
          if (c == '-' && header[j + 1] == '>') {
            ++j;
            continue;
          }
          if (c == '<' || c == '(' || c == '[' || c == '{') ++d;
          if (c == '>' || c == ')' || c == ']' || c == '}') --d;
          if (d == 0 && c == ' ' && header[j + 1] == ':' && header[j + 2] == ' ') k = j;
        }
      }
      if (k == std::string::npos) return err(start, "op " + op->name + " has no type signature");
      std::string_view sig = trim(std::string_view(header).substr(k + 3));
      std::string_view res = sig;
      bool arrow_free = true;
      {
        // The result part of `(A, B) -> C` or `A -> C` (an arrow at depth 0).
        int d = 0;
        size_t arrow = std::string_view::npos;
        for (size_t j = 0; j + 1 < sig.size(); ++j) {
          char c = sig[j];
          if (c == '-' && sig[j + 1] == '>') {
            if (d == 0) arrow = j;
            ++j;
            continue;
          }
          if (c == '<' || c == '(' || c == '[' || c == '{') ++d;
          if (c == '>' || c == ')' || c == ']' || c == '}') --d;
        }
        if (arrow != std::string_view::npos) res = trim(sig.substr(arrow + 2));
        arrow_free = arrow == std::string_view::npos;
      }
      if (res.front() == '(' && res.back() == ')') res = res.substr(1, res.size() - 2);
      // A `{R}` placeholder can trail a while signature: drop anything after the types.
      if (size_t r = res.find("{R}"); r != std::string_view::npos) res = trim(res.substr(0, r));
      if (size_t r = res.find(" cond"); r != std::string_view::npos) res = trim(res.substr(0, r));
      for (std::string_view t : split_top(res)) {
        Result<TensorType> tt = parse_tensor_type(trim(t));
        if (!tt.ok()) return err(start, "in the signature of " + op->name + ": " + tt.error().message);
        rtypes.push_back(*tt);
      }
      // `select %c, %a, %b : tensor<i1..>, tensor<f32..>`: the trailing types are the results.
      if (static_cast<int>(rtypes.size()) > nresults && arrow_free)
        rtypes.erase(rtypes.begin(), rtypes.end() - nresults);
      if (static_cast<int>(rtypes.size()) == 1 && nresults > 1) rtypes.assign(static_cast<size_t>(nresults), rtypes[0]);
      if (static_cast<int>(rtypes.size()) != nresults)
        return err(start, op->name + " has " + std::to_string(nresults) + " results but " +
                              std::to_string(rtypes.size()) + " result types");
    }
    size_t t = 0;
    for (auto& [name, count] : results) {
      int first = -1;
      for (int k = 0; k < count; ++k) {
        std::string vname = count == 1 ? name : name + "#" + std::to_string(k);
        int id = new_value(vname, rtypes[t++]);
        if (first < 0) first = id;
        op->results.push_back(id);
      }
      define(name, first, count);
    }

    // Shardings the text states for the results.
    std::string_view h = header;
    if (op->name.starts_with("sdy.") && h.find("out_sharding=<") != std::string_view::npos &&
        !op->results.empty()) {
      // Explicit-sharding collectives (sdy.all_gather, sdy.all_slice, sdy.all_to_all, ...)
      // state the sharding they produce.
      size_t k = h.find("out_sharding=<") + 13;
      Result<TensorSharding> sh = parse_sdy_sharding(balanced(h, k, '<', '>'));
      if (!sh.ok()) return err(start, sh.error().message);
      m_.shardy = true;
      m_.values[static_cast<size_t>(op->results[0])].sharding = *sh;
    } else if (op->name == "sdy.sharding_constraint" || op->name == "sdy.reshard") {
      size_t k = h.find('<');
      if (k == std::string_view::npos) return err(start, op->name + " without a sharding");
      Result<TensorSharding> sh = parse_sdy_sharding(balanced(h, k, '<', '>'));
      if (!sh.ok()) return err(start, sh.error().message);
      m_.shardy = true;
      if (!op->results.empty()) m_.values[static_cast<size_t>(op->results[0])].sharding = *sh;
    } else if (op->name == "sdy.manual_computation" || h.find("sdy.sharding_per_value") != std::string_view::npos) {
      size_t k = op->name == "sdy.manual_computation" ? h.find("out_shardings=[")
                                                       : h.find("sdy.sharding_per_value<[");
      if (k != std::string_view::npos) {
        size_t open = h.find('[', k);
        std::string_view list = balanced(h, open, '[', ']');
        std::vector<std::string_view> items = split_top(list.substr(1, list.size() - 2));
        for (size_t r = 0; r < items.size() && r < op->results.size(); ++r) {
          Result<TensorSharding> sh = parse_sdy_sharding(trim(items[r]));
          if (!sh.ok()) return err(start, sh.error().message);
          m_.values[static_cast<size_t>(op->results[r])].sharding = *sh;
        }
      }
    } else if (h.find("mhlo.sharding = \"") != std::string_view::npos && op->results.size() == 1) {
      auto sh = sharding_in(h, start);
      if (!sh.ok()) return sh.error();
      m_.values[static_cast<size_t>(op->results[0])].sharding = *sh;
    }
    op->attrs = std::move(header);
    return Error{};
  }

  std::string_view s_;
  size_t i_ = 0;
  std::vector<size_t> line_starts_;
  Module m_;
  Mesh gspmd_mesh_;
  std::vector<std::unordered_map<std::string, std::pair<int, int>>> scopes_;
};

}  // namespace

Result<Module> parse_module(std::string_view text) { return Parser(text).run(); }

}  // namespace aoizora::shlo
