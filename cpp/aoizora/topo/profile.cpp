// Reading and writing hardware profiles (topo/profile.h).
#include "aoizora/topo/profile.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "aoizora/topo/json.h"

namespace aoizora::topo {
namespace {

using json::Value;

// The collective-latency keys (HLO spellings) and the field each fills.
struct KindField {
  const char* key;
  double CollectiveLatency::*field;
};
constexpr KindField kKinds[] = {
    {"all-gather", &CollectiveLatency::all_gather},
    {"all-reduce", &CollectiveLatency::all_reduce},
    {"reduce-scatter", &CollectiveLatency::reduce_scatter},
    {"all-to-all", &CollectiveLatency::all_to_all},
    {"collective-permute", &CollectiveLatency::collective_permute},
    {"collective-broadcast", &CollectiveLatency::collective_broadcast},
};

struct ShapeField {
  const char* key;
  std::string GroupAlgorithms::*field;
};
constexpr ShapeField kShapes[] = {
    {"line", &GroupAlgorithms::line},
    {"wrapped-axis", &GroupAlgorithms::wrapped_axis},
    {"grid", &GroupAlgorithms::grid},
    {"other", &GroupAlgorithms::other},
};

// Top-level figures: key -> field, and whether zero is allowed.
struct Figure {
  const char* key;
  double ChipSpec::*field;
  bool zero_ok;
};
constexpr Figure kFigures[] = {
    {"peak_flops", &ChipSpec::peak_flops, false},
    {"hbm_bytes", &ChipSpec::hbm_bytes, false},
    {"hbm_bandwidth", &ChipSpec::hbm_bandwidth, false},
    {"mxu_efficiency", &ChipSpec::mxu_efficiency, false},
    {"link_bandwidth", &ChipSpec::link_bandwidth, false},
    {"hop_latency", &ChipSpec::hop_latency, true},
    {"vector_ops_per_second", &ChipSpec::vector_ops_per_second, false},
    {"transcendentals_per_second", &ChipSpec::transcendentals_per_second, false},
    {"grid_step_seconds", &ChipSpec::grid_step_seconds, true},
};

const std::set<std::string>& top_keys() {
  static const std::set<std::string> k = [] {
    std::set<std::string> s = {"schema", "generation", "device_kind", "mxu_size",
                               "collective_latency", "algorithms", "cores_per_chip", "intra_chip_link",
                               "provenance"};
    for (const Figure& f : kFigures) s.insert(f.key);
    return s;
  }();
  return k;
}

// A figure older profiles carried that no model ever read: a profile that still names it
// (at the top, in provenance.sources or provenance.basis) is refused with what to do, not
// with the plain unknown-field line.
constexpr const char* kRetired = "dma_fixed_seconds";

std::string retired(const std::string& name) {
  return "'" + name + "' is no longer a hardware-profile field (no model read it): delete it, "
         "and its provenance.sources and provenance.basis entries";
}

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  Error fail(const std::string& message) const { return Error{message, file_}; }

  // Keys of `obj` outside `allowed` are an error naming the first.
  Status only(const Value& obj, const std::set<std::string>& allowed,
              const std::string& where) const {
    for (const auto& [k, v] : obj.object) {
      if (k == kRetired) return fail(retired(where + k));
      if (!allowed.count(k)) return fail("unknown field '" + where + k + "' in a hardware profile");
    }
    return Status::success();
  }

  Result<const Value*> need(const Value& obj, const std::string& key, const std::string& where) const {
    const Value* v = obj.find(key);
    if (v == nullptr) return fail("missing field '" + where + key + "'");
    return v;
  }

  // A finite number >= 0 (> 0 unless zero_ok).
  Result<double> number(const Value& v, const std::string& name, bool zero_ok) const {
    if (!v.is_number()) return fail("'" + name + "' must be a number");
    if (!std::isfinite(v.number)) return fail("'" + name + "' must be finite, got " + repr(v.number));
    if (v.number < 0 || (!zero_ok && v.number == 0))
      return fail("'" + name + "' must be " + (zero_ok ? ">= 0" : "> 0") + ", got " + repr(v.number));
    return v.number;
  }

  Result<std::string> string(const Value& v, const std::string& name) const {
    if (v.type != Value::Type::kString) return fail("'" + name + "' must be a string");
    return v.string;
  }

  static std::string repr(double x) {
    std::ostringstream os;
    os << x;
    return os.str();
  }

 private:
  std::string file_;
};

// One provenance.basis entry: {"basis": "fitted" | "nominal"} or {"basis": "derived",
// "from": ..., "rule": ...}; a derived figure without its rule and source is not derived.
Result<FieldBasis> read_field_basis(const Reader& r, const Value& e, const std::string& where) {
  if (!e.is_object()) return r.fail("'" + where + "' must be an object with 'basis'");
  RETURN_IF_ERROR(r.only(e, {"basis", "from", "rule"}, where + "."));
  FieldBasis b;
  ASSIGN_OR_RETURN(auto kind_v, r.need(e, "basis", where + "."));
  ASSIGN_OR_RETURN(auto kind, r.string(*kind_v, where + ".basis"));
  if (kind != "fitted" && kind != "derived" && kind != "nominal")
    return r.fail("'" + where + ".basis' is '" + kind + "', expected fitted, derived or nominal");
  b.basis = kind;
  for (auto [key, field] : {std::pair{"from", &FieldBasis::from}, {"rule", &FieldBasis::rule}}) {
    const Value* x = e.find(key);
    if ((x != nullptr) != (kind == "derived"))
      return r.fail("'" + where + "." + key + "' is required for a derived field and only for one");
    if (x == nullptr) continue;
    ASSIGN_OR_RETURN(auto text, r.string(*x, where + "." + key));
    if (text.empty()) return r.fail("'" + where + "." + key + "' must not be empty");
    b.*field = text;
  }
  return b;
}

Result<std::map<std::string, FieldBasis>> read_basis(const Reader& r, const Value& v) {
  if (!v.is_object()) return r.fail("'provenance.basis' must be an object");
  const std::vector<std::string> all = basis_fields(true);
  std::map<std::string, FieldBasis> out;
  for (const auto& [k, e] : v.object) {
    if (k == kRetired) return r.fail(retired("provenance.basis." + k));
    if (std::find(all.begin(), all.end(), k) == all.end())
      return r.fail("unknown field 'provenance.basis." + k + "': basis is keyed by figure");
    ASSIGN_OR_RETURN(auto b, read_field_basis(r, e, "provenance.basis." + k));
    out[k] = b;
  }
  return out;
}

// A stated basis covers every field of this chip, and every figure the fit set is fitted.
Status check_basis(const Reader& r, const HardwareProfile& p) {
  const Provenance& pr = p.provenance;
  if (pr.basis.empty()) return Status::success();
  for (const std::string& f : basis_fields(p.spec.intra_chip_link.has_value()))
    if (!pr.basis.count(f)) return r.fail("missing field 'provenance.basis." + f + "'");
  if (!p.spec.intra_chip_link && pr.basis.count("intra_chip_link"))
    return r.fail("'provenance.basis.intra_chip_link' is given but the chip has no intra-chip link");
  for (const std::string& f : pr.fitted_parameters) {
    auto it = pr.basis.find(f);
    if (it != pr.basis.end() && it->second.basis != "fitted")
      return r.fail("'provenance.basis." + f + "' is '" + it->second.basis +
                    "' but fitted_parameters lists it as fitted");
  }
  return Status::success();
}

Result<Provenance> read_provenance(const Reader& r, const Value& v) {
  Provenance p;
  if (!v.is_object()) return r.fail("'provenance' must be an object");
  RETURN_IF_ERROR(r.only(v, {"fitted", "note", "fitted_to", "sources", "fitted_on",
                           "fitted_parameters", "residuals", "basis"}, "provenance."));
  if (const Value* f = v.find("fitted")) {
    if (f->type != Value::Type::kBool) return r.fail("'provenance.fitted' must be true or false");
    p.fitted = f->boolean;
  }
  if (const Value* n = v.find("note")) {
    ASSIGN_OR_RETURN(auto note, r.string(*n, "provenance.note"));
    p.note = note;
  }
  if (const Value* f = v.find("fitted_to")) {
    if (!f->is_array()) return r.fail("'provenance.fitted_to' must be an array of strings");
    for (const Value& e : f->array) {
      ASSIGN_OR_RETURN(auto id, r.string(e, "provenance.fitted_to[]"));
      p.fitted_to.push_back(id);
    }
  }
  if (const Value* d = v.find("fitted_on")) {
    ASSIGN_OR_RETURN(auto date, r.string(*d, "provenance.fitted_on"));
    p.fitted_on = date;
  }
  if (const Value* f = v.find("fitted_parameters")) {
    if (!f->is_array()) return r.fail("'provenance.fitted_parameters' must be an array of strings");
    for (const Value& e : f->array) {
      ASSIGN_OR_RETURN(auto name, r.string(e, "provenance.fitted_parameters[]"));
      p.fitted_parameters.push_back(name);
    }
  }
  if (const Value* res = v.find("residuals")) {
    if (!res->is_object()) return r.fail("'provenance.residuals' must be an object");
    for (const auto& [id, e] : res->object) {
      const std::string where = "provenance.residuals." + id;
      if (!e.is_object()) return r.fail("'" + where + "' must be {\"before\": x, \"after\": y}");
      RETURN_IF_ERROR(r.only(e, {"before", "after"}, where + "."));
      FitResidual fr;
      for (auto [key, field] : {std::pair{"before", &FitResidual::before}, {"after", &FitResidual::after}}) {
        ASSIGN_OR_RETURN(auto x, r.need(e, key, where + "."));
        if (!x->is_number() || !std::isfinite(x->number))
          return r.fail("'" + where + "." + key + "' must be a finite number");
        fr.*field = x->number;
      }
      p.residuals[id] = fr;
    }
  }
  if (const Value* s = v.find("sources")) {
    if (!s->is_object()) return r.fail("'provenance.sources' must be an object");
    for (const auto& [k, e] : s->object) {
      if (k == kRetired) return r.fail(retired("provenance.sources." + k));
      if (!top_keys().count(k) || k == "schema" || k == "provenance")
        return r.fail("unknown field 'provenance.sources." + k + "': sources are keyed by figure");
      ASSIGN_OR_RETURN(auto src, r.string(e, "provenance.sources." + k));
      p.sources[k] = src;
    }
  }
  if (const Value* b = v.find("basis")) {
    ASSIGN_OR_RETURN(auto basis, read_basis(r, *b));
    p.basis = basis;
  }
  return p;
}

Status read_collective_latency(const Reader& r, const Value& v, CollectiveLatency* out) {
  if (!v.is_object()) return r.fail("'collective_latency' must be an object");
  std::set<std::string> keys;
  for (const KindField& k : kKinds) keys.insert(k.key);
  RETURN_IF_ERROR(r.only(v, keys, "collective_latency."));
  for (const KindField& k : kKinds) {
    ASSIGN_OR_RETURN(auto e, r.need(v, k.key, "collective_latency."));
    ASSIGN_OR_RETURN(auto x, r.number(*e, std::string("collective_latency.") + k.key, true));
    out->*k.field = x;
  }
  return Status::success();
}

Status read_algorithms(const Reader& r, const Value& v, GroupAlgorithms* out) {
  if (!v.is_object()) return r.fail("'algorithms' must be an object");
  std::set<std::string> keys;
  for (const ShapeField& s : kShapes) keys.insert(s.key);
  RETURN_IF_ERROR(r.only(v, keys, "algorithms."));
  const GroupAlgorithms implemented;
  for (const ShapeField& s : kShapes) {
    ASSIGN_OR_RETURN(auto e, r.need(v, s.key, "algorithms."));
    const std::string name = std::string("algorithms.") + s.key;
    ASSIGN_OR_RETURN(auto alg, r.string(*e, name));
    const bool grid_choice = s.field == &GroupAlgorithms::grid &&
                             std::find(std::begin(kGridAlgorithms), std::end(kGridAlgorithms), alg) !=
                                 std::end(kGridAlgorithms);
    if (!grid_choice && alg != implemented.*s.field)
      return r.fail("'" + name + "' is '" + alg + "', which the cost model does not implement (it has '" +
                    (s.field == &GroupAlgorithms::grid ? std::string("bidirectional-ring' or 'dimension-order")
                                                       : implemented.*s.field) +
                    "')");
    out->*s.field = alg;
  }
  return Status::success();
}

Result<IntraChipLink> read_intra_chip_link(const Reader& r, const Value& v) {
  if (!v.is_object()) return r.fail("'intra_chip_link' must be an object or null");
  RETURN_IF_ERROR(r.only(v, {"bandwidth", "latency"}, "intra_chip_link."));
  IntraChipLink l;
  ASSIGN_OR_RETURN(auto bw, r.need(v, "bandwidth", "intra_chip_link."));
  ASSIGN_OR_RETURN(auto b, r.number(*bw, "intra_chip_link.bandwidth", false));
  ASSIGN_OR_RETURN(auto lat, r.need(v, "latency", "intra_chip_link."));
  ASSIGN_OR_RETURN(auto t, r.number(*lat, "intra_chip_link.latency", true));
  l.bandwidth = b;
  l.latency = t;
  return l;
}

std::string num(double x) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, res.ptr);
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

Result<HardwareProfile> profile_from_json(const std::string& text, const std::string& file) {
  ASSIGN_OR_RETURN(Value parsed, json::parse(text, file));
  const Reader r(file);
  const Value& root = parsed;
  if (!root.is_object()) return r.fail("a hardware profile must hold a JSON object");
  RETURN_IF_ERROR(r.only(root, top_keys(), ""));
  ASSIGN_OR_RETURN(auto schema_v, r.need(root, "schema", ""));
  ASSIGN_OR_RETURN(auto schema, r.string(*schema_v, "schema"));
  if (schema != kHardwareSchema)
    return r.fail("'schema' is '" + schema + "', expected '" + kHardwareSchema + "'");

  HardwareProfile p;
  ChipSpec& s = p.spec;
  ASSIGN_OR_RETURN(auto gen_v, r.need(root, "generation", ""));
  ASSIGN_OR_RETURN(auto gen, r.string(*gen_v, "generation"));
  if (gen.empty()) return r.fail("'generation' must not be empty");
  s.generation = gen;
  ASSIGN_OR_RETURN(auto kind_v, r.need(root, "device_kind", ""));
  ASSIGN_OR_RETURN(auto kind, r.string(*kind_v, "device_kind"));
  s.device_kind = kind;
  for (const Figure& f : kFigures) {
    ASSIGN_OR_RETURN(auto v, r.need(root, f.key, ""));
    ASSIGN_OR_RETURN(auto x, r.number(*v, f.key, f.zero_ok));
    s.*f.field = x;
  }
  // A fraction of the padded roofline: above 1 would price matmuls faster than the MXU runs.
  if (s.mxu_efficiency > 1)
    return r.fail("'mxu_efficiency' must be at most 1 (a fraction of the MXU's peak), got " +
                  Reader::repr(s.mxu_efficiency));
  ASSIGN_OR_RETURN(auto mxu_v, r.need(root, "mxu_size", ""));
  ASSIGN_OR_RETURN(auto mxu, r.number(*mxu_v, "mxu_size", false));
  if (mxu != std::floor(mxu) || mxu > 1 << 16) return r.fail("'mxu_size' must be a whole number of elements");
  s.mxu_size = static_cast<int>(mxu);
  ASSIGN_OR_RETURN(auto cl, r.need(root, "collective_latency", ""));
  RETURN_IF_ERROR(read_collective_latency(r, *cl, &s.collective_latency));
  ASSIGN_OR_RETURN(auto alg, r.need(root, "algorithms", ""));
  RETURN_IF_ERROR(read_algorithms(r, *alg, &s.algorithms));
  if (const Value* icl = root.find("intra_chip_link"); icl != nullptr && icl->type != Value::Type::kNull) {
    ASSIGN_OR_RETURN(auto l, read_intra_chip_link(r, *icl));
    s.intra_chip_link = l;
  }
  if (const Value* cv = root.find("cores_per_chip")) {
    ASSIGN_OR_RETURN(auto cores, r.number(*cv, "cores_per_chip", false));
    if (cores != 1 && cores != 2) return r.fail("'cores_per_chip' must be 1 or 2");
    s.cores_per_chip = static_cast<int>(cores);
  }
  // Two cores exchange data over the intra-chip link, so one needs the other.
  if ((s.cores_per_chip == 2) != s.intra_chip_link.has_value())
    return r.fail(s.cores_per_chip == 2 ? "'cores_per_chip' is 2 but 'intra_chip_link' is missing"
                                        : "'intra_chip_link' is given but 'cores_per_chip' is not 2");
  if (const Value* pv = root.find("provenance")) {
    ASSIGN_OR_RETURN(auto prov, read_provenance(r, *pv));
    p.provenance = prov;
  }
  RETURN_IF_ERROR(check_basis(r, p));
  return p;
}

std::vector<std::string> basis_fields(bool intra_chip_link) {
  std::vector<std::string> out;
  for (const Figure& f : kFigures) {
    out.push_back(f.key);
    if (std::string(f.key) == "hbm_bandwidth") out.push_back("mxu_size");
  }
  for (const KindField& k : kKinds) out.push_back(std::string("collective_latency.") + k.key);
  out.push_back("cores_per_chip");
  if (intra_chip_link) out.push_back("intra_chip_link");
  return out;
}

Result<HardwareProfile> read_profile_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::not_found("cannot open hardware profile '" + path + "'", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return profile_from_json(ss.str(), path);
}

std::string profile_to_json(const HardwareProfile& p) {
  const ChipSpec& s = p.spec;
  std::string o = "{\n";
  o += "  \"schema\": " + quoted(kHardwareSchema) + ",\n";
  o += "  \"generation\": " + quoted(s.generation) + ",\n";
  o += "  \"device_kind\": " + quoted(s.device_kind) + ",\n";
  for (const Figure& f : kFigures) {
    o += "  " + quoted(f.key) + ": " + num(s.*f.field) + ",\n";
    if (std::string(f.key) == "hbm_bandwidth") o += "  \"mxu_size\": " + std::to_string(s.mxu_size) + ",\n";
  }
  o += "  \"collective_latency\": {";
  bool first = true;
  for (const KindField& k : kKinds) {
    o += std::string(first ? "" : ", ") + quoted(k.key) + ": " + num(s.collective_latency.*k.field);
    first = false;
  }
  o += "},\n  \"algorithms\": {";
  first = true;
  for (const ShapeField& a : kShapes) {
    o += std::string(first ? "" : ", ") + quoted(a.key) + ": " + quoted(s.algorithms.*a.field);
    first = false;
  }
  o += "},\n  \"cores_per_chip\": " + std::to_string(s.cores_per_chip);
  o += ",\n  \"intra_chip_link\": ";
  if (s.intra_chip_link)
    o += "{\"bandwidth\": " + num(s.intra_chip_link->bandwidth) + ", \"latency\": " +
         num(s.intra_chip_link->latency) + "}";
  else
    o += "null";
  const Provenance& pr = p.provenance;
  o += ",\n  \"provenance\": {\n    \"fitted\": " + std::string(pr.fitted ? "true" : "false") + ",\n";
  o += "    \"note\": " + quoted(pr.note) + ",\n    \"fitted_to\": [";
  first = true;
  for (const std::string& id : pr.fitted_to) {
    o += std::string(first ? "" : ", ") + quoted(id);
    first = false;
  }
  o += "],\n    \"sources\": {";
  first = true;
  for (const auto& [k, v] : pr.sources) {
    o += std::string(first ? "\n" : ",\n") + "      " + quoted(k) + ": " + quoted(v);
    first = false;
  }
  o += first ? "}" : "\n    }";
  if (!pr.fitted_on.empty()) o += ",\n    \"fitted_on\": " + quoted(pr.fitted_on);
  if (!pr.fitted_parameters.empty()) {
    o += ",\n    \"fitted_parameters\": [";
    first = true;
    for (const std::string& f : pr.fitted_parameters) {
      o += std::string(first ? "" : ", ") + quoted(f);
      first = false;
    }
    o += "]";
  }
  if (!pr.residuals.empty()) {
    o += ",\n    \"residuals\": {";
    first = true;
    for (const auto& [id, fr] : pr.residuals) {
      o += std::string(first ? "\n" : ",\n") + "      " + quoted(id) + ": {\"before\": " +
           num(fr.before) + ", \"after\": " + num(fr.after) + "}";
      first = false;
    }
    o += "\n    }";
  }
  if (!pr.basis.empty()) {
    o += ",\n    \"basis\": {";
    first = true;
    for (const auto& [k, b] : pr.basis) {
      o += std::string(first ? "\n" : ",\n") + "      " + quoted(k) + ": {\"basis\": " + quoted(b.basis);
      if (!b.from.empty()) o += ", \"from\": " + quoted(b.from);
      if (!b.rule.empty()) o += ", \"rule\": " + quoted(b.rule);
      o += "}";
      first = false;
    }
    o += "\n    }";
  }
  o += "\n  }\n}\n";
  return o;
}

#undef AOIZORA_TRY

}  // namespace aoizora::topo
