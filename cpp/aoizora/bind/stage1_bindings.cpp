// Python view of Stage 1 (stage1/, over shlo/): analyze_stablehlo(text, **options) -> dict, and the
// Top-K helpers. A dict keeps the result JSON-ready for the planner's report.
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

stage1::Stage1Options options_from(const nb::kwargs& kw, bool* nodes) {
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
    else if (key == "slice_dims") {
      auto d = nb::cast<std::vector<int>>(v);
      for (size_t i = 0; i < 3; ++i) o.slice_dims[i] = i < d.size() ? d[i] : 1;
    } else if (key == "slice_wrap") {
      auto w = nb::cast<std::vector<bool>>(v);
      for (size_t i = 0; i < 3; ++i) o.slice_wrap[i] = i < w.size() ? w[i] : false;
    } else if (key == "nodes") *nodes = nb::cast<bool>(v);
    else throw nb::type_error(("analyze_stablehlo: unknown option '" + key + "'").c_str());
  }
  return o;
}

nb::dict to_dict(const stage1::Stage1Result& r, bool with_nodes) {
  nb::dict d;
  d["q1_seconds"] = r.q1_seconds;
  d["compute_seconds"] = r.compute_seconds;
  d["comm_seconds"] = r.comm_seconds;
  d["overlappable_comm_seconds"] = r.overlappable_comm_seconds;
  d["barrier_comm_seconds"] = r.barrier_comm_seconds;
  d["flops"] = r.flops;
  d["param_bytes"] = r.param_bytes;
  d["peak_activation_bytes"] = r.peak_activation_bytes;
  d["fits"] = r.fits;
  d["reject_reason"] = r.reject_reason;
  d["num_devices"] = r.num_devices;
  d["comm_bytes_by_kind"] = r.comm_bytes_by_kind;
  d["comm_count_by_kind"] = r.comm_count_by_kind;
  d["comm_bytes_by_origin"] = r.comm_bytes_by_origin;
  d["comm_seconds_by_axis"] = r.comm_seconds_by_axis;
  d["comm_bytes_by_axis"] = r.comm_bytes_by_axis;
  nb::list collectives;
  for (const stage1::PredictedCollective& c : r.collectives) {
    nb::dict x;
    x["kind"] = c.kind;
    x["origin"] = c.origin;
    x["axes"] = c.axes;
    x["group_size"] = c.group_size;
    x["bytes"] = c.bytes;
    x["executions"] = c.executions;
    collectives.append(x);
  }
  d["collectives"] = collectives;
  d["warnings"] = r.warnings;
  d["num_nodes"] = r.dag.nodes.size();
  if (with_nodes) {
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
        x["axes"] = n.axes;
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
    d["nodes"] = nodes;
  }
  return d;
}

}  // namespace

void bind_stage1(nb::module_& m) {
  m.def(
      "analyze_stablehlo",
      [](std::string_view text, nb::kwargs kw) {
        bool nodes = false;
        stage1::Stage1Options o = options_from(kw, &nodes);
        std::string owned(text);
        Result<stage1::Stage1Result> r = Error{};
        {
          nb::gil_scoped_release release;
          r = stage1::analyze_stablehlo(owned, o);
        }
        return to_dict(unwrap(std::move(r)), nodes);
      },
      nb::arg("text"), nb::arg("kwargs"),
      "Stage 1 on StableHLO text: Q1 (seconds), memory per device, predicted communication\n"
      "(by kind, axis and origin, and 'collectives': one dict per distinct collective with\n"
      "kind, origin, axes, group_size, bytes (V per device) and executions).\n"
      "Options: topology ('v5e:4x4', sets chip figures, dims, wrap), peak_flops, hbm_bandwidth,\n"
      "hbm_bytes, link_bandwidth, alpha, hardware (a profile file), slice_dims, slice_wrap, hbm_usable_fraction,\n"
      "nodes (include the prediction DAG). Raises CoreError with line:column on bad text.");
  m.def(
      "splash_kernel_cost",
      [](double batch_heads, double q_len, double kv_len, double head_dim, double head_dim_v,
         double block_q, double dtype_bytes, int mxu_size) {
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
        c.kv_bytes = batch_heads * kv_len * (head_dim + head_dim_v) * dtype_bytes;
        c.io_bytes = c.kv_bytes + batch_heads * q_len * (head_dim + head_dim_v) * dtype_bytes;
        nb::dict d;
        double mxu = 0;
        for (const compute::Matmul& mm : compute::splash_matmuls(c)) mxu += compute::mxu_flops(mm, mxu_size);
        d["flops"] = compute::splash_flops(c);
        d["mxu_flops"] = mxu;
        d["bytes"] = compute::splash_bytes(c);
        return d;
      },
      nb::arg("batch_heads"), nb::arg("q_len"), nb::arg("kv_len"), nb::arg("head_dim"),
      nb::arg("head_dim_v"), nb::arg("block_q"), nb::arg("dtype_bytes") = 2,
      nb::arg("mxu_size") = 128,
      "FLOPs, MXU FLOPs (its matmuls padded to an MXU of mxu_size, compute/mxu.h) and HBM bytes\n"
      "of one splash-attention forward call (compute/splash_kernel.h) on lengths already padded\n"
      "to the blocks.");
  m.def("select_top_k", &stage1::select_top_k, nb::arg("q1"), nb::arg("k"),
        "Indices of the k lowest finite, non-negative Q1 values (stable); k <= 0 keeps all.");
  m.def("k_from_recall", &stage1::k_from_recall, nb::arg("winner_ranks"), nb::arg("min_k") = 1,
        nb::arg("slack") = 1,
        "Smallest K whose Top-K held the Stage-2 winner in every setting, plus slack.");
}

}  // namespace aoizora::bind
