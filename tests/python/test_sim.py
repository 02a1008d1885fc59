"""The flow-level simulator (aoizora._core.simulate, `aoizora simulate`) on real compiled HLO:
the fixtures in tests/data/hlo and a program compiled here for v5e:2x4 under two device
orders. Checks structure and bounds that a wrong simulator would break: never below the
compute-only bound, every chip's time accounted for, volumes independent of extrapolation,
a trace Perfetto can read."""

from __future__ import annotations

import json
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from aoizora import _core, cli
from aoizora.compile import tpu

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "hlo")
with open(os.path.join(DATA, "MANIFEST.json")) as f:
    MANIFEST = json.load(f)
TPU_FIXTURES = sorted(n for n in MANIFEST if ".v5e_" in n)


def _chip_of(coords, dims):
    """Chip ids (x fastest, as topo::Topology numbers them) of device coords in mesh order."""
    return [c[0] + dims[0] * c[1] for c in coords]


def _check(result, device_of, graph):
    step = result.step_seconds
    assert step > 0
    assert step >= result.compute_bound_seconds * (1 - 1e-12)
    for c in device_of:
        t = result.chips[c]
        assert t.compute + t.comm + t.idle == pytest.approx(step, rel=1e-9)
        assert t.compute == pytest.approx(result.compute_bound_seconds, rel=1e-9)
    moved = sum(result.link_bytes)
    assert (moved > 0) == any(c.operand_bytes > 0 for c in graph.collectives)
    assert all(0 <= u <= 1 + 1e-9 for u in result.link_utilization)


@pytest.mark.parametrize("name", TPU_FIXTURES)
def test_fixtures_respect_bounds_and_extrapolate_exactly(name):
    entry = MANIFEST[name]
    topology = "v5e:2x4" if "2x4" in name else "v5e:4x4"
    dims = (2, 4) if "2x4" in name else (4, 4)
    graph = _core.load_hlo_file(os.path.join(DATA, name))
    device_of = _chip_of(entry["device_coords"], dims)
    fast = _core.simulate(graph, topology, device_of)
    full = _core.simulate(graph, topology, device_of, max_iterations=0)
    _check(fast, device_of, graph)
    _check(full, device_of, graph)
    assert fast.step_seconds == pytest.approx(full.step_seconds, rel=1e-9)
    assert fast.link_bytes == pytest.approx(full.link_bytes, rel=1e-9, abs=1e-3)
    if any(r.repeat > 3 for r in graph.regions):
        assert fast.extrapolated and fast.flows < full.flows


@pytest.mark.parametrize("name", TPU_FIXTURES)
def test_link_volumes_equal_q2(name):
    """The simulator plays the flows Q2 routes, so per-link byte totals agree exactly, under
    JAX's default placement and Q2's best one (they differ on time, not volume)."""
    topology = _core.make_topology("v5e:2x4" if "2x4" in name else "v5e:4x4")
    graph = _core.load_hlo_file(os.path.join(DATA, name))
    mesh = list(MANIFEST[name]["mesh"].values())
    ranking = _core.rank_placements(graph, topology, mesh, search_starts=0, max_axis_orders=50)
    for device_of in (list(_core.default_placement(topology, mesh).device_of),
                    list(ranking.ranked[0].device_of)):
        sim = _core.simulate(graph, topology, device_of)
        q2 = _core.evaluate_q2(graph, topology, device_of)
        assert sim.link_bytes == pytest.approx(list(q2.link_bytes), rel=1e-9, abs=1e-3)
        assert sim.compute_bound_seconds == pytest.approx(q2.compute_seconds, rel=1e-9)
        assert sim.step_seconds >= q2.compute_seconds


def test_overhead_and_latency_options_cost_time():
    graph = _core.load_hlo_file(os.path.join(DATA, "ring_alltoall.v5e_2x4.hlo"))
    device_of = list(range(8))
    base = _core.simulate(graph, "v5e:2x4", device_of, collective_overhead=0.0)
    slow = _core.simulate(graph, "v5e:2x4", device_of, collective_overhead=1e-3)
    runs = base.collectives
    assert runs > 0
    # Every collective run on the critical chain pays the overhead; at least one does.
    assert slow.step_seconds >= base.step_seconds + 1e-3 - 1e-12
    assert slow.step_seconds <= base.step_seconds + runs * 1e-3 + 1e-12
    with pytest.raises(_core.CoreError, match="unknown option"):
        _core.simulate(graph, "v5e:2x4", device_of, overhead=1)
    with pytest.raises(_core.CoreError, match="two partitions"):
        _core.simulate(graph, "v5e:2x4", [0] * 8)
    with pytest.raises(_core.CoreError):
        _core.simulate(graph, "v5e:9x9x9x9", device_of)


def _compiled_fsdp_scan(devices):
    """A 4-layer MLP under lax.scan with weights sharded over 'model' on their input dim (XLA
    reduce-scatters the partial products per layer) and activations over 'data', compiled
    for the given device order."""
    mesh = Mesh(np.array(devices).reshape(2, 4), ("data", "model"))
    layers, batch, dim = 4, 512, 1024

    def f(x, w):
        def body(h, wl):
            return jnp.tanh(h @ wl), None
        h, _ = jax.lax.scan(body, x, w)
        return h.sum()

    args = (jax.ShapeDtypeStruct((batch, dim), jnp.bfloat16,
                                 sharding=NamedSharding(mesh, P("data", None))),
            jax.ShapeDtypeStruct((layers, dim, dim), jnp.bfloat16,
                                 sharding=NamedSharding(mesh, P(None, "model", None))))
    compiled = jax.jit(f).lower(*args).compile()
    return compiled.as_text(), [tuple(d.coords) for d in mesh.devices.flat]


@pytest.fixture(scope="module")
def compiled_orders():
    devs = sorted(tpu.compile_only_devices("v5e:2x4"), key=lambda d: (d.coords[1], d.coords[0]))
    snake = []  # the 'model' rows as snakes over the 2x4 grid: ring-friendly
    by = {tuple(d.coords[:2]): d for d in devs}
    for y in range(4):
        xs = (0, 1) if y % 2 == 0 else (1, 0)
        snake += [by[(x, y)] for x in xs]
    return {"row-major": _compiled_fsdp_scan(devs), "snake": _compiled_fsdp_scan(snake)}


def test_program_compiled_here(compiled_orders, tmp_path):
    for order, (text, coords) in compiled_orders.items():
        graph = _core.load_hlo(text)
        assert graph.num_partitions == 8
        # The per-layer collective sits in the scanned loop (4 trips).
        assert any(c.repeat == 4 and c.operand_bytes > 0 for c in graph.collectives), order
        device_of = _chip_of(coords, (2, 4))
        trace = tmp_path / f"{order}.json"
        r = _core.simulate(graph, "v5e:2x4", device_of, trace=str(trace))
        _check(r, device_of, graph)
        assert r.critical_path and r.critical_path_seconds > 0
        doc = json.loads(trace.read_text())
        tracks = {e["tid"] for e in doc["traceEvents"] if e["ph"] == "X"}
        assert tracks == set(device_of)
        ends = [e["ts"] + e["dur"] for e in doc["traceEvents"] if e["ph"] == "X"]
        assert max(ends) == pytest.approx(r.step_seconds * 1e6, rel=1e-6)
        if sum(r.link_bytes) > 0:
            assert any(e["ph"] == "C" for e in doc["traceEvents"])


def test_cli_json_with_a_coords_file(compiled_orders, tmp_path, capsys):
    text, coords = compiled_orders["snake"]
    hlo = tmp_path / "prog.hlo"
    hlo.write_text(text)
    placement = tmp_path / "placement.json"
    placement.write_text(json.dumps({"device_coords": [list(c) for c in coords]}))
    trace = tmp_path / "trace.json"
    rc = cli.main(["simulate", "--hlo", str(hlo), "--topology", "v5e:2x4", "--placement",
                   str(placement), "--trace", str(trace), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["device_of"] == _chip_of(coords, (2, 4))
    direct = _core.simulate(_core.load_hlo(text), "v5e:2x4", out["device_of"])
    assert out["step_seconds"] == pytest.approx(direct.step_seconds, rel=1e-12)
    assert json.loads(trace.read_text())["traceEvents"]
    # JAX's default order and Q2's best for the compiled mesh shape.
    topology = _core.make_topology("v5e:2x4")
    for how, want in (("default", list(_core.default_placement(topology, [2, 4]).device_of)),
                      ("best", list(_core.rank_placements(_core.load_hlo(text), topology,
                                                          [2, 4]).ranked[0].device_of))):
        rc = cli.main(["simulate", "--hlo", str(hlo), "--topology", "v5e:2x4", "--placement",
                       how, "--mesh", "2x4", "--json"])
        assert rc == 0
        out = json.loads(capsys.readouterr().out)
        assert out["device_of"] == want and out["mesh_shape"] == [2, 4]
    # A placement of the wrong size is one clear line and exit 2.
    placement.write_text(json.dumps([list(c) for c in coords[:4]]))
    rc = cli.main(["simulate", "--hlo", str(hlo), "--topology", "v5e:2x4", "--placement",
                   str(placement)])
    assert rc == 2
    assert "compiled for 8" in capsys.readouterr().err
