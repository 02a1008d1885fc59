"""One named sharding of one setting, compiled and simulated on its own, outside a plan: what
the published whole programs (calibration/programs/) and bench/recipe_step.py need.

    compile_candidate(model, video, frames, topology, candidate, blocks=None) -> str
        The compiled HLO text of `candidate` (a name strategies.enumerate_candidates gives,
        e.g. "dp2-ag4w") with the TPU target's attention kernel and `blocks` (q, kv,
        kv_compute; None: the searched ones), through the compile cache. UserError on an
        unknown model, setting or candidate, or a failed compile.
    default_order_split(hlo_text, topology, mesh, hardware=None) -> dict
        Simulated on JAX's default device order for `mesh` (a list of axis sizes): the step
        and where it goes (step_split.split), on the shipped profile or `hardware`.

Every time is simulated on the model of the chip, never measured.
"""

from __future__ import annotations

from aoizora.errors import UserError


def compile_candidate(model: str, video: str, frames: int, topology: str, candidate: str,
                      blocks: tuple | None = None) -> str:
    from aoizora import _core
    from aoizora.inputs import validate
    from aoizora.planning import kernels, strategies
    from aoizora.compile.batch import run_jobs
    from aoizora.compile.jobs import Job
    from aoizora.compile.cache import Cache

    cfg, wl = validate.workload(model, video, frames)
    n = _core.make_topology(topology).num_devices
    by = {c.name: c for c in strategies.enumerate_candidates(cfg, wl, n)}
    if candidate not in by:
        raise UserError(f"no candidate {candidate!r} of {model} on {topology}: one of "
                        f"{', '.join(sorted(by))}")
    cand = kernels.with_kernel(by[candidate], cfg, wl, "tpu", topology,
                               blocks=tuple(blocks) if blocks else None)
    [out] = run_jobs([Job("compile", cand, cfg, wl, topology)], cache=Cache())
    if not out.ok:
        raise UserError(f"{cand.name} did not compile for {topology}: {out.error}")
    return out.text


def default_order_split(hlo_text: str, topology: str, mesh: list[int],
                        hardware: str | None = None) -> dict:
    from aoizora import _core
    from aoizora.planning import step_split

    graph = _core.load_hlo(hlo_text)
    topo = _core.make_topology(topology, hardware or "")
    placement = _core.default_placement(topo, list(mesh))
    sim = _core.simulate(graph, topo, list(placement.device_of), top_contributors=-1)
    out = step_split.split(sim, graph)
    out["peak_flops_s"] = graph.total_flops / topo.spec["peak_flops"] * topo.spec.get(
        "cores_per_chip", 1)
    return out
