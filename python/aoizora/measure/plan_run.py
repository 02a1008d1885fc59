"""A saved plan run on real devices: its choice and each baseline it records, rebuilt with the
planner's own step (compiler.executable: the candidate's sharding, kernel and device order)
and random weights, timed beside the simulated time the plan holds.

    run(plan, platform, devs, repeats, trace_dir=None, progress=None) -> PlanRun
        plan: plan.Plan (plan_schema.load); devs: every device of `platform`. Pairs that are
        one program on one device order (a baseline that is the plan, "existing" and the
        recipe it names) run once and share the timing. A pair that fails (XLA refuses it,
        it does not fit) has its one-line error in its row; the others still run.
        trace_dir: a jax.profiler (XProf) trace of the whole run, each pair's timed calls
        under a TraceAnnotation naming it.

On CPU devices the TPU's Pallas splash kernel does not lower: such a pair runs the blockwise
attention kernel (kernels.with_kernel(..., platform="cpu")) and PlanRun.substitutions says
so, one line per kernel replaced naming the pairs. Timings there are XLA's CPU runtime, not
a TPU's.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field

from aoizora.errors import CompileError, UserError
from aoizora.measure import random_args, timing


@dataclass
class Row:
    label: str                  # "plan", or the baseline's tag ("existing", "alpa-style", ...)
    candidate: str
    placement: str
    planned_kernel: str
    kernel: str = ""            # the kernel that ran
    simulated_s: float | None = None   # from the plan (the simulator on its profile)
    measured: timing.Timing | None = None
    compile_s: float | None = None
    same_as: str = ""           # the label whose run this row shares (same program and order)
    error: str = ""

    def to_dict(self) -> dict:
        m = self.measured
        return {"label": self.label, "candidate": self.candidate, "placement": self.placement,
                "planned_kernel": self.planned_kernel, "kernel": self.kernel,
                "simulated_s": self.simulated_s,
                "measured_s": m.median_s if m else None,
                "measured": m.to_dict() if m else None,
                "measured_over_simulated": (m.median_s / self.simulated_s
                                            if m and self.simulated_s else None),
                "compile_s": self.compile_s, "same_run_as": self.same_as or None,
                "error": self.error or None}


@dataclass
class PlanRun:
    rows: list = field(default_factory=list)           # [Row]: the plan, then its baselines
    replaced: dict = field(default_factory=dict)       # planned kernel -> [labels run blockwise]
    notes: list = field(default_factory=list)          # [str]

    @property
    def substitutions(self) -> list:
        """[str]: what ran instead of the plan's kernels, one line per kernel replaced."""
        return [f"the {kernel} attention kernel is a TPU Pallas kernel that does not lower on "
                f"CPU devices; ran the blockwise kernel instead for {', '.join(labels)}"
                for kernel, labels in self.replaced.items()]


def model_and_workload(plan):
    """(ModelSpec, Video) of a plan, or (FunctionSpec, None) for a user's function spec."""
    from aoizora.inputs import user_model, validate
    from aoizora.models.base import FunctionSpec

    source = plan.model.get("source")
    model = user_model.load(source["reference"]) if isinstance(source, dict) else plan.model.get(
        "name")
    if isinstance(model, FunctionSpec):
        return model, None
    try:
        return validate.workload(model, plan.workload.get("video"), plan.workload.get("frames"))
    except UserError as e:
        raise UserError(f"the plan's model and workload: {e}") from None


def _pairs(plan) -> list:
    return [("plan", plan.choice)] + list(plan.baselines.items())


def _candidate(choice, model, workload, platform: str, label: str, run: PlanRun):
    """The choice's candidate, with the blockwise kernel on CPU devices (said in run)."""
    from aoizora.planning import kernels
    from aoizora.planning.strategies import Candidate

    try:
        c = Candidate.from_dict({"name": choice.candidate, **choice.strategy})
    except TypeError as e:
        raise UserError(f"{label}: the plan's strategy is not a sharding: {e}") from None
    if tuple(c.mesh_shape) != tuple(choice.mesh_shape):
        raise UserError(f"{label}: strategy mesh {c.mesh_shape} differs from the plan's mesh "
                        f"{tuple(choice.mesh_shape)}")
    if platform == "cpu" and c.kernel != "blockwise":
        run.replaced.setdefault(c.kernel, []).append(label)
        c = kernels.with_kernel(c, model, workload, "cpu")
    return c


def _run_pair(row: Row, c, choice, model, workload, devs, repeats: int) -> None:
    from jax.errors import JaxRuntimeError

    from aoizora.compile import compiler
    from aoizora.plan_format import mesh_from_coords

    mesh = mesh_from_coords(choice.device_coords, choice.mesh_shape, choice.axis_names, devs,
                            choice.chip_ids)
    t0 = time.perf_counter()
    try:
        exe, abstract = compiler.executable(c, model, workload, list(mesh.devices.flat))
        row.compile_s = time.perf_counter() - t0
        args = random_args.materialize(abstract)
        import jax

        with jax.profiler.TraceAnnotation(f"aoizora measure {row.label}: {c.name}"):
            row.measured = timing.time_call(exe, tuple(args), repeats)
    except CompileError as e:
        row.error = str(e)
    except JaxRuntimeError as e:   # at run time: out of memory, a device error
        row.error = f"{c.name}: run failed: {(str(e).strip().splitlines() or [''])[0][:200]}"


def _notes(plan, platform: str, devs: list) -> list:
    from aoizora.measure.local_slice import generation_of

    notes = []
    if plan.topology.get("compile_target", {}).get("platform") == "cpu":
        notes.append("the plan was compiled for CPU devices (--compile-target cpu): its "
                     "simulated times price XLA's CPU programs on the TPU model")
    gen = plan.topology.get("generation")
    if platform == "tpu" and gen and generation_of(devs[0].device_kind) != gen:
        notes.append(f"the plan was simulated on the {gen} model but these devices are "
                     f"{devs[0].device_kind}: measured and simulated are different chips")
    return notes


def run(plan, platform: str, devs: list, repeats: int, trace_dir: str | None = None,
        progress=None) -> PlanRun:
    import jax

    model, workload = model_and_workload(plan)
    out = PlanRun(notes=_notes(plan, platform, devs))
    pairs = _pairs(plan)
    if progress:
        progress.phase("compile and time each pair", len(pairs))
    done: dict = {}   # (program key, device order) -> the row that ran it
    tracing = jax.profiler.trace(trace_dir) if trace_dir else contextlib.nullcontext()
    with tracing:
        for label, choice in pairs:
            c = _candidate(choice, model, workload, platform, label, out)
            row = Row(label, choice.candidate, choice.placement,
                      choice.strategy.get("kernel", "blockwise"), c.kernel, choice.simulated_s)
            key = (repr(sorted(c.key().items())), tuple(map(tuple, choice.device_coords)))
            if key in done:
                twin = done[key]
                row.measured, row.compile_s, row.error = twin.measured, twin.compile_s, twin.error
                row.same_as = twin.label
            else:
                _run_pair(row, c, choice, model, workload, devs, repeats)
                done[key] = row
            out.rows.append(row)
            if progress:
                progress.advance(label)
    return out
