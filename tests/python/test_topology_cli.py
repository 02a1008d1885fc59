"""`aoizora topology`, `aoizora rank` and the C++ `aoizora-rank` on real compiled HLO."""

import json
import os
import pathlib
import subprocess
import sys

import pytest

import aoizora.compile.jaxenv  # noqa: F401
from aoizora import _core, cli

HLO = pathlib.Path(__file__).resolve().parents[1] / "data" / "hlo"


def _run(capsys, *argv):
    rc = cli.main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_topology_json(capsys):
    rc, out, _ = _run(capsys, "topology", "v5e:4x4", "--json")
    assert rc == 0
    d = json.loads(out)
    assert d["num_links"] == 48 and d["dims"] == [4, 4, 1] and d["wrap"] == [False] * 3
    assert len(d["chips"]) == 16 and d["chips"][5] == [1, 1, 0]
    rc, out, _ = _run(capsys, "topology", "v5e:16x16")
    out = " ".join(out.split())   # a line longer than the terminal wraps at a space
    assert rc == 0 and "1024 directed links" in out and "wraparound: x, y" in out
    assert "MXU 128x128 at 100 % of its peak" in out        # v5e: not fitted, the roofline
    rc, out, _ = _run(capsys, "topology", "tpu7x:2x2x1")
    out = " ".join(out.split())
    fitted = _core.make_topology("tpu7x:2x2x1").spec["mxu_efficiency"]
    assert rc == 0 and f"MXU 256x256 at {100 * fitted:.4g} % of its peak" in out and fitted < 1


def test_topology_unknown_name_is_one_line_error(capsys):
    rc, _, err = _run(capsys, "topology", "v5e:3x3")
    assert rc == 2
    assert err.count("\n") == 1 and "did you mean 'v5e:" in err and "topology --list" in err


@pytest.mark.parametrize("argv, close", [
    (["topology", "v5e:2x5"], "'v5e:2x4'"),
    (["topology", "v5e-8"], "did you mean 'v5e:2x4'"),          # Cloud's name: 8 chips
    (["rank", "--hlo", str(HLO / "matmul.v5e_2x4.hlo"), "--topology", "v6e:2x4x1"], "'v6e:2x4'"),
    (["plan", "--model", "wan2.1-1.3b", "--topology", "v5e:2x4"], "'wan2.1-t2v-1.3b'"),
])
def test_an_unknown_name_suggests_the_closest_not_every_one(argv, close, capsys):
    rc, _, err = _run(capsys, *argv)
    assert rc == 2 and err.count("\n") == 1, err
    assert "did you mean" in err and close in err, err
    # Not the catalog on one line (52 slices) nor every preset.
    assert "tpu7x:16x16x16" not in err and "wan2.2-i2v-a14b" not in err, err


def test_topology_list_gives_devices_and_deviceless_compile(capsys):
    rc, out, _ = _run(capsys, "topology", "--list", "--json")
    assert rc == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert set(rows) == set(_core.catalog_names())
    assert (rows["tpu7x:2x2x1"]["chips"], rows["tpu7x:2x2x1"]["devices"]) == (4, 8)
    assert (rows["v5e:2x4"]["chips"], rows["v5e:2x4"]["devices"]) == (8, 8)
    assert all(r["deviceless"] and not r["why_not"] for r in rows.values())
    rc, out, _ = _run(capsys, "topology", "--list")
    line = next(l for l in out.splitlines() if l.startswith("tpu7x:2x2x1 "))
    assert line.split() == ["tpu7x:2x2x1", "4", "8", "yes"]


def test_rank_json_on_real_hlo(capsys):
    rc, out, _ = _run(capsys, "rank", "--hlo", str(HLO / "ring_alltoall.v5e_2x4.hlo"),
                      "--topology", "v5e:2x4", "--json", "--top", "50")
    assert rc == 0
    d = json.loads(out)
    q = [r["q2_seconds"] for r in d["ranked"]]
    assert q == sorted(q) and len(q) >= 8
    assert d["mesh"] == [2, 4] and d["default"] is not None
    assert d["best_over_default"] == pytest.approx(d["default"]["q2_seconds"] / q[0])
    # Every listed Q2 is what evaluate_q2 gives for that placement.
    g = _core.load_hlo_file(str(HLO / "ring_alltoall.v5e_2x4.hlo"))
    for r in d["ranked"][:5]:
        assert _core.evaluate_q2(g, "v5e:2x4", r["device_of"]).seconds == pytest.approx(r["q2_seconds"])
    # The default is JAX's tray ring on v5e-8.
    assert d["default"]["device_coords"][4] == [1, 3, 0]


def test_rank_mesh_option_and_errors(capsys):
    rc, out, _ = _run(capsys, "rank", "--hlo", str(HLO / "matmul.v5e_4x4.hlo"),
                      "--topology", "v5e:4x4", "--mesh", "2x8", "--json", "--search-starts", "0")
    assert rc == 0 and json.loads(out)["mesh"] == [2, 8]
    rc, _, err = _run(capsys, "rank", "--hlo", str(HLO / "matmul.v5e_4x4.hlo"),
                      "--topology", "v5e:4x4", "--mesh", "2x4")
    assert rc == 2 and "8 devices" in err
    rc, _, err = _run(capsys, "rank", "--hlo", str(HLO / "matmul.v5e_4x4.hlo"),
                      "--topology", "v5e:2x4")
    assert rc == 2 and "16 partitions" in err


def _tool():
    so = pathlib.Path(_core.__file__).resolve()
    for exe in (so.parent.parent.parent / "aoizora-rank",  # build/<dir>/pyroot/aoizora/_core.so
                pathlib.Path(sys.executable).parent / "aoizora-rank"):  # installed into .venv/bin
        if exe.exists():
            return exe
    return None


@pytest.mark.skipif(_tool() is None, reason="aoizora-rank neither built next to _core nor installed")
def test_cpp_tool_matches_python(capsys):
    hlo = str(HLO / "layers_scan.v5e_4x4.hlo")
    # Without --mesh both take the program's own mesh (2x8), not the slice's shape (4x4).
    out = subprocess.run([str(_tool()), "--hlo", hlo, "--topology", "v5e:4x4", "--json"],
                         capture_output=True, text=True, check=True).stdout
    tool = json.loads(out)
    rc, py, _ = _run(capsys, "rank", "--hlo", hlo, "--topology", "v5e:4x4", "--json")
    py = json.loads(py)
    assert tool["mesh"] == py["mesh"] == [2, 8]
    assert tool["default"]["q2_seconds"] == pytest.approx(py["default"]["q2_seconds"])
    assert [r["name"] for r in tool["ranked"]] == [r["name"] for r in py["ranked"]]
    assert tool["ranked"][0]["q2_seconds"] == pytest.approx(py["ranked"][0]["q2_seconds"])


@pytest.mark.skipif(_tool() is None, reason="aoizora-rank neither built next to _core nor installed")
@pytest.mark.parametrize("name", sorted(p.name for p in HLO.glob("*.hlo")))
def test_cpp_tool_and_rank_take_the_same_default_mesh(name):
    from aoizora.compile import compiled_program

    text, graph = compiled_program.load(str(HLO / name))
    slice_name = {8: "v5e:2x4", 16: "v5e:4x4"}.get(graph.num_partitions)
    if slice_name is None:
        pytest.skip(f"{name}: {graph.num_partitions} partitions")
    out = subprocess.run([str(_tool()), "--hlo", str(HLO / name), "--topology", slice_name,
                          "--json", "--top", "1", "--search-starts", "0"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["mesh"] == compiled_program.own_mesh(text, graph.num_partitions)
