// Hardware profiles (topo/profile.h) and the catalog that reads them (topo/catalog.h).
#include "aoizora/topo/profile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "aoizora/topo/catalog.h"

namespace aoizora::topo {
namespace {

const char* const kGenerations[] = {"v4", "v5e", "v5p", "v6e", "tpu7x"};

std::string profile_file(const std::string& generation) {
  return std::string(AOIZORA_PROFILES) + "/" + generation + ".json";
}

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The v5e profile text with `from` replaced by `to` (which must occur).
std::string v5e_with(const std::string& from, const std::string& to) {
  std::string s = read(profile_file("v5e"));
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

// The v5e profile text with the value of figure `key` (whatever the shipped profile holds,
// fitted or not) replaced by `value`.
std::string v5e_with_figure(const std::string& key, const std::string& value) {
  std::string s = read(profile_file("v5e"));
  const std::string from = "\"" + key + "\": ";
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << key;
  if (at == std::string::npos) return s;
  const size_t begin = at + from.size(), end = s.find_first_of(",\n}", begin);
  return s.replace(begin, end - begin, value);
}

std::string error_of(const std::string& text) {
  Result<HardwareProfile> p = profile_from_json(text, "bad.json");
  EXPECT_FALSE(p.ok());
  return p.ok() ? "" : p.error().to_string();
}

TEST(HardwareProfile, EveryShippedProfileRoundTripsExactly) {
  for (const char* g : kGenerations) {
    Result<HardwareProfile> p = profile_from_json(read(profile_file(g)), g);
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    EXPECT_EQ(p->spec.generation, g);
    Result<HardwareProfile> back = profile_from_json(profile_to_json(*p), "written");
    ASSERT_TRUE(back.ok()) << back.error().to_string();
    EXPECT_EQ(*back, *p) << g;
    EXPECT_EQ(profile_to_json(*back), profile_to_json(*p)) << g;
    EXPECT_FALSE(p->provenance.sources.empty()) << g;
    // A fitted profile names its points, its date, what it fitted and each point's error.
    const Provenance& pr = p->provenance;
    EXPECT_EQ(pr.fitted, !pr.fitted_to.empty()) << g;
    EXPECT_EQ(pr.fitted, !pr.fitted_on.empty()) << g;
    EXPECT_EQ(pr.fitted, !pr.fitted_parameters.empty()) << g;
    EXPECT_EQ(pr.residuals.size(), pr.fitted_to.size()) << g;
    for (const std::string& id : pr.fitted_to) EXPECT_EQ(pr.residuals.count(id), 1u) << g << " " << id;
  }
}

TEST(HardwareProfile, CompiledInProfilesAreTheFilesInProfilesDir) {
  for (const char* g : kGenerations) {
    Result<HardwareProfile> shipped = hardware_profile(g);
    ASSERT_TRUE(shipped.ok()) << shipped.error().to_string();
    Result<HardwareProfile> file = read_profile_file(profile_file(g));
    ASSERT_TRUE(file.ok()) << file.error().to_string();
    EXPECT_EQ(*shipped, *file) << g;
  }
}

TEST(HardwareProfile, CatalogChipSpecEqualsTheProfileFigures) {
  const std::pair<const char*, const char*> slices[] = {
      {"v4", "v4:2x2x1"}, {"v5e", "v5e:2x4"}, {"v5p", "v5p:2x2x2"}, {"v6e", "v6e:2x4"},
      {"tpu7x", "tpu7x:2x2x1"}};
  for (const auto& [g, slice] : slices) {
    Result<HardwareProfile> file = read_profile_file(profile_file(g));
    ASSERT_TRUE(file.ok());
    Result<Topology> t = make_topology(slice);
    ASSERT_TRUE(t.ok());
    EXPECT_EQ(t->spec, file->spec) << slice;
    EXPECT_EQ(*chip_spec(g), file->spec) << g;
    for (const Link& l : t->links) {
      // ICI links take the chip's link figures, intra-chip links (TPU7x) the intra-chip ones.
      const bool core = l.dim == kCoreAxis;
      ASSERT_EQ(core, file->spec.intra_chip_link.has_value() && core) << slice;
      EXPECT_EQ(l.bandwidth, core ? file->spec.intra_chip_link->bandwidth : file->spec.link_bandwidth);
      EXPECT_EQ(l.latency, core ? file->spec.intra_chip_link->latency : file->spec.hop_latency);
    }
    EXPECT_EQ(t->num_devices(), t->num_chips() * file->spec.cores_per_chip) << slice;
  }
}

std::string nominal_file(const std::string& generation) {
  return std::string(AOIZORA_PROFILES) + "/../calibration/nominal/" + generation + ".json";
}

// The fitted generations: their nominal figures (the base of the fit) are kept in
// calibration/nominal/; v6e ships its nominal figures (no published point).
bool fitted(const std::string& g) {
  return g == "v4" || g == "v5e" || g == "v5p" || g == "v6e" || g == "tpu7x";
}

TEST(HardwareProfile, NominalFiguresAreTheCatalogOnesBeforeProfiles) {
  // The figures the catalog had before profiles (REFERENCE.md §2): the nominal profiles.
  struct Old { const char* g; double flops, hbm, hbm_bw, link; };
  const Old old[] = {{"v4", 275e12, 32.0 * (1 << 30), 1.2e12, 45e9},
                     {"v5e", 197e12, 16e9, 819e9, 45e9},
                     {"v5p", 459e12, 95e9, 2.765e12, 90e9},
                     {"v6e", 918e12, 32e9, 1.638e12, 90e9},
                     {"tpu7x", 2307e12, 192.0 * (1 << 30), 7.38e12, 100e9}};
  for (const Old& o : old) {
    Result<HardwareProfile> p = read_profile_file(fitted(o.g) ? nominal_file(o.g) : profile_file(o.g));
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    const ChipSpec& s = p->spec;
    EXPECT_FALSE(p->provenance.fitted) << o.g;
    EXPECT_EQ(s.peak_flops, o.flops) << o.g;
    EXPECT_EQ(s.hbm_bytes, o.hbm) << o.g;
    EXPECT_EQ(s.hbm_bandwidth, o.hbm_bw) << o.g;
    EXPECT_EQ(s.link_bandwidth, o.link) << o.g;
    EXPECT_EQ(s.hop_latency, 1e-6) << o.g;
    EXPECT_EQ(s.collective_latency, CollectiveLatency{}) << o.g;
    EXPECT_EQ(s.mxu_efficiency, 1.0) << o.g;
    EXPECT_EQ(s.intra_chip_link.has_value(), std::string(o.g) == "tpu7x") << o.g;
  }
}

// Every generation ships fitted (v4 and TPU7x since sub-grids run as rings: before, their
// fits needed links twice what a link carries; v6e's mxu_efficiency to one whole video).
TEST(HardwareProfile, FittedProfilesDifferFromNominalOnlyInTheirFittedAndDerivedParameters) {
  for (const char* g : {"v4", "v5e", "v5p", "v6e", "tpu7x"}) {
    Result<HardwareProfile> nominal = read_profile_file(nominal_file(g));
    ASSERT_TRUE(nominal.ok()) << nominal.error().to_string();
    ChipSpec shipped = *chip_spec(g);
    Result<HardwareProfile> profile = hardware_profile(g);
    ASSERT_TRUE(profile.ok());
    const Provenance& pr = profile->provenance;
    ASSERT_TRUE(pr.fitted) << g;
    ASSERT_FALSE(pr.fitted_parameters.empty()) << g;
    // Put the nominal value back in every fitted figure: the rest must be the nominal spec.
    for (const std::string& name : pr.fitted_parameters) {
      if (name == "link_bandwidth") {
        EXPECT_NE(shipped.link_bandwidth, nominal->spec.link_bandwidth) << g;
        shipped.link_bandwidth = nominal->spec.link_bandwidth;
      } else if (name == "hop_latency") {
        shipped.hop_latency = nominal->spec.hop_latency;
      } else if (name == "collective_latency.all-gather") {
        shipped.collective_latency.all_gather = nominal->spec.collective_latency.all_gather;
      } else if (name == "collective_latency.all-reduce") {
        shipped.collective_latency.all_reduce = nominal->spec.collective_latency.all_reduce;
      } else if (name == "collective_latency.collective-permute") {
        shipped.collective_latency.collective_permute = nominal->spec.collective_latency.collective_permute;
      } else if (name == "mxu_efficiency") {
        EXPECT_LT(shipped.mxu_efficiency, 1.0) << g;  // below the roofline
        shipped.mxu_efficiency = nominal->spec.mxu_efficiency;
      } else {
        ADD_FAILURE() << g << ": unexpected fitted parameter " << name;
      }
    }
    // Derived figures (provenance.basis: v6e's fixed costs, from v5e's fit, and its hop
    // latency, from v4's) too.
    for (const auto& [name, b] : pr.basis) {
      if (b.basis != "derived") continue;
      if (name == "hop_latency") shipped.hop_latency = nominal->spec.hop_latency;
      CollectiveLatency& to = shipped.collective_latency;
      const CollectiveLatency& from = nominal->spec.collective_latency;
      for (auto [kind, field] : {std::pair{"all-gather", &CollectiveLatency::all_gather},
                                 {"all-reduce", &CollectiveLatency::all_reduce},
                                 {"reduce-scatter", &CollectiveLatency::reduce_scatter},
                                 {"all-to-all", &CollectiveLatency::all_to_all},
                                 {"collective-permute", &CollectiveLatency::collective_permute},
                                 {"collective-broadcast", &CollectiveLatency::collective_broadcast}})
        if (name == std::string("collective_latency.") + kind) to.*field = from.*field;
    }
    EXPECT_EQ(shipped, nominal->spec) << g;
  }
}

TEST(HardwareProfile, UnknownFieldIsAnErrorNamingIt) {
  const std::string e = error_of(v5e_with("\"link_bandwidth\"", "\"link_bandwith\""));
  EXPECT_NE(e.find("bad.json"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown field 'link_bandwith'"), std::string::npos) << e;
  const std::string nested = error_of(v5e_with("\"all-gather\"", "\"allgather\""));
  EXPECT_NE(nested.find("collective_latency.allgather"), std::string::npos) << nested;
}

// An older profile's dma_fixed_seconds, a figure no model read, wherever it is named: one
// line saying to delete it, not the plain unknown-field error.
TEST(HardwareProfile, RetiredDmaFixedSecondsIsAnErrorSayingToDeleteIt) {
  const std::string top = error_of(v5e_with("\"hop_latency\": ", "\"dma_fixed_seconds\": 0, \"hop_latency\": "));
  EXPECT_NE(top.find("'dma_fixed_seconds' is no longer a hardware-profile field"), std::string::npos) << top;
  EXPECT_NE(top.find("delete it"), std::string::npos) << top;
  EXPECT_EQ(top.find('\n'), std::string::npos) << top;
  const std::string source = error_of(v5e_with("\"sources\": {", "\"sources\": {\"dma_fixed_seconds\": \"0\", "));
  EXPECT_NE(source.find("'provenance.sources.dma_fixed_seconds' is no longer"), std::string::npos) << source;
  const std::string basis = error_of(v5e_with("\"basis\": {", "\"basis\": {\"dma_fixed_seconds\": {\"basis\": \"nominal\"}, "));
  EXPECT_NE(basis.find("'provenance.basis.dma_fixed_seconds' is no longer"), std::string::npos) << basis;
}

TEST(HardwareProfile, NegativeOrNonFiniteFigureIsAnErrorNamingIt) {
  const std::string neg = error_of(v5e_with("\"hop_latency\": 1e-06", "\"hop_latency\": -1e-06"));
  EXPECT_NE(neg.find("'hop_latency' must be >= 0"), std::string::npos) << neg;
  const std::string inf = error_of(v5e_with("\"peak_flops\": 197000000000000.0", "\"peak_flops\": 1e999"));
  EXPECT_NE(inf.find("'peak_flops' must be finite"), std::string::npos) << inf;
  const std::string zero = error_of(v5e_with_figure("link_bandwidth", "0"));
  EXPECT_NE(zero.find("'link_bandwidth' must be > 0"), std::string::npos) << zero;
  const std::string str = error_of(v5e_with("\"hbm_bytes\": 16000000000.0", "\"hbm_bytes\": \"16GB\""));
  EXPECT_NE(str.find("'hbm_bytes' must be a number"), std::string::npos) << str;
}

TEST(HardwareProfile, MxuEfficiencyAboveOneIsAnError) {
  const std::string above = error_of(v5e_with_figure("mxu_efficiency", "1.2"));
  EXPECT_NE(above.find("'mxu_efficiency' must be at most 1"), std::string::npos) << above;
  EXPECT_TRUE(profile_from_json(v5e_with_figure("mxu_efficiency", "1.0"), "ok.json").ok());
}

TEST(HardwareProfile, MalformedFitRecordIsAnErrorNamingTheField) {
  // The shipped v5e profile is fitted: it has residuals and fitted_parameters to spoil.
  const std::string res = error_of(v5e_with("\"residuals\": {", "\"residuals\": {\"bogus\": 1, "));
  EXPECT_NE(res.find("'provenance.residuals.bogus' must be"), std::string::npos) << res;
  const std::string after = error_of(v5e_with("\"after\": ", "\"after\": \"small\", \"x\": "));
  EXPECT_NE(after.find("unknown field 'provenance.residuals."), std::string::npos) << after;
  const std::string params = error_of(v5e_with("\"fitted_parameters\": [", "\"fitted_parameters\": [3, "));
  EXPECT_NE(params.find("'provenance.fitted_parameters[]' must be a string"), std::string::npos) << params;
}

TEST(HardwareProfile, WrongSchemaVersionMissingFieldAndUnimplementedAlgorithmAreErrors) {
  const std::string schema = error_of(v5e_with("aoizora.hardware/1", "aoizora.hardware/2"));
  EXPECT_NE(schema.find("'schema' is 'aoizora.hardware/2', expected 'aoizora.hardware/1'"),
            std::string::npos) << schema;
  const std::string missing = error_of(v5e_with("\"mxu_size\": 128,", ""));
  EXPECT_NE(missing.find("missing field 'mxu_size'"), std::string::npos) << missing;
  const std::string alg = error_of(v5e_with("\"bidirectional-line\"", "\"two-dimensional\""));
  EXPECT_NE(alg.find("'algorithms.line'"), std::string::npos) << alg;
}

TEST(HardwareProfile, OverrideReplacesEveryGridLinkFigure) {
  ChipSpec slow = *chip_spec("v5e");
  slow.link_bandwidth /= 2;
  slow.hop_latency = 3e-6;
  Result<Topology> t = with_hardware(*make_topology("v5e:2x4"), slow);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->spec, slow);
  ASSERT_NE(slow.link_bandwidth, chip_spec("v5e")->link_bandwidth);
  for (const Link& l : t->links) {
    EXPECT_EQ(l.bandwidth, slow.link_bandwidth);
    EXPECT_EQ(l.latency, 3e-6);
  }
  Result<Topology> other = with_hardware(*make_topology("v6e:2x4"), slow);
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("for 'v5e' but topology v6e:2x4 is v6e"), std::string::npos)
      << other.error().message;
}

TEST(HardwareProfile, MakeTopologyWithAHardwareFileUsesItsFigures) {
  const std::string path = ::testing::TempDir() + "/topo_profile_test_v5e.json";
  {
    std::ofstream out(path);
    out << v5e_with_figure("link_bandwidth", "1e9");
  }
  Result<Topology> t = make_topology("v5e:2x2", path);
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ(t->spec.link_bandwidth, 1e9);
  EXPECT_EQ(t->links[0].bandwidth, 1e9);
  Result<Topology> missing = make_topology("v5e:2x2", path + ".absent");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().to_string().find(".absent"), std::string::npos);
  std::remove(path.c_str());
}

// provenance.basis: every shipped profile says, per field, fitted, derived or nominal; v6e,
// without a collective point, has none of its fixed costs nominal (derived from v5e).
TEST(HardwareProfile, EveryShippedProfileStatesTheBasisOfEveryField) {
  for (const char* g : kGenerations) {
    Result<HardwareProfile> p = profile_from_json(read(profile_file(g)), g);
    ASSERT_TRUE(p.ok()) << p.error().to_string();
    const Provenance& pr = p->provenance;
    EXPECT_EQ(pr.basis.size(), basis_fields(p->spec.intra_chip_link.has_value()).size()) << g;
    for (const std::string& f : pr.fitted_parameters) EXPECT_EQ(pr.basis.at(f).basis, "fitted") << g << " " << f;
  }
  Result<HardwareProfile> v6e = profile_from_json(read(profile_file("v6e")), "v6e");
  ASSERT_TRUE(v6e.ok());
  for (const std::string& f : basis_fields(false)) {
    if (f.rfind("collective_latency.", 0) != 0) continue;
    const FieldBasis& b = v6e->provenance.basis.at(f);
    EXPECT_EQ(b.basis, "derived") << f;
    EXPECT_EQ(b.from.rfind("v5e ", 0), 0u) << f << " " << b.from;
    EXPECT_FALSE(b.rule.empty()) << f;
  }
}

TEST(HardwareProfile, MalformedBasisIsAnErrorNamingTheField) {
  Result<HardwareProfile> p = profile_from_json(read(profile_file("v5e")), "v5e");
  ASSERT_TRUE(p.ok());
  auto spoiled = [&](auto edit) {
    HardwareProfile q = *p;
    edit(q.provenance.basis);
    return error_of(profile_to_json(q));
  };
  const std::string missing = spoiled([](auto& b) { b.erase("hop_latency"); });
  EXPECT_NE(missing.find("missing field 'provenance.basis.hop_latency'"), std::string::npos) << missing;
  const std::string unknown = spoiled([](auto& b) { b["hop_latencies"] = {"nominal", "", ""}; });
  EXPECT_NE(unknown.find("unknown field 'provenance.basis.hop_latencies'"), std::string::npos) << unknown;
  const std::string guessed = spoiled([](auto& b) { b["hop_latency"].basis = "guessed"; });
  EXPECT_NE(guessed.find("expected fitted, derived or nominal"), std::string::npos) << guessed;
  // A derived figure without its rule and source is not derived.
  const std::string bare = spoiled([](auto& b) { b["hop_latency"] = {"derived", "v4 hop_latency", ""}; });
  EXPECT_NE(bare.find("'provenance.basis.hop_latency.rule' is required"), std::string::npos) << bare;
  // What the fit set is fitted; v5e's fit set its all-gather's fixed cost.
  const std::string lie = spoiled([](auto& b) { b["collective_latency.all-gather"].basis = "nominal"; });
  EXPECT_NE(lie.find("fitted_parameters lists it as fitted"), std::string::npos) << lie;
  const std::string chip = spoiled([](auto& b) { b["intra_chip_link"] = {"nominal", "", ""}; });
  EXPECT_NE(chip.find("the chip has no intra-chip link"), std::string::npos) << chip;
}

}  // namespace
}  // namespace aoizora::topo
