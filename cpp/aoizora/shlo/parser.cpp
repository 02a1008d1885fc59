#include "aoizora/shlo/parser.h"

#include <cctype>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "aoizora/shlo/mlir_cursor.h"

namespace aoizora::shlo {
namespace {

// A name declared in an op's text before one of its regions: `%a: type` (a region argument)
// or `%it = %init` (a while argument, typed by the signature after it).
struct Def {
  std::string name;
  std::string type;  // empty for while's `%it = %init`
};

// What an op's text declared so far for the region that comes next.
struct RegionDefs {
  std::vector<Def> defs;        // since the last region
  std::vector<Def> while_defs;  // every `%it = %init` of the op
};

// `%0:2` on the left of an op: a name and how many values it stands for.
struct ResultGroup {
  std::string name;
  int count = 1;
};

// The most values one `%0:N` may stand for. One signature type may stand for each of them,
// so N sizes an allocation: text that claims more is refused, not allocated.
constexpr int64_t kMaxResultCount = 1 << 16;
// The largest size of a mesh axis: a device count.
constexpr int64_t kMaxMeshAxisSize = std::numeric_limits<int32_t>::max();

// Decimal digits as a number of at most `max`; nullopt when they say more.
std::optional<int64_t> number_at_most(std::string_view digits, int64_t max) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size() || v > max) return std::nullopt;
  return v;
}

// The name after `at` in `text` (name characters only).
std::string name_at(std::string_view text, size_t at) {
  size_t j = at;
  while (j < text.size() && is_mlir_name_char(text[j])) ++j;
  return std::string(text.substr(at, j - at));
}

// The callee of a func.call (`call @f(...)`, `callee = @f`) or a custom call's target
// (`custom_call @t(...)`, `call_target_name = "t"`); empty when the text names none.
std::string callee_in(const std::string& op_name, std::string_view header) {
  const size_t at = header.find('@');
  if ((op_name == "func.call" || op_name == "stablehlo.custom_call") && at != std::string_view::npos &&
      trim(header.substr(0, at)).empty())
    return name_at(header, at + 1);
  if (size_t k = header.find("call_target_name = \""); k != std::string_view::npos) {
    const size_t a = k + 20;
    return std::string(header.substr(a, header.find('"', a) - a));
  }
  if (size_t k = header.find("callee = @"); k != std::string_view::npos) return name_at(header, k + 10);
  return {};
}

// The result part of a signature: what follows a top-level `->` (`(A, B) -> C`), or all of
// it (`A, B`); without surrounding parentheses, nor a while's trailing `{R}` or ` cond`.
std::string_view result_part(std::string_view sig, bool* arrow_free) {
  std::string_view res = sig;
  const size_t arrow = rfind_top_level(sig, "->");
  if (arrow != std::string_view::npos) res = trim(sig.substr(arrow + 2));
  *arrow_free = arrow == std::string_view::npos;
  if (!res.empty() && res.front() == '(' && res.back() == ')') res = res.substr(1, res.size() - 2);
  if (size_t r = res.find("{R}"); r != std::string_view::npos) res = trim(res.substr(0, r));
  if (size_t r = res.find(" cond"); r != std::string_view::npos) res = trim(res.substr(0, r));
  // A reduce's `reducer(%a: T, ...)` continues the op after its signature.
  if (size_t r = res.find(" reducer("); r != std::string_view::npos) res = trim(res.substr(0, r));
  return res;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : c_(text) {}

  Result<Module> run() {
    c_.skip_ws();
    // Attribute aliases (#loc = ...) may precede the module.
    while (c_.peek() == '#') {
      c_.skip_line();
      c_.skip_ws();
    }
    if (!c_.eat_word("module")) return err(c_.pos(), "expected 'module'");
    c_.skip_ws();
    if (c_.eat('@')) m_.name = c_.read_name();
    c_.skip_ws();
    if (c_.eat_word("attributes")) {
      c_.skip_ws();
      if (c_.peek() != '{') return err(c_.pos(), "expected '{' after 'attributes'");
      std::string_view attrs = c_.read_group();
      if (auto n = attr_int(attrs, "mhlo.num_partitions")) m_.num_partitions = *n;
      if (auto n = attr_int(attrs, "mhlo.num_replicas")) m_.num_replicas = *n;
    }
    c_.skip_ws();
    if (!c_.eat('{')) return err(c_.pos(), "expected '{' to open the module body");
    RETURN_IF_ERROR(parse_module_items());
    if (m_.funcs.empty()) return err(c_.pos(), "the module has no func.func");
    if (!gspmd_mesh_.axes.empty()) m_.meshes.meshes.push_back(gspmd_mesh_);
    return std::move(m_);
  }

 private:
  Error err(size_t pos, std::string message) const { return c_.error_at(pos, std::move(message)); }

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
      Result<TensorSharding> t = parse_sdy_sharding(group_at(dict, k + 13));
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
  // Meshes and functions up to the module's closing '}' (consumed); other items skipped.
  Status parse_module_items() {
    while (true) {
      c_.skip_ws();
      if (c_.eof()) return err(c_.pos(), "unexpected end of text: the module body is not closed");
      if (c_.eat('}')) return Status::success();
      if (c_.eat_word("sdy.mesh")) {
        RETURN_IF_ERROR(parse_mesh());
      } else if (c_.eat_word("func.func")) {
        RETURN_IF_ERROR(parse_func());
      } else {
        c_.skip_item();
      }
    }
  }

  Status parse_mesh() {
    c_.skip_ws();
    if (!c_.eat('@')) return err(c_.pos(), "expected '@name' after sdy.mesh");
    Mesh mesh;
    mesh.name = c_.read_name();
    c_.skip_ws();
    if (!c_.eat('=')) return err(c_.pos(), "expected '=' in sdy.mesh");
    c_.skip_ws();
    if (!c_.eat('<')) return err(c_.pos(), "expected '<' in sdy.mesh");
    c_.skip_ws();
    if (!c_.eat('[')) return err(c_.pos(), "expected '[' of the mesh axes");
    while (true) {
      c_.skip_ws();
      if (c_.eat(']')) break;
      if (c_.peek() != '"') return err(c_.pos(), "expected a quoted mesh axis name");
      MeshAxis a;
      a.name = c_.read_name();
      c_.skip_ws();
      if (!c_.eat('=')) return err(c_.pos(), "expected '=' after a mesh axis name");
      c_.skip_ws();
      std::string_view digits = c_.read_digits();
      if (digits.empty()) return err(c_.pos(), "expected the size of mesh axis '" + a.name + "'");
      const std::optional<int64_t> size = number_at_most(digits, kMaxMeshAxisSize);
      if (!size)
        return err(c_.pos() - digits.size(), "mesh axis '" + a.name + "' of size " + std::string(digits) +
                                                 ": more than " + std::to_string(kMaxMeshAxisSize) + " devices");
      a.size = *size;
      mesh.axes.push_back(a);
      c_.skip_ws();
      c_.eat(',');
    }
    c_.skip_item();  // device_ids, '>' and the stablehlo.mesh dictionary
    m_.meshes.meshes.push_back(std::move(mesh));
    return Status::success();
  }

  Status parse_func() {
    Func f;
    c_.skip_ws();
    if (c_.eat_word("public")) f.is_public = true;
    else if (c_.eat_word("private")) f.is_public = false;
    else f.is_public = true;
    c_.skip_ws();
    if (!c_.eat('@')) return err(c_.pos(), "expected '@name' after func.func");
    f.name = c_.read_name();
    scopes_.assign(1, {});
    RETURN_IF_ERROR(parse_func_arguments(&f));
    RETURN_IF_ERROR(parse_func_results(&f));
    c_.skip_ws();
    if (c_.eat_word("attributes")) {
      c_.skip_ws();
      c_.read_group();
      c_.skip_ws();
    }
    if (!c_.eat('{')) return err(c_.pos(), "expected '{' to open the body of @" + f.name);
    RETURN_IF_ERROR(parse_block_ops(&f.body));
    m_.funcs.push_back(std::move(f));
    return Status::success();
  }

  // `(%arg0: type {dict}, ...)`: each argument a value, its sharding from the dictionary.
  Status parse_func_arguments(Func* f) {
    c_.skip_ws();
    if (!c_.eat('(')) return err(c_.pos(), "expected '(' of the argument list of @" + f->name);
    while (true) {
      c_.skip_ws();
      if (c_.eat(')')) return Status::success();
      if (!c_.eat('%')) return err(c_.pos(), "expected '%argN' in the argument list of @" + f->name);
      int id = -1;
      RETURN_IF_ERROR(typed_argument("argument", &id));
      f->args.push_back(id);
      c_.skip_ws();
      if (c_.peek() == '{') {
        const size_t at = c_.pos();
        ASSIGN_OR_RETURN(auto sh, sharding_in(c_.read_group(), at));
        m_.values[static_cast<size_t>(id)].sharding = sh;
      }
      c_.skip_ws();
      if (c_.eat(')')) return Status::success();
      if (!c_.eat(',')) return err(c_.pos(), "expected ',' or ')' in the argument list of @" + f->name);
    }
  }

  // `-> type {dict}` or `-> (type {dict}, ...)`, if present: result types and shardings.
  Status parse_func_results(Func* f) {
    c_.skip_ws();
    if (!c_.starts_with("->")) return Status::success();
    c_.advance(2);
    c_.skip_ws();
    const bool paren = c_.eat('(');
    while (true) {
      c_.skip_ws();
      if (paren && c_.eat(')')) return Status::success();
      const size_t tpos = c_.pos();
      Result<TensorType> t = parse_tensor_type(c_.read_type());
      if (!t.ok()) return err(tpos, t.error().message);
      f->result_types.push_back(*t);
      f->result_shardings.emplace_back();
      c_.skip_blanks();
      if (c_.peek() == '{' && !c_.brace_ends_line(c_.pos(), " \t\r")) {
        const size_t at = c_.pos();
        ASSIGN_OR_RETURN(auto sh, sharding_in(c_.read_group(), at));
        f->result_shardings.back() = sh;
      }
      c_.skip_blanks();
      if (!paren) return Status::success();
      if (c_.eat(')')) return Status::success();
      if (!c_.eat(',')) return err(c_.pos(), "expected ',' or ')' in the results of @" + f->name);
    }
  }

  // After a '%': "name: tensor<...>" defines a new value in scope and sets *id. `what` names
  // it in errors ("argument", "block argument"); an empty message means success.
  Status typed_argument(const std::string& what, int* id) {
    std::string name = "%" + c_.read_name();
    c_.skip_ws();
    if (!c_.eat(':')) return err(c_.pos(), "expected ':' after " + what + " " + name);
    c_.skip_ws();
    const size_t tpos = c_.pos();
    Result<TensorType> t = parse_tensor_type(c_.read_type());
    if (!t.ok()) return err(tpos, t.error().message);
    *id = new_value(name, *t);
    define(name, *id);
    return Status::success();
  }

  // ---- blocks and regions ----
  // Ops until the closing '}' (consumed). Handles ^bb labels.
  Status parse_block_ops(Block* block) {
    while (true) {
      c_.skip_ws();
      if (c_.eof()) return err(c_.pos(), "unexpected end of text inside a region");
      if (c_.eat('}')) return Status::success();
      if (c_.peek() == '^') {
        RETURN_IF_ERROR(parse_block_label(block));
        continue;
      }
      Op op;
      RETURN_IF_ERROR(parse_op(&op));
      block->ops.push_back(std::move(op));
    }
  }

  // `^bb0(%a: type, ...):`: the arguments become the block's.
  Status parse_block_label(Block* block) {
    while (!c_.eof() && c_.peek() != '(' && c_.peek() != ':') c_.advance();
    if (c_.eat('(')) {
      while (true) {
        c_.skip_ws();
        if (c_.eat(')')) break;
        if (!c_.eat('%')) return err(c_.pos(), "expected a block argument");
        int id = -1;
        RETURN_IF_ERROR(typed_argument("block argument", &id));
        block->args.push_back(id);
        c_.skip_ws();
        c_.eat(',');
      }
    }
    c_.skip_ws();
    c_.eat(':');
    return Status::success();
  }

  // Opens a region at the cursor's '{' with the given block arguments.
  Status parse_region(Op* op, const std::vector<std::pair<std::string, TensorType>>& args) {
    c_.advance();  // '{'
    scopes_.emplace_back();
    Block b;
    for (const auto& [name, type] : args) {
      int id = new_value(name, type);
      define(name, id);
      b.args.push_back(id);
    }
    Status e = parse_block_ops(&b);
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
      types = split_top_level(list);
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

  // ---- ops ----
  // One op: `%r, %s:2 = name operands {attrs} regions : signature`. Reads the result names,
  // the name, the rest of the text (operands, regions), then defines the results with the
  // signature's types and the shardings the text states for them.
  Status parse_op(Op* op) {
    const size_t start = c_.pos();
    std::tie(op->line, op->column) = c_.line_col(start);
    std::vector<ResultGroup> results;
    RETURN_IF_ERROR(parse_result_names(&results));
    RETURN_IF_ERROR(parse_op_name(op));
    std::string header;
    RETURN_IF_ERROR(scan_header(op, start, &header));
    op->callee = callee_in(op->name, header);
    int nresults = 0;
    for (const ResultGroup& r : results) nresults += r.count;
    ASSIGN_OR_RETURN(std::vector<TensorType> types, result_types(op->name, header, nresults, start));
    define_results(op, results, types);
    RETURN_IF_ERROR(read_result_shardings(op, header, start));
    op->attrs = std::move(header);
    return Status::success();
  }

  // `%a, %b:2 =` before the op name, if any.
  Status parse_result_names(std::vector<ResultGroup>* results) {
    if (c_.peek() != '%') return Status::success();
    while (true) {
      c_.skip_blanks();
      if (!c_.eat('%')) return err(c_.pos(), "expected a result name");
      ResultGroup r{"%" + c_.read_name(), 1};
      if (c_.eat(':')) {
        std::string_view digits = c_.read_digits();
        if (digits.empty()) return err(c_.pos(), "expected a result count after '" + r.name + ":'");
        const std::optional<int64_t> count = number_at_most(digits, kMaxResultCount);
        if (!count)
          return err(c_.pos() - digits.size(), "result count " + std::string(digits) + " of " + r.name +
                                                   ": more than " + std::to_string(kMaxResultCount));
        r.count = static_cast<int>(*count);
      }
      results->push_back(std::move(r));
      c_.skip_blanks();
      if (c_.eat(',')) continue;
      if (c_.eat('=')) break;
      return err(c_.pos(), "expected '=' after the results of an op");
    }
    c_.skip_blanks();
    return Status::success();
  }

  // The op name, pretty (`stablehlo.add`, `return`) or generic (`"stablehlo.case"`).
  Status parse_op_name(Op* op) {
    const size_t name_pos = c_.pos();
    op->name = c_.read_name();
    if (op->name.empty()) return err(name_pos, "expected an op name");
    if (op->name == "return") op->name = "func.return";
    if (op->name == "call") op->name = "func.call";
    return Status::success();
  }

  // The op's text after its name, into *header, up to a newline or a closing bracket outside
  // its own brackets: operands are looked up, regions parsed (each leaves "{R}" in the
  // header), and a while's `cond`/`do` or a reduce's `reducer` on the next line continues it.
  Status scan_header(Op* op, size_t start, std::string* header) {
    const std::string_view s = c_.text();
    RegionDefs defs;
    int depth = 0;
    while (!c_.eof()) {
      const size_t at = c_.pos();
      const char c = s[at];
      const Piece piece = piece_at(s, at);
      if (piece.kind == PieceKind::kUnterminatedString) return err(at, "unterminated string");
      if (piece.kind == PieceKind::kString || piece.kind == PieceKind::kArrow) {
        header->append(s.substr(at, piece.end - at));
        c_.set_pos(piece.end);
        continue;
      }
      if (c == '%') {
        RETURN_IF_ERROR(scan_value_ref(op, header, &defs));
        continue;
      }
      if (c == '{' && c_.brace_ends_line(at, " \t")) {
        RETURN_IF_ERROR(open_region(op, defs, *header));
        *header += "{R}";
        defs.defs.clear();
        continue;
      }
      if (piece.kind == PieceKind::kOpen) {
        ++depth;
      } else if (piece.kind == PieceKind::kClose) {
        if (depth == 0) break;  // belongs to an enclosing construct
        --depth;
      } else if (c == '\n' && depth == 0) {
        if (!continues_on_next_line()) break;
        *header += ' ';
        continue;
      }
      *header += c;
      c_.advance();
    }
    if (depth != 0) return err(start, "unbalanced brackets in op " + op->name);
    return Status::success();
  }

  // A `%name` in the op text: `%a: type` declares a region argument, `%it = ` a while
  // argument (typed later), anything else is an operand that must be defined.
  Status scan_value_ref(Op* op, std::string* header, RegionDefs* defs) {
    const size_t at = c_.pos();
    c_.advance();  // '%'
    const std::string ref = "%" + std::string(c_.read_ref());
    *header += ref;
    if (c_.peek() == ':') {
      c_.advance();
      *header += ':';
      c_.skip_blanks();
      std::string_view t = c_.read_type();
      header->append(t);
      defs->defs.push_back({ref, std::string(t)});
    } else if (c_.starts_with(" = ")) {
      defs->defs.push_back({ref, ""});
      defs->while_defs.push_back(defs->defs.back());
    } else {
      const int id = lookup(ref);
      if (id < 0) return err(at, "use of undefined value " + ref);
      op->operands.push_back(id);
    }
    return Status::success();
  }

  // The region at the cursor's '{', with the arguments the header declared for it (a while's
  // arguments for each of its regions).
  Status open_region(Op* op, const RegionDefs& defs, std::string_view header) {
    ASSIGN_OR_RETURN(auto args, region_args(defs.while_defs.empty() ? defs.defs : defs.while_defs, header, c_.pos()));
    return parse_region(op, args);
  }

  // At a newline outside brackets: true, with the cursor on the next word, when the next line
  // goes on with the same op (`cond`, `do`, `reducer`).
  bool continues_on_next_line() {
    const std::string_view s = c_.text();
    size_t k = c_.pos() + 1;
    while (k < s.size() && std::isspace(static_cast<unsigned char>(s[k]))) ++k;
    std::string_view next = s.substr(k, 8);
    if (next.starts_with("cond") || next.starts_with("do ") || next.starts_with("do{") ||
        next.starts_with("reducer")) {
      c_.set_pos(k);
      return true;
    }
    return false;
  }

  // The types of the op's `n` results, from the signature after the header's last top-level
  // " : ". `select %c, %a, %b : T1, T2` lists operand types too: the trailing n are the
  // results; one type for several results stands for each.
  Result<std::vector<TensorType>> result_types(const std::string& name, std::string_view header, int n,
                                               size_t start) const {
    std::vector<TensorType> out;
    if (n == 0) return out;
    const size_t colon = rfind_top_level(header, " : ");
    if (colon == std::string_view::npos) return err(start, "op " + name + " has no type signature");
    bool arrow_free = true;
    for (std::string_view t : split_top_level(result_part(trim(header.substr(colon + 3)), &arrow_free))) {
      Result<TensorType> tt = parse_tensor_type(trim(t));
      if (!tt.ok()) return err(start, "in the signature of " + name + ": " + tt.error().message);
      out.push_back(*tt);
    }
    if (static_cast<int>(out.size()) > n && arrow_free) out.erase(out.begin(), out.end() - n);
    if (out.size() == 1 && n > 1) out.assign(static_cast<size_t>(n), out[0]);
    if (static_cast<int>(out.size()) != n)
      return err(start, name + " has " + std::to_string(n) + " results but " + std::to_string(out.size()) +
                            " result types");
    return out;
  }

  // A value per result (`%0:2` gives %0#0 and %0#1), in scope under the group's name.
  void define_results(Op* op, const std::vector<ResultGroup>& results, const std::vector<TensorType>& types) {
    size_t t = 0;
    for (const auto& [name, count] : results) {
      int first = -1;
      for (int k = 0; k < count; ++k) {
        std::string vname = count == 1 ? name : name + "#" + std::to_string(k);
        int id = new_value(vname, types[t++]);
        if (first < 0) first = id;
        op->results.push_back(id);
      }
      define(name, first, count);
    }
  }

  // ---- shardings the op text states for its results: four forms ----
  Status read_result_shardings(Op* op, std::string_view h, size_t start) {
    if (op->name.starts_with("sdy.") && h.find("out_sharding=<") != std::string_view::npos &&
        !op->results.empty())
      return read_out_sharding(op, h, start);
    if (op->name == "sdy.sharding_constraint" || op->name == "sdy.reshard")
      return read_constraint_sharding(op, h, start);
    if (op->name == "sdy.manual_computation" || h.find("sdy.sharding_per_value") != std::string_view::npos)
      return read_per_value_shardings(op, h, start);
    if (h.find("mhlo.sharding = \"") != std::string_view::npos && op->results.size() == 1)
      return read_gspmd_sharding(op, h, start);
    return Status::success();
  }

  // Explicit-sharding collectives (sdy.all_gather, sdy.all_slice, sdy.all_to_all, ...) state
  // the sharding they produce: `out_sharding=<@mesh, [...]>`.
  Status read_out_sharding(Op* op, std::string_view h, size_t start) {
    const size_t k = h.find("out_sharding=<") + 13;
    Result<TensorSharding> sh = parse_sdy_sharding(group_at(h, k));
    if (!sh.ok()) return err(start, sh.error().message);
    m_.shardy = true;
    m_.values[static_cast<size_t>(op->results[0])].sharding = *sh;
    return Status::success();
  }

  // `sdy.sharding_constraint %x <@mesh, [...]>` and `sdy.reshard`: the first `<...>`.
  Status read_constraint_sharding(Op* op, std::string_view h, size_t start) {
    const size_t k = h.find('<');
    if (k == std::string_view::npos) return err(start, op->name + " without a sharding");
    Result<TensorSharding> sh = parse_sdy_sharding(group_at(h, k));
    if (!sh.ok()) return err(start, sh.error().message);
    m_.shardy = true;
    if (!op->results.empty()) m_.values[static_cast<size_t>(op->results[0])].sharding = *sh;
    return Status::success();
  }

  // A manual computation's `out_shardings=[...]` or any op's `sdy.sharding_per_value<[...]>`:
  // one sharding per result, in order.
  Status read_per_value_shardings(Op* op, std::string_view h, size_t start) {
    const size_t k = op->name == "sdy.manual_computation" ? h.find("out_shardings=[")
                                                          : h.find("sdy.sharding_per_value<[");
    if (k == std::string_view::npos) return Status::success();
    std::string_view list = group_at(h, h.find('[', k));
    std::vector<std::string_view> items = split_top_level(list.substr(1, list.size() - 2));
    for (size_t r = 0; r < items.size() && r < op->results.size(); ++r) {
      Result<TensorSharding> sh = parse_sdy_sharding(trim(items[r]));
      if (!sh.ok()) return err(start, sh.error().message);
      m_.values[static_cast<size_t>(op->results[r])].sharding = *sh;
    }
    return Status::success();
  }

  // `mhlo.sharding = "{...}"` on a single-result op (GSPMD).
  Status read_gspmd_sharding(Op* op, std::string_view h, size_t start) {
    ASSIGN_OR_RETURN(auto sh, sharding_in(h, start));
    m_.values[static_cast<size_t>(op->results[0])].sharding = sh;
    return Status::success();
  }

  Cursor c_;
  Module m_;
  Mesh gspmd_mesh_;
  std::vector<std::unordered_map<std::string, std::pair<int, int>>> scopes_;
};

}  // namespace

// Text saved with CRLF line ends reads as its LF text: the parser's line rules (a region's
// '{' ends its line, an op ends at its newline) then see "\n" alone. Lines and columns are
// those of the original text.
Result<Module> parse_module(std::string_view text) {
  if (text.find("\r\n") == std::string_view::npos) return Parser(text).run();
  std::string lf;
  lf.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] != '\r' || i + 1 == text.size() || text[i + 1] != '\n') lf += text[i];
  return Parser(lf).run();
}

}  // namespace aoizora::shlo
