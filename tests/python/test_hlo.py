"""The C++ HLO front end on HLO that JAX compiles in the test (deviceless TPU and CPU):
collective kinds, groups and bytes derived from the program, repeats of a scanned loop, FLOPs
against XLA's cost_analysis, and clear errors."""

from __future__ import annotations

import json
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from aoizora import _core
from aoizora.compile import tpu

ROWS, COLS, OUT = 256, 256, 512  # per-device block of x: [ROWS/2, COLS]; w: [COLS, OUT]


def _mesh(target: str) -> Mesh:
    devs = tpu.compile_only_devices("v5e:2x4") if target == "tpu" else tpu.cpu_devices(8)
    return Mesh(np.array(devs[:8]).reshape(2, 4), ("data", "model"))


def _collectives_program(mesh: Mesh):
    """Every collective kind once, explicitly, through shard_map."""
    n = mesh.shape["model"]

    def body(x, w):
        ag = jax.lax.all_gather(jnp.tanh(x), "model", axis=1, tiled=True)
        rs = jax.lax.psum_scatter(jnp.tanh(ag), "model", scatter_dimension=1, tiled=True)
        pp = jax.lax.ppermute(jnp.tanh(rs), "model", [(i, (i + 1) % n) for i in range(n)])
        a2a = jax.lax.all_to_all(jnp.tanh(pp), "model", 1, 1, tiled=True)
        ps = jax.lax.psum(jnp.tanh(a2a), "data")
        return ps @ w

    f = jax.shard_map(body, mesh=mesh, in_specs=(P("data", "model"), P()),
                      out_specs=P("data", "model"))
    args = (jax.ShapeDtypeStruct((ROWS, COLS * n), jnp.float32,
                                 sharding=NamedSharding(mesh, P("data", "model"))),
            jax.ShapeDtypeStruct((COLS, OUT), jnp.float32, sharding=NamedSharding(mesh, P())))
    return jax.jit(f).lower(*args).compile()


def _xla_flops(compiled) -> float:
    cost = compiled.cost_analysis()
    return (cost[0] if isinstance(cost, list) else cost)["flops"]


@pytest.fixture(scope="module", params=["tpu", "cpu"])
def compiled(request):
    return request.param, _collectives_program(_mesh(request.param))


def test_every_collective_with_groups_and_bytes(compiled):
    target, c = compiled
    g = _core.load_hlo(c.as_text())
    assert g.num_partitions == 8
    by_kind = {col.kind: col for col in g.collectives}
    assert sorted(by_kind) == ["all-gather", "all-reduce", "all-to-all", "collective-permute",
                               "reduce-scatter"]
    assert len(g.collectives) == 5
    shard = (ROWS // 2) * COLS * 4  # f32 bytes of one device's block
    model_groups = [[0, 1, 2, 3], [4, 5, 6, 7]]  # mesh.devices.flat order, 'model' minor
    ag = by_kind["all-gather"]
    assert (ag.operand_bytes, ag.result_bytes) == (shard, 4 * shard)
    assert ag.groups == model_groups
    rs = by_kind["reduce-scatter"]
    assert (rs.operand_bytes, rs.result_bytes) == (4 * shard, shard)
    assert rs.groups == model_groups
    pp = by_kind["collective-permute"]
    assert pp.operand_bytes == shard
    assert sorted(pp.source_target_pairs) == sorted(
        (4 * r + i, 4 * r + (i + 1) % 4) for r in range(2) for i in range(4))
    a2a = by_kind["all-to-all"]
    assert a2a.operand_bytes == a2a.result_bytes == shard
    assert a2a.groups == model_groups
    ar = by_kind["all-reduce"]
    assert ar.operand_bytes == shard
    assert ar.groups == [[0, 4], [1, 5], [2, 6], [3, 7]]
    assert g.collective_bytes_by_kind() == {"all-gather": shard, "reduce-scatter": 4 * shard,
                                            "collective-permute": shard, "all-to-all": shard,
                                            "all-reduce": shard}
    if target == "tpu":
        assert pp.async_  # the TPU compiler makes the permute a -start/-done pair
        ops = g.regions[pp.region].ops
        assert ops[pp.start_op].kind == "collective-start"
        assert ops[pp.done_op].kind == "collective-done"
    # The matmul dominates: 2 * (ROWS/2) * COLS * OUT per device, and XLA agrees within 5 %.
    assert g.total_flops == pytest.approx(2 * (ROWS // 2) * COLS * OUT, rel=0.05)
    assert g.static_flops == pytest.approx(_xla_flops(c), rel=0.05)


@pytest.mark.parametrize("target", ["tpu", "cpu"])
def test_scanned_layers_repeat_and_flops(target):
    mesh = _mesh(target)
    layers, d, f = 3, 512, 1024

    def fn(x, w1, w2):
        def layer(h, w):
            return h + jnp.tanh(h @ w[0]) @ w[1], None

        return jax.lax.scan(layer, x, (w1, w2))[0]

    spec = lambda shape, p: jax.ShapeDtypeStruct(shape, jnp.float32,  # noqa: E731
                                                 sharding=NamedSharding(mesh, p))
    args = (spec((256, d), P("data", None)), spec((layers, d, f), P(None, None, "model")),
            spec((layers, f, d), P(None, "model", None)))
    c = jax.jit(fn, out_shardings=NamedSharding(mesh, P("data", None))).lower(*args).compile()
    g = _core.load_hlo(c.as_text())
    body = [r for r in g.regions if r.repeat == layers]
    assert body and all(r.trip_count_known for r in g.regions)
    # One outer loop of the layer count, spanning the body's regions.
    outer = [lp for lp in g.loops if lp.parent == -1 and lp.trip_count == layers]
    assert len(outer) == 1 and outer[0].trip_count_known
    assert outer[0].first_region <= outer[0].last_region < len(g.regions)
    ars = [col for col in g.collectives if col.kind == "all-reduce"]
    assert len(ars) == 1 and ars[0].repeat == layers
    assert g.collective_bytes_by_kind()["all-reduce"] == layers * 128 * d * 4
    per_layer = 2 * (2 * 128 * d * (f // 4))  # two matmuls, 128 rows, model-sharded f
    assert g.total_flops == pytest.approx(layers * per_layer, rel=0.05)
    assert g.static_flops == pytest.approx(_xla_flops(c), rel=0.05)  # XLA counts a body once


def test_a_windowed_einsum_loop_counts_its_matmul_once():
    """TPU7x's compiler turns a matmul on a weight gathered over all 8 devices into a
    windowed einsum: a loop that receives two shards from each neighbour per trip and counts
    by 2. Its trips (two, not four) and so its FLOPs are those of the one matmul."""
    mesh = Mesh(np.array(tpu.compile_only_devices("tpu7x:2x2x1")), ("x",))
    rows, k, n = 65536, 256, 256  # big enough rows for the compiler to window it

    def fn(x, w):
        return x @ jax.lax.with_sharding_constraint(w, NamedSharding(mesh, P(None, None)))

    spec = lambda shape: jax.ShapeDtypeStruct(shape, jnp.bfloat16,  # noqa: E731
                                              sharding=NamedSharding(mesh, P("x", None)))
    text = jax.jit(fn, out_shardings=NamedSharding(mesh, P("x", None))).lower(
        spec((rows, k)), spec((k, n))).compile().as_text()
    g = _core.load_hlo(text)
    windowed = [lp for lp in g.loops if "windowed_dot_general" in lp.name]
    assert len(windowed) == 1 and windowed[0].trip_count_known
    assert windowed[0].trip_count == 2
    assert g.total_flops == pytest.approx(2 * (rows // 8) * k * n, rel=0.05)


def test_malformed_hlo_is_a_core_error_with_position():
    text = "HloModule m\n\nENTRY %e (p: f32[4]) -> f32[4] {\n  ROOT %p = f32[4]{0 parameter(0)\n}\n"
    with pytest.raises(_core.CoreError, match=r"^x\.hlo:4:\d+: expected"):
        _core.load_hlo(text, "x.hlo")
    with pytest.raises(_core.CoreError):
        _core.load_hlo_file("/nonexistent.hlo")


def test_inspect_cli_json(tmp_path):
    path = tmp_path / "m.hlo"
    path.write_text(_collectives_program(_mesh("cpu")).as_text())
    out = subprocess.run([sys.executable, "-m", "aoizora.cli", "inspect", "--hlo", str(path),
                          "--json"], capture_output=True, text=True, check=True).stdout
    import json

    summary = json.loads(out)
    assert summary["num_partitions"] == 8
    assert len(summary["collectives"]) == 5
    bad = tmp_path / "bad.hlo"
    bad.write_text("HloModule m\nENTRY e {\n")
    r = subprocess.run([sys.executable, "-m", "aoizora.cli", "inspect", "--hlo", str(bad)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "bad.hlo:3:1: expected" in r.stderr


def test_loop_of_unknown_trip_count_cannot_be_priced():
    """A data-dependent while loop compiles to a loop whose trip count XLA does not know:
    Stage 2 refuses to price it (counted once it would look many times cheaper)."""
    from aoizora.planning.stage2 import Stage2, UnknownTripCount

    mesh = _mesh("tpu")
    x = jax.ShapeDtypeStruct((256, 256), jnp.float32,
                             sharding=NamedSharding(mesh, P("data", "model")))

    def grow(v):
        return jax.lax.while_loop(lambda s: jnp.sum(s) < 1e6, lambda s: s * 2.0 + 1.0, v)

    text = jax.jit(grow).lower(x).compile().as_text()
    graph = _core.load_hlo(text)
    assert list(graph.unknown_trip_count_loops), "the loop's trip count should be unknown"
    with pytest.raises(UnknownTripCount, match="unknown trip count"):
        Stage2.load(text)


def test_rank_of_a_loop_of_unknown_trip_count_warns_and_records_it(tmp_path, capsys):
    """A user's HLO with such a loop is ranked, but the user is told it is counted once."""
    from aoizora import cli

    mesh = _mesh("tpu")
    x = jax.ShapeDtypeStruct((256, 256), jnp.float32,
                             sharding=NamedSharding(mesh, P("data", "model")))
    grow = jax.jit(lambda v: jax.lax.while_loop(lambda s: jnp.sum(s) < 1e6,
                                                lambda s: s * 2.0 + 1.0, v))
    path = tmp_path / "loop.hlo"
    path.write_text(grow.lower(x).compile().as_text())
    assert cli.main(["rank", "--hlo", str(path), "--topology", "v5e:2x4", "--json"]) == 0
    out = capsys.readouterr()
    assert "unknown trip count" in out.err and out.err.count("\n") == 1
    assert json.loads(out.out)["unknown_trip_count_loops"]

