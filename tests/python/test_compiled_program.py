"""compiled_program.py, what `rank` and `simulate` share: a program must span the slice
(one check, one message, every placement), and without --mesh both take the program's own
mesh, read from its shardings (HLO text in raw strings; the fixtures' MANIFEST.json records
the mesh each was compiled on)."""

from __future__ import annotations

import json
import pathlib

import pytest

from aoizora import cli
from aoizora.compile import compiled_program
from aoizora.errors import UserError

HLO = pathlib.Path(__file__).resolve().parents[1] / "data" / "hlo"
MANIFEST = json.loads((HLO / "MANIFEST.json").read_text())
HLO8 = str(HLO / "ring_alltoall.v5e_2x4.hlo")


def _run(capsys, *argv):
    rc = cli.main([str(a) for a in argv])
    out = capsys.readouterr()
    return rc, out.out, out.err


@pytest.mark.parametrize("name", sorted(n for n in MANIFEST if (HLO / n).exists()))
def test_own_mesh_is_the_mesh_each_fixture_was_compiled_on(name):
    text, graph = compiled_program.load(str(HLO / name))
    want = [s for s in MANIFEST[name]["mesh"].values() if s > 1]
    assert compiled_program.own_mesh(text, graph.num_partitions) == want


@pytest.mark.parametrize("text, partitions, mesh", [
    # Two shardings, each fusing a different pair of a 2x2x2 mesh's axes.
    ("sharding={devices=[2,4]<=[8]} sharding={devices=[4,2]<=[8]}", 8, [2, 2, 2]),
    # A transposed iota names the mesh it was built from; a replicated last dim counts.
    ("sharding={devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}", 8, [2, 4]),
    ("sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}", 8, [2, 4]),
    # Splits that are no chain of divisors, or no tiled sharding at all: one axis.
    ("sharding={devices=[2,3]<=[6]} sharding={devices=[3,2]<=[6]}", 6, [6]),
    ("sharding={replicated}", 8, [8]),
])
def test_own_mesh_is_the_common_refinement_of_the_shardings(text, partitions, mesh):
    assert compiled_program.own_mesh(text, partitions) == mesh


TWO_BY_TWO_BY_TWO = "sharding={devices=[2,4]<=[8]} sharding={devices=[4,2]<=[8]}"


@pytest.mark.parametrize("mesh, missing", [("4x2", "at 2: use 2x2x2"),
                                           ("1x8", "at 2, 4: use 2x2x2"),
                                           ("2x4", "at 4: use 2x2x2")])
def test_a_mesh_the_shardings_do_not_allow_is_refused_with_the_ones_they_do(mesh, missing):
    with pytest.raises(UserError) as e:
        compiled_program.mesh_shape(mesh, TWO_BY_TWO_BY_TWO, 8)
    assert str(e.value) == (f"--mesh {mesh}: the program's shardings split its 8 devices at "
                            f"2, 4 (its mesh 2x2x2), {mesh} does not split them {missing}")


@pytest.mark.parametrize("text, mesh", [
    (TWO_BY_TWO_BY_TWO, "2x2x2"), (TWO_BY_TWO_BY_TWO, "2x1x2x2"),   # size 1 leaves no trace
    ("sharding={devices=[2,1,4]<=[8] last_tile_dim_replicate}", "2x2x2"),   # 2x4, split
    ("sharding={replicated}", "4x2"),                                # nothing to go by
])
def test_a_mesh_the_shardings_allow_is_taken(text, mesh):
    assert compiled_program.mesh_shape(mesh, text, 8) == [int(s) for s in mesh.split("x")]


def test_the_allowed_meshes_are_listed_where_they_are_several():
    with pytest.raises(UserError, match=r"use 2x4 or 2x2x2$"):
        compiled_program.mesh_shape("8", "sharding={devices=[2,4]<=[8]}", 8)
    with pytest.raises(UserError, match=r"use 2x16 or 2x8x2 or 2x4x4 or 2x4x2x2 or another "
                                        r"that splits its axes further$"):
        compiled_program.mesh_shape("32", "sharding={devices=[2,16]<=[32]}", 32)


def test_rank_refuses_a_mesh_its_program_does_not_allow(capsys):
    # matmul.v5e_2x4 was compiled on 2x4: 4x2 has as many devices, and is another mesh.
    rc, _, err = _run(capsys, "rank", "--hlo", HLO / "matmul.v5e_2x4.hlo", "--topology",
                      "v5e:2x4", "--mesh", "4x2")
    assert rc == 2 and err.count("\n") == 1 and "use 2x4 or 2x2x2" in err, err


def test_a_program_smaller_than_the_slice_is_refused_with_both_numbers():
    from aoizora import _core

    with pytest.raises(UserError, match="compiled for 8 partitions but v5e:4x4 has 16 devices"):
        compiled_program.check_spans(8, _core.make_topology("v5e:4x4"))


@pytest.mark.parametrize("command", [
    ["rank"], ["simulate", "--placement", "row-major"], ["simulate", "--placement", "default"],
    ["simulate", "--placement", "best"], ["simulate", "--placement", "COORDS"]])
def test_rank_and_simulate_refuse_a_program_smaller_than_the_slice_alike(command, tmp_path,
                                                                         capsys):
    coords = tmp_path / "coords.json"
    coords.write_text(json.dumps([[x, y, 0] for y in range(4) for x in range(2)]))
    argv = [str(coords) if a == "COORDS" else a for a in command]
    rc, out, err = _run(capsys, *argv, "--hlo", HLO8, "--topology", "v5e:4x4")
    assert rc == 2 and err.count("\n") == 1, err
    assert "compiled for 8 partitions but v5e:4x4 has 16 devices" in err


def test_rank_and_simulate_best_take_the_same_default_mesh_and_placement(capsys):
    hlo = HLO / "ring_alltoall.v5e_4x4.hlo"
    rc, out, _ = _run(capsys, "rank", "--hlo", hlo, "--topology", "v5e:4x4", "--json")
    assert rc == 0
    ranked = json.loads(out)
    rc, out, _ = _run(capsys, "simulate", "--hlo", hlo, "--topology", "v5e:4x4", "--placement",
                      "best", "--json")
    assert rc == 0
    simulated = json.loads(out)
    # The program's own mesh (2x8, as compiled), not the slice's 4x4 nor one axis of 16.
    assert ranked["mesh"] == simulated["mesh_shape"] == [2, 8]
    assert simulated["device_of"] == ranked["ranked"][0]["device_of"]
