// Python view of Stage 1 (stage1/, over shlo/): analyze_stablehlo(text, **options) ->
// Stage1Result (bound field for field), and the Top-K helpers.
#include <nanobind/stl/map.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/string_view.h>
#include <nanobind/stl/vector.h>

#include <string>

#include "aoizora/bind/bind.h"
#include "aoizora/compute/splash_kernel.h"
#include "aoizora/stage1/candidate_analysis.h"
#include "aoizora/stage1/top_k.h"

namespace nb = nanobind;

namespace aoizora::bind {

namespace {

stage1::Stage1Options options_from(const nb::kwargs& kw) {
  stage1::Stage1Options o;
  for (auto [k, v] : kw) {
    std::string key = nb::cast<std::string>(k);
    if (key == "topology") o.topology = nb::cast<std::string>(v);
    else if (key == "hardware") o.hardware = nb::cast<std::string>(v);
    else if (key == "peak_flops") o.chip.peak_flops = nb::cast<double>(v);
    else if (key == "hbm_bandwidth") o.chip.hbm_bandwidth = nb::cast<double>(v);
    else if (key == "hbm_bytes") o.chip.hbm_bytes = nb::cast<double>(v);
    else if (key == "link_bandwidth") o.chip.link_bandwidth = nb::cast<double>(v);
    else if (key == "alpha") o.chip.hop_latency = nb::cast<double>(v);
    else if (key == "hbm_usable_fraction") o.hbm_usable_fraction = nb::cast<double>(v);
    else if (key == "q1_on_placements") o.q1_on_placements = nb::cast<bool>(v);
    else if (key == "slice_dims") {
      auto d = nb::cast<std::vector<int>>(v);
      for (size_t i = 0; i < 3; ++i) o.slice_dims[i] = i < d.size() ? d[i] : 1;
    } else if (key == "slice_wrap") {
      auto w = nb::cast<std::vector<bool>>(v);
      for (size_t i = 0; i < 3; ++i) o.slice_wrap[i] = i < w.size() ? w[i] : false;
    } else throw nb::type_error(("analyze_stablehlo: unknown option '" + key + "'").c_str());
  }
  return o;
}

// The prediction DAG, one dict per node, for tests and the Stage 1 benches.
nb::list dag_nodes(const stage1::Stage1Result& r) {
  nb::list nodes;
  for (const shlo::DagNode& n : r.dag.nodes) {
    nb::dict x;
    bool comm = n.kind == shlo::DagNode::Kind::kComm;
    x["kind"] = comm ? "comm" : "compute";
    x["op"] = n.op;
    x["line"] = n.line;
    x["repeat"] = n.repeat;
    x["deps"] = n.deps;
    if (comm) {
      x["comm"] = std::string(shlo::to_string(n.comm));
      x["origin"] = std::string(shlo::to_string(n.origin));
      x["axes"] = shlo::axis_labels(n.axes);
      x["group_size"] = n.group_size;
      x["operand_bytes"] = n.operand_bytes;
      x["result_bytes"] = n.result_bytes;
      x["overlappable"] = n.overlappable;
    } else {
      x["flops"] = n.flops;
      x["bytes"] = n.bytes;
      x["opaque"] = n.opaque;
    }
    nodes.append(x);
  }
  return nodes;
}

// The result classes, field for field as stage1/candidate_analysis.h declares them (read and
// write, so tests can build one by hand).
void bind_results(nb::module_& m) {
  using stage1::PredictedCollective;
  nb::class_<PredictedCollective>(m, "PredictedCollective")
      .def(
          "__init__",
          [](PredictedCollective* c, std::string kind, std::vector<std::string> axes,
             int64_t group_size, double bytes, double executions, std::string origin) {
            new (c) PredictedCollective{std::move(kind), std::move(origin), std::move(axes),
                                        group_size, bytes, executions};
          },
          nb::arg("kind"), nb::arg("axes"), nb::arg("group_size"), nb::arg("bytes"),
          nb::arg("executions") = 1.0, nb::arg("origin") = "explicit")
      .def_rw("kind", &PredictedCollective::kind)
      .def_rw("origin", &PredictedCollective::origin)
      .def_rw("axes", &PredictedCollective::axes)
      .def_rw("group_size", &PredictedCollective::group_size)
      .def_rw("bytes", &PredictedCollective::bytes)
      .def_rw("executions", &PredictedCollective::executions)
      .def(
          "__eq__",
          [](const PredictedCollective& a, const PredictedCollective& b) {
            return a.kind == b.kind && a.origin == b.origin && a.axes == b.axes &&
                   a.group_size == b.group_size && a.bytes == b.bytes &&
                   a.executions == b.executions;
          },
          nb::is_operator())
      .def("__repr__", [](const PredictedCollective& c) {
        std::string axes;
        for (const std::string& a : c.axes) axes += (axes.empty() ? "" : ",") + a;
        return "PredictedCollective(" + c.kind + ", axes=" + axes + ", group_size=" +
               std::to_string(c.group_size) + ", bytes=" + std::to_string(c.bytes) +
               ", executions=" + std::to_string(c.executions) + ", " + c.origin + ")";
      });
  using stage1::Stage1Result;
  nb::class_<Stage1Result>(m, "Stage1Result")
      .def(nb::init<>())
      .def_rw("q1_seconds", &Stage1Result::q1_seconds)
      .def_rw("compute_seconds", &Stage1Result::compute_seconds)
      .def_rw("comm_seconds", &Stage1Result::comm_seconds)
      .def_rw("overlappable_comm_seconds", &Stage1Result::overlappable_comm_seconds)
      .def_rw("barrier_comm_seconds", &Stage1Result::barrier_comm_seconds)
      .def_rw("flops", &Stage1Result::flops)
      .def_rw("param_bytes", &Stage1Result::param_bytes)
      .def_rw("peak_activation_bytes", &Stage1Result::peak_activation_bytes)
      .def_rw("fits", &Stage1Result::fits)
      .def_rw("reject_reason", &Stage1Result::reject_reason)
      .def_rw("num_devices", &Stage1Result::num_devices)
      .def_rw("comm_bytes_by_kind", &Stage1Result::comm_bytes_by_kind)
      .def_rw("comm_count_by_kind", &Stage1Result::comm_count_by_kind)
      .def_rw("comm_bytes_by_origin", &Stage1Result::comm_bytes_by_origin)
      .def_rw("comm_seconds_by_axis", &Stage1Result::comm_seconds_by_axis)
      .def_rw("q1_placement", &Stage1Result::q1_placement)
      .def_rw("comm_bytes_by_axis", &Stage1Result::comm_bytes_by_axis)
      .def_rw("collectives", &Stage1Result::collectives)
      .def_rw("warnings", &Stage1Result::warnings)
      .def_prop_ro("num_nodes", [](const Stage1Result& r) { return r.dag.nodes.size(); })
      .def("dag_nodes", &dag_nodes, "The prediction DAG: one dict per node, in order.");
}

// Stage 1 of one StableHLO program, and its results.
void bind_analyze(nb::module_& m) {
  bind_results(m);
  m.def(
      "analyze_stablehlo",
      [](std::string_view text, nb::kwargs kw) {
        stage1::Stage1Options o = options_from(kw);
        std::string owned(text);
        Result<stage1::Stage1Result> r = Error{};
        {
          nb::gil_scoped_release release;
          r = stage1::analyze_stablehlo(owned, o);
        }
        return unwrap(std::move(r));
      },
      nb::arg("text"), nb::arg("kwargs"),
      "Stage 1 on StableHLO text -> Stage1Result: Q1 (seconds), memory per device, predicted\n"
      "communication (by kind, axis and origin, and 'collectives': one PredictedCollective per\n"
      "distinct collective), the prediction DAG (dag_nodes()).\n"
      "Options: topology ('v5e:4x4', sets chip figures, dims, wrap), peak_flops, hbm_bandwidth,\n"
      "hbm_bytes, link_bandwidth, alpha, hardware (a profile file), slice_dims, slice_wrap,\n"
      "hbm_usable_fraction. Raises CoreError with line:column on bad text.");
}

// The kernel cost models and the Top-K selection Stage 1 uses.
void bind_kernel_costs(nb::module_& m) {
  m.def(
      "splash_kernel_cost",
      [](double batch_heads, double q_len, double kv_len, double head_dim, double head_dim_v,
         double block_q, double block_kv, double block_kv_compute, double dtype_bytes,
         const nb::dict& chip) {
        // Operands q [BH, Sq, D], k [BH, Skv, D], v [BH, Skv, Dv], result o [BH, Sq, Dv]:
        // the shapes one kernel call sees (the block search prices its candidates with the
        // formula Stage 1 and the compiled-HLO model use).
        compute::SplashCall c;
        c.batch_heads = batch_heads;
        c.q_len = q_len;
        c.kv_len = kv_len;
        c.head_dim = head_dim;
        c.head_dim_v = head_dim_v;
        c.block_q = block_q;
        c.block_kv = block_kv;
        c.block_kv_compute = block_kv_compute;
        c.kv_bytes = batch_heads * kv_len * (head_dim + head_dim_v) * dtype_bytes;
        c.io_bytes = c.kv_bytes + batch_heads * q_len * (head_dim + head_dim_v) * dtype_bytes;
        topo::ChipSpec spec;  // one TensorCore's figures, as the dict gives them
        const auto figure = [&](const char* key, double fallback) {
          return chip.contains(key) ? nb::cast<double>(chip[key]) : fallback;
        };
        spec.peak_flops = figure("peak_flops", 0);
        spec.hbm_bandwidth = figure("hbm_bandwidth", 0);
        spec.mxu_size = static_cast<int>(figure("mxu_size", 128));
        spec.mxu_efficiency = figure("mxu_efficiency", 1);
        spec.vector_ops_per_second = figure("vector_ops_per_second", 0);
        spec.transcendentals_per_second = figure("transcendentals_per_second", 0);
        spec.grid_step_seconds = figure("grid_step_seconds", 0);
        const compute::SplashTime t = compute::splash_time(c, spec);
        nb::dict d;
        double mxu = 0;
        for (const compute::Matmul& mm : compute::splash_matmuls(c))
          mxu += compute::mxu_flops(mm, spec.mxu_size);
        d["flops"] = compute::splash_flops(c);
        d["mxu_flops"] = mxu;
        d["bytes"] = compute::splash_bytes(c);
        d["seconds"] = t.seconds;
        d["steps"] = t.steps;
        d["step_dma"] = t.dma;
        d["step_mxu"] = t.mxu;
        d["step_vector"] = t.vector;
        d["step_overhead"] = t.overhead;
        d["bound"] = compute::kernel_bound_name(t.bound);
        return d;
      },
      nb::arg("batch_heads"), nb::arg("q_len"), nb::arg("kv_len"), nb::arg("head_dim"),
      nb::arg("head_dim_v"), nb::arg("block_q"), nb::arg("block_kv") = 0,
      nb::arg("block_kv_compute") = 0, nb::arg("dtype_bytes") = 2, nb::arg("chip") = nb::dict(),
      "One splash-attention forward call (compute/splash_kernel.h) on lengths already padded\n"
      "to the blocks: flops, mxu_flops (padded to the MXU), HBM bytes, and its time on one\n"
      "TensorCore whose figures `chip` gives (peak_flops, hbm_bandwidth per core, mxu_size,\n"
      "mxu_efficiency, vector_ops_per_second, transcendentals_per_second, grid_step_seconds):\n"
      "seconds, steps, each resource's seconds per grid step (step_dma, step_mxu, step_vector,\n"
      "step_overhead) and the bound ('mxu', 'vpu/eup', 'hbm-dma' or 'step-overhead').");
  m.def("select_top_k", &stage1::select_top_k, nb::arg("q1"), nb::arg("k"),
        "Indices of the k lowest finite, non-negative Q1 values (stable); k <= 0 keeps all.");
  m.def("k_from_recall", &stage1::k_from_recall, nb::arg("winner_ranks"), nb::arg("min_k") = 1,
        nb::arg("slack") = 1,
        "Smallest K whose Top-K held the Stage-2 winner in every setting, plus slack.");
}

}  // namespace

void bind_stage1(nb::module_& m) {
  bind_analyze(m);
  bind_kernel_costs(m);
}

}  // namespace aoizora::bind
