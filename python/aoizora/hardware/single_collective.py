"""One collective on its own, as a micro-benchmark runs it: a hand-made compiled-HLO module
with a single synchronous collective, simulated on a topology (the same C++ simulator, and
so the same hardware profile, as every plan). Used by bench/fidelity.py to put the model
next to published measurements.

    hlo_text(kind, num_partitions, bytes_per_device, groups=None, pairs=None) -> str
        kind: all-gather, all-reduce, reduce-scatter, all-to-all, collective-permute.
        bytes_per_device: the input buffer of each device (an all-gather's shard, the
        operand of the others); a multiple of 4 (f32 elements). groups: replica groups of
        partition ids (collectives other than permute); pairs: [source, target] pairs.
    simulate(kind, topology, bytes_per_device, groups=None, pairs=None, hardware=None)
        -> seconds: the simulated time of one execution, partition i on chip i.

Raises ValueError on a kind it does not know or bytes that are not whole f32 elements.
"""

from __future__ import annotations

_REDUCER = """%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(%a, %b)
}
"""


def _groups(groups) -> str:
    return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"


def hlo_text(kind: str, num_partitions: int, bytes_per_device: int, groups=None,
             pairs=None) -> str:
    if bytes_per_device % 4:
        raise ValueError(f"bytes_per_device {bytes_per_device} is not a whole number of f32")
    n = bytes_per_device // 4
    k = len(groups[0]) if groups else 1
    common = "channel_id=1, use_global_device_ids=true"
    if kind == "all-gather":
        out, op = n * k, (f"all-gather(%p), {common}, replica_groups={_groups(groups)}, "
                          "dimensions={0}")
    elif kind == "all-reduce":
        out, op = n, f"all-reduce(%p), {common}, replica_groups={_groups(groups)}, to_apply=%add"
    elif kind == "reduce-scatter":
        out, op = n // k, (f"reduce-scatter(%p), {common}, replica_groups={_groups(groups)}, "
                           "dimensions={0}, to_apply=%add")
    elif kind == "all-to-all":
        # XLA's all-to-all takes no use_global_device_ids: its groups are always ids.
        out, op = n, (f"all-to-all(%p), channel_id=1, replica_groups={_groups(groups)}, "
                      "dimensions={0}")
    elif kind == "collective-permute":
        out, op = n, f"collective-permute(%p), channel_id=1, source_target_pairs={_groups(pairs)}"
    else:
        raise ValueError(f"unknown collective kind {kind!r}")
    return (f"HloModule single_collective, num_partitions={num_partitions}\n{_REDUCER}"
            f"ENTRY %e (p: f32[{n}]) -> f32[{out}] {{\n"
            f"  %p = f32[{n}]{{0}} parameter(0)\n"
            f"  ROOT %c = f32[{out}]{{0}} {op}\n}}\n")


def simulate(kind: str, topology: str, bytes_per_device: int, groups=None, pairs=None,
             hardware: str | None = None) -> float:
    from aoizora import _core

    topo = _core.make_topology(topology, hardware or "")
    text = hlo_text(kind, topo.num_devices, bytes_per_device, groups, pairs)
    graph = _core.load_hlo(text)
    return _core.simulate(graph, topo, list(range(topo.num_devices))).step_seconds
