#include "aoizora/hlo/opcode_table.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "aoizora/hlo/hlo_lexer.h"

namespace aoizora::hlo {
namespace {

struct Row {
  std::string_view name;
  int operands;
  std::string_view attributes;  // the opcode's own, space-separated
  std::string_view required;
};

// Printed by fuzz/hlo_opcode_table.py from jaxlib 0.10.2's parser.
constexpr Row kOpcodes[] = {
    {"abs", 1, "", ""},
    {"acos", 1, "result_accuracy", ""},
    {"acosh", 1, "result_accuracy", ""},
    {"add", 2, "", ""},
    {"add-dependency", 2, "", ""},
    {"after-all", -1, "", ""},
    {"all-gather", -1, "channel_id constrain_layout dimensions replica_groups use_global_device_ids", "dimensions"},
    {"all-gather-done", 1, "", ""},
    {"all-gather-start", -1, "channel_id constrain_layout dimensions replica_groups use_global_device_ids", "dimensions"},
    {"all-reduce", -1, "channel_id constrain_layout mode replica_groups to_apply use_global_device_ids", "to_apply"},
    {"all-reduce-done", 1, "", ""},
    {"all-reduce-start", -1, "channel_id constrain_layout mode replica_groups to_apply use_global_device_ids", "to_apply"},
    {"all-to-all", -1, "channel_id constrain_layout dimensions replica_groups", ""},
    {"and", 2, "", ""},
    {"asin", 1, "result_accuracy", ""},
    {"asinh", 1, "result_accuracy", ""},
    {"async-done", -1, "async_execution_thread calls", ""},
    {"async-start", -1, "async_execution_thread calls output_to_operand_aliasing", "calls"},
    {"async-update", -1, "async_execution_thread calls", ""},
    {"atan2", 2, "", ""},
    {"atanh", 1, "result_accuracy", ""},
    {"batch-norm-grad", 5, "epsilon feature_index", "epsilon"},
    {"batch-norm-inference", 5, "epsilon feature_index", "epsilon"},
    {"batch-norm-training", 3, "epsilon feature_index", "epsilon"},
    {"bitcast", 1, "", ""},
    {"bitcast-convert", 1, "", ""},
    {"broadcast", 1, "dimensions", "dimensions"},
    {"call", -1, "is_composite to_apply", "to_apply"},
    {"cbrt", 1, "result_accuracy", ""},
    {"ceil", 1, "", ""},
    {"cholesky", 1, "lower", ""},
    {"clamp", 3, "", ""},
    {"count-leading-zeros", 1, "", ""},
    {"collective-broadcast", -1, "channel_id replica_groups", ""},
    {"collective-permute", -1, "channel_id slice_sizes source_target_pairs", "source_target_pairs"},
    {"collective-permute-done", 1, "", ""},
    {"collective-permute-start", -1, "channel_id slice_sizes source_target_pairs", "source_target_pairs"},
    {"compare", 2, "direction type", "direction"},
    {"complex", 2, "", ""},
    {"concatenate", -1, "dimensions", "dimensions"},
    {"conditional", -1, "branch_computations false_computation true_computation", ""},
    {"constant", -1, "", ""},
    {"convert", 1, "", ""},
    {"convolution", 2, "batch_group_count convolution_kind dim_labels feature_group_count operand_precision sparsity_config window", "dim_labels"},
    {"copy", 1, "", ""},
    {"copy-done", 1, "", ""},
    {"copy-start", 1, "cross_program_prefetch_index", ""},
    {"cosine", 1, "result_accuracy", ""},
    {"cosh", 1, "result_accuracy", ""},
    {"custom-call", -1, "api_version batch_group_count called_computations custom_call_has_side_effect custom_call_target dim_labels feature_group_count literal operand_layout_constraints operand_precision output_to_operand_aliasing padding_type schedule to_apply window", "custom_call_target"},
    {"divide", 2, "", ""},
    {"domain", 1, "domain", "domain"},
    {"dot", -1, "algorithm lhs_batch_dims lhs_contracting_dims operand_precision rhs_batch_dims rhs_contracting_dims", ""},
    {"dynamic-reshape", -1, "", ""},
    {"dynamic-slice", -1, "dynamic_slice_sizes", "dynamic_slice_sizes"},
    {"dynamic-update-slice", -1, "", ""},
    {"erf", 1, "result_accuracy", ""},
    {"exponential", 1, "result_accuracy", ""},
    {"exponential-minus-one", 1, "result_accuracy", ""},
    {"fft", 1, "fft_length fft_type", "fft_length"},
    {"floor", 1, "", ""},
    {"fusion", -1, "calls kind output_to_operand_aliasing", "calls"},
    {"gather", 2, "collapsed_slice_dims index_vector_dim indices_are_sorted offset_dims operand_batching_dims slice_sizes start_index_map start_indices_batching_dims", "collapsed_slice_dims"},
    {"get-dimension-size", 1, "dimensions", "dimensions"},
    {"get-tuple-element", 1, "index", "index"},
    {"imag", 1, "", ""},
    {"infeed", 1, "infeed_config", ""},
    {"iota", 0, "iota_dimension", "iota_dimension"},
    {"is-finite", 1, "", ""},
    {"log", 1, "result_accuracy", ""},
    {"log-plus-one", 1, "result_accuracy", ""},
    {"logistic", 1, "result_accuracy", ""},
    {"map", -1, "dimensions to_apply", "to_apply"},
    {"maximum", 2, "", ""},
    {"minimum", 2, "", ""},
    {"mulhi", 2, "", ""},
    {"multiply", 2, "", ""},
    {"negate", 1, "", ""},
    {"not", 1, "", ""},
    {"opt-barrier", 1, "", ""},
    {"or", 2, "", ""},
    {"outfeed", 2, "outfeed_config outfeed_shape", ""},
    {"pad", 2, "padding", "padding"},
    {"parameter", -1, "", ""},
    {"partition-id", 0, "", ""},
    {"popcnt", 1, "", ""},
    {"power", 2, "", ""},
    {"ragged-all-to-all", -1, "channel_id dimensions replica_groups", ""},
    {"ragged-dot", -1, "lhs_batch_dims lhs_contracting_dims lhs_ragged_dims operand_precision rhs_batch_dims rhs_contracting_dims rhs_group_dims", ""},
    {"real", 1, "", ""},
    {"recv", 1, "channel_id is_host_transfer", ""},
    {"recv-done", 1, "channel_id is_host_transfer", ""},
    {"reduce", -1, "dimensions to_apply", "dimensions"},
    {"reduce-precision", 1, "exponent_bits mantissa_bits", "exponent_bits"},
    {"reduce-scatter", -1, "channel_id constrain_layout dimensions mode replica_groups to_apply use_global_device_ids", "dimensions"},
    {"reduce-window", -1, "to_apply window", "to_apply"},
    {"remainder", 2, "", ""},
    {"replica-id", 0, "", ""},
    {"reshape", 1, "inferred_dimension", ""},
    {"reverse", 1, "dimensions", "dimensions"},
    {"rng", -1, "distribution", "distribution"},
    {"rng-bit-generator", -1, "algorithm", "algorithm"},
    {"rng-get-and-update-state", 0, "delta", "delta"},
    {"round-nearest-afz", 1, "", ""},
    {"round-nearest-even", 1, "", ""},
    {"rsqrt", 1, "result_accuracy", ""},
    {"scaled-dot", -1, "algorithm lhs_batch_dims lhs_contracting_dims operand_precision rhs_batch_dims rhs_contracting_dims", ""},
    {"scan", -1, "dimensions is_associative is_reverse num_carries to_apply", "dimensions"},
    {"scatter", -1, "index_vector_dim indices_are_sorted input_batching_dims inserted_window_dims scatter_dims_to_operand_dims scatter_indices_batching_dims to_apply unique_indices update_window_dims", "index_vector_dim"},
    {"select", 3, "", ""},
    {"select-and-scatter", 3, "scatter select window", "scatter"},
    {"send", 2, "channel_id is_host_transfer", ""},
    {"send-done", 1, "channel_id is_host_transfer", ""},
    {"set-dimension-size", 2, "dimensions", "dimensions"},
    {"shift-left", 2, "", ""},
    {"shift-right-arithmetic", 2, "", ""},
    {"shift-right-logical", 2, "", ""},
    {"sign", 1, "", ""},
    {"sine", 1, "result_accuracy", ""},
    {"sinh", 1, "result_accuracy", ""},
    {"slice", 1, "slice", "slice"},
    {"sort", -1, "dimensions is_stable to_apply", "dimensions"},
    {"sqrt", 1, "result_accuracy", ""},
    {"stochastic-convert", 2, "", ""},
    {"subtract", 2, "", ""},
    {"tan", 1, "result_accuracy", ""},
    {"tanh", 1, "result_accuracy", ""},
    {"topk", 1, "k largest", "k"},
    {"transpose", 1, "dimensions", "dimensions"},
    {"triangular-solve", 2, "left_side lower transpose_a unit_diagonal", ""},
    {"tuple", -1, "", ""},
    {"while", 1, "body condition", "body"},
    {"xor", 2, "", ""},
};

constexpr std::string_view kGeneric[] = {"backend_config", "control-predecessors",
                                         "frontend_attributes", "metadata", "origin",
                                         "parameter_replication", "sharding", "statistics"};

enum class Form : uint8_t { kAny, kInt, kBool, kIntList, kString, kReplicaGroups, kPairs,
                            kDirection, kFusionKind };

struct FormOf {
  std::string_view name;
  Form form;
};
constexpr FormOf kForms[] = {
    {"channel_id", Form::kInt}, {"index", Form::kInt}, {"iota_dimension", Form::kInt},
    {"feature_index", Form::kInt}, {"k", Form::kInt}, {"index_vector_dim", Form::kInt},
    {"inferred_dimension", Form::kInt}, {"cross_program_prefetch_index", Form::kInt},
    {"batch_group_count", Form::kInt}, {"feature_group_count", Form::kInt},
    {"exponent_bits", Form::kInt}, {"mantissa_bits", Form::kInt},
    {"use_global_device_ids", Form::kBool}, {"constrain_layout", Form::kBool},
    {"is_stable", Form::kBool}, {"indices_are_sorted", Form::kBool},
    {"unique_indices", Form::kBool}, {"largest", Form::kBool},
    {"is_host_transfer", Form::kBool}, {"custom_call_has_side_effect", Form::kBool},
    {"lower", Form::kBool}, {"left_side", Form::kBool}, {"unit_diagonal", Form::kBool},
    {"is_composite", Form::kBool},
    {"dimensions", Form::kIntList}, {"lhs_batch_dims", Form::kIntList},
    {"rhs_batch_dims", Form::kIntList}, {"lhs_contracting_dims", Form::kIntList},
    {"rhs_contracting_dims", Form::kIntList}, {"dynamic_slice_sizes", Form::kIntList},
    {"offset_dims", Form::kIntList}, {"collapsed_slice_dims", Form::kIntList},
    {"start_index_map", Form::kIntList}, {"operand_batching_dims", Form::kIntList},
    {"start_indices_batching_dims", Form::kIntList}, {"update_window_dims", Form::kIntList},
    {"inserted_window_dims", Form::kIntList}, {"scatter_dims_to_operand_dims", Form::kIntList},
    {"input_batching_dims", Form::kIntList}, {"scatter_indices_batching_dims", Form::kIntList},
    {"fft_length", Form::kIntList},
    {"custom_call_target", Form::kString}, {"async_execution_thread", Form::kString},
    {"replica_groups", Form::kReplicaGroups}, {"source_target_pairs", Form::kPairs},
    {"direction", Form::kDirection}, {"kind", Form::kFusionKind},
};

// A fixed set of short names -> ints, looked up on every instruction and attribute: open
// addressing on a hash of the length and three characters, then one comparison (cheaper than
// std::hash's pass over every byte).
class NameTable {
 public:
  int find(std::string_view name) const {
    if (name.empty()) return -1;
    for (size_t i = slot(name);; i = (i + 1) & kMask) {
      const Entry& e = entries_[i];
      if (e.value < 0) return -1;
      if (e.name == name) return e.value;
    }
  }
  void add(std::string_view name, int value) {
    size_t i = slot(name);
    while (entries_[i].value >= 0) i = (i + 1) & kMask;
    entries_[i] = {name, value};
  }

 private:
  static constexpr size_t kSize = 1024, kMask = kSize - 1;  // a quarter full at most
  static size_t slot(std::string_view s) {
    const size_t n = s.size();
    return (n * 131 + static_cast<unsigned char>(s[0]) * 31 +
            static_cast<unsigned char>(s[n / 2]) * 7 + static_cast<unsigned char>(s[n - 1])) &
           kMask;
  }
  struct Entry {
    std::string_view name;
    int value = -1;
  };
  Entry entries_[kSize];
};

struct Tables {
  std::vector<std::string_view> names;  // by attribute id
  NameTable ids;
  std::vector<Form> forms;              // by attribute id
  std::vector<OpcodeRules> rules;
  NameTable opcodes;                    // -> index into rules
  AttributeSet generic;

  int id(std::string_view name) {
    const int have = ids.find(name);
    if (have >= 0) return have;
    const int made = static_cast<int>(names.size());
    ids.add(name, made);
    names.push_back(name);
    return made;
  }

  Tables() {
    for (std::string_view g : kGeneric) generic.set(id(g));
    for (const Row& r : kOpcodes) {
      OpcodeRules rules;
      rules.name = r.name;
      rules.operands = r.operands;
      rules.allowed = generic;
      std::string_view a = r.attributes;
      while (!a.empty()) {
        const size_t sp = std::min(a.find(' '), a.size());
        rules.allowed.set(id(a.substr(0, sp)));
        a.remove_prefix(std::min(sp + 1, a.size()));
      }
      if (!r.required.empty()) rules.required = id(r.required);
      opcodes.add(r.name, static_cast<int>(this->rules.size()));
      this->rules.push_back(rules);
    }
    // (A table that outgrew the sets would be a build mistake: fail loudly in every test.)
    if (names.size() > static_cast<size_t>(kMaxAttributeNames)) std::abort();
    forms.assign(names.size(), Form::kAny);
    for (const FormOf& f : kForms) {
      const int i = ids.find(f.name);
      if (i >= 0) forms[i] = f.form;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

// A cursor over a value's text that skips spaces and comments between tokens.
struct Cursor {
  std::string_view s;
  size_t p = 0;
  char peek() {
    p = skip_space_and_comments(s, p);
    return p < s.size() ? s[p] : '\0';
  }
  bool eat(char c) {
    if (peek() != c) return false;
    ++p;
    return true;
  }
  bool integer() {
    peek();
    size_t b = p;
    if (p < s.size() && s[p] == '-') ++p;
    const size_t digits = p;
    while (p < s.size() && is_digit(s[p])) ++p;
    int64_t v;
    return p > digits && std::from_chars(s.data() + b, s.data() + p, v).ec == std::errc();
  }
  // `{` [int (`,` int)*] `}`; `count` receives the number of integers.
  bool int_list(size_t* count = nullptr) {
    size_t n = 0;
    if (!eat('{')) return false;
    if (!eat('}')) {
      do {
        if (!integer()) return false;
        ++n;
      } while (eat(','));
      if (!eat('}')) return false;
    }
    if (count != nullptr) *count = n;
    return true;
  }
  // `[` int (`,` int)* `]`
  bool bracket_list() {
    if (!eat('[')) return false;
    do {
      if (!integer()) return false;
    } while (eat(','));
    return eat(']');
  }
  bool end() { return peek() == '\0'; }
};

bool replica_groups_ok(std::string_view v) {
  if (v.substr(0, 5) == "mesh[") return true;  // checked where it is read (replica_groups.h)
  Cursor c{v};
  if (c.peek() == '[') {  // [2,4]<=[4,2]T(1,0)
    if (!c.bracket_list() || !c.eat('<') || !c.eat('=') || !c.bracket_list()) return false;
    if (c.eat('T')) {
      if (!c.eat('(')) return false;
      do {
        if (!c.integer()) return false;
      } while (c.eat(','));
      if (!c.eat(')')) return false;
    }
    return c.end();
  }
  if (!c.eat('{')) return false;
  if (!c.eat('}')) {
    do {
      if (!c.int_list()) return false;
    } while (c.eat(','));
    if (!c.eat('}')) return false;
  }
  return c.end();
}

bool pairs_ok(std::string_view v) {
  Cursor c{v};
  if (!c.eat('{')) return false;
  if (!c.eat('}')) {
    do {
      size_t n = 0;
      if (!c.int_list(&n) || n != 2) return false;
    } while (c.eat(','));
    if (!c.eat('}')) return false;
  }
  return c.end();
}

}  // namespace

const OpcodeRules* find_opcode(std::string_view opcode) {
  const Tables& t = tables();
  const int i = t.opcodes.find(opcode);
  return i < 0 ? nullptr : &t.rules[i];
}

int attribute_id(std::string_view name) { return tables().ids.find(name); }

std::string_view attribute_name(int id) { return tables().names.at(id); }

const AttributeSet& generic_attributes() { return tables().generic; }

std::string attribute_names(const AttributeSet& set) {
  std::vector<std::string_view> names;
  for (size_t i = 0; i < tables().names.size(); ++i)
    if (set[i]) names.push_back(tables().names[i]);
  std::sort(names.begin(), names.end());
  std::string out;
  for (std::string_view n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

bool attribute_value_ok(int id, std::string_view v, const char** what) {
  const Form form = id >= 0 && id < static_cast<int>(tables().forms.size()) ? tables().forms[id]
                                                                          : Form::kAny;
  Cursor c{v};
  switch (form) {
    case Form::kAny:
      return true;
    case Form::kInt:
      *what = "an integer";
      return c.integer() && c.end();
    case Form::kBool:
      *what = "true or false";
      return v == "true" || v == "false";
    case Form::kIntList:
      *what = "a list of integers in braces";
      return c.int_list() && c.end();
    case Form::kString:
      *what = "a string";
      return v.size() >= 2 && v.front() == '"' && v.back() == '"';
    case Form::kReplicaGroups:
      *what = "replica groups ({{0,1},{2,3}}, [2,2]<=[4] or mesh[...])";
      return replica_groups_ok(v);
    case Form::kPairs:
      *what = "source-target pairs ({{0,1},{1,0}})";
      return pairs_ok(v);
    case Form::kDirection:
      *what = "a comparison direction (EQ, NE, LT, LE, GT, GE)";
      return v == "EQ" || v == "NE" || v == "LT" || v == "LE" || v == "GT" || v == "GE";
    case Form::kFusionKind:
      *what = "a fusion kind (kLoop, kInput, kOutput, kCustom)";
      return v == "kLoop" || v == "kInput" || v == "kOutput" || v == "kCustom";
  }
  return true;
}

}  // namespace aoizora::hlo
