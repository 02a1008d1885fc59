"""The serving survey of a model on one or more slices: every split of each slice into
replicas (splits.py), each replica shape planned once by the planner, its seconds per video
turned into videos per hour and USD per video (prices.py), the rows set on the frontier
(frontier.py).

    request = Request(model, video, frames, topologies, prices, batches=(1,), steps=30)
    check(request) -> {topology: [Split]}     UserError, before any work, on bad input
    survey(request, settings, progress_for=None, log=None) -> Survey
    row_of(request, split, batch, replica_plan, together=None) -> frontier.Row
    replica_key(shape, batch) -> str           Survey.replicas' key: "v5e:2x4", "v5e:2x4 batch 2"
    simulate_together(split, program, slice_topology) -> together.Together

A replica shape is a catalog slice, planned as `aoizora plan` plans it (planner.plan with
`settings`: cache, executor, compile target, top-k); one shape serving several splits or
slices is planned once per batch, and the compile cache makes a shape planned before cheap.
Seconds per call: the plan's own (plan.video["seconds"]: text encoding, the denoising steps,
VAE decode and reshards, simulated) where the planner priced the whole video; else `steps`
x the plan's simulated forward, labelled "transformer steps only". A batch B is its own
plan (`aoizora plan --batch B`: every program compiled at the batch 2B, the sharding chosen
for it), so a row at batch B carries that plan's seconds per call of B videos; nothing is
scaled from another batch.

Splits whose replicas provably share no link (splits.py) are priced replica by replica, and
the row says why. Splits whose replicas could share links (a cut wraparound axis) are
simulated together (together.py): the replica's forward copied onto every box of the slice
at once, each replica's latency the slowest replica's; its denoising steps take that forward
instead of the plan's alone, the stages around the loop (text encoder, VAE decode, reshards)
keep the plan's figures, priced alone. The row says which was done.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable

from aoizora.errors import NoFitError, UserError
from aoizora.serving import frontier, splits, together
from aoizora.serving.frontier import Row
from aoizora.serving.prices import PriceTable

TRANSFORMER_ONLY = "transformer steps only"


@dataclass(frozen=True)
class Request:
    model: str
    video: str
    frames: int | None
    topologies: tuple[str, ...]        # catalog slices ("v5e:4x4", "tpu7x:2x2x2")
    prices: PriceTable
    batches: tuple[int, ...] = (1,)    # videos per replica call; each its own replica plan
    steps: int = 30                    # denoising steps, where a plan has no seconds per video


@dataclass(frozen=True)
class ReplicaPlan:
    """What the plan of one replica shape gives serving."""

    planned_as: str                    # the catalog slice planned ("v5e:2x4")
    latency_s: float | None = None     # seconds per call of `batch` videos; None: no plan
    scope: str = ""                    # what latency_s covers
    plan: str = ""                     # "sharding @ placement"
    error: str = ""                    # why there is no plan
    step_s: float | None = None        # one forward, simulated alone on planned_as, seconds
    steps: int = 0                     # forwards latency_s counts (the denoising steps)
    # latency_s's 90 % interval across joint draws of the model, relative to latency_s
    # ((low, high) / latency_s: confidence.py); None for a plan made without draws
    relative_interval: tuple[float, float] | None = None
    batch: int = 1                     # videos per call the plan was made for


@dataclass
class Survey:
    rows: list[Row]
    splits: dict[str, list[splits.Split]]
    replicas: dict[str, ReplicaPlan]    # replica_key(shape, batch) -> its plan
    notes: list[str] = field(default_factory=list)   # what the figures are not, in words


def check(request: Request) -> dict[str, list[splits.Split]]:
    """The workload, the slices and the batches, checked before any work: the splits of
    each slice. UserError (one line) on bad input."""
    from aoizora.inputs import validate

    validate.workload(request.model, request.video, request.frames)
    if not request.topologies:
        raise UserError("--topology: name at least one slice (v5e:4x4, ...)")
    if request.steps < 1:
        raise UserError(f"--steps {request.steps}: a video takes at least one denoising step")
    if not request.batches:
        raise UserError("--batch: name at least one batch (1, or 1,2,4)")
    bad = [b for b in request.batches if b < 1]
    if bad:
        raise UserError(f"--batch {bad[0]}: videos per call must be a whole number >= 1")
    return {t: splits.enumerate_splits(t) for t in dict.fromkeys(request.topologies)}


def survey(request: Request, settings, progress_for: Callable[[str], Any] | None = None,
           log: Callable[[str], None] | None = None) -> Survey:
    """Plans every replica shape of every split once per batch (module doc), simulates
    together the replicas of each split that could share links, and returns every split's
    rows. `settings`: planner.Settings; progress_for(slice) -> a context manager giving the
    planner's Progress for that plan; log(line) for what happens between."""
    log = log or (lambda line: None)
    by_slice = check(request)
    shapes = list(dict.fromkeys(s.planned_as for ss in by_slice.values() for s in ss))
    batches = list(dict.fromkeys(request.batches))
    todo = [(shape, b) for shape in shapes for b in batches]
    replicas: dict[str, ReplicaPlan] = {}
    programs: dict[str, together.Program | None] = {}
    for i, (shape, b) in enumerate(todo, 1):
        key = replica_key(shape, b)
        log(f"[{i}/{len(todo)}] planning a replica on {key}")
        with progress_for(shape) if progress_for else nullcontext() as progress:
            replicas[key], programs[key] = plan_replica(request, shape, settings, progress, b)
        r = replicas[key]
        per = "video" if b == 1 else f"call of {b}"
        log(f"[{i}/{len(todo)}] {key}: " + (f"{r.plan}, {r.latency_s:.4g} s per {per} "
                                            f"({r.scope})" if r.error == "" else r.error))
    runs = _together_runs(by_slice, programs, batches, getattr(settings, "hardware", None),
                          log)
    rows = [row_of(request, s, b, replicas.get(replica_key(s.planned_as, b)), runs.get((s, b)))
            for ss in by_slice.values() for s in ss for b in request.batches]
    return Survey(rows, by_slice, replicas, _notes(request, by_slice, replicas))


def replica_key(shape: str, batch: int) -> str:
    """The key of a replica plan: its catalog slice, and its batch where it is not 1."""
    return shape if batch == 1 else f"{shape} batch {batch}"


def _together_runs(by_slice, programs, batches, hardware: str | None,
                   log) -> dict[tuple[splits.Split, int], together.Together]:
    """(split, batch) -> its replicas simulated together, for every split that could share
    links and whose replica shape has a plan at that batch."""
    from aoizora.inputs import topology_file

    runs: dict[tuple[splits.Split, int], together.Together] = {}
    for name, ss in by_slice.items():
        shared = [(s, b) for s in ss for b in batches
                  if s.shares_links and programs.get(replica_key(s.planned_as, b))]
        if not shared:
            continue
        # The slice with the chip figures the replicas were planned with.
        topology = topology_file.load(name, hardware=hardware)
        for s, b in shared:
            log(f"{name}: simulating {s.describe()}" + (f" at batch {b}" if b != 1 else "")
                + " together")
            runs[s, b] = simulate_together(s, programs[replica_key(s.planned_as, b)],
                                           topology)
    return runs


def simulate_together(s: splits.Split, program: together.Program,
                      slice_topology) -> together.Together:
    """The replicas of split `s` run at once on the slice: `program` (the replica shape's
    plan) copied into every box."""
    orders = together.device_orders(s, program, slice_topology)
    return together.simulate(program.graph, slice_topology, orders)


def plan_replica(request: Request, shape: str, settings, progress=None,
                 batch: int = 1) -> tuple[ReplicaPlan, together.Program | None]:
    """The plan of one replica on the catalog slice `shape` serving `batch` videos per call,
    as serving reads it, and its program for simulating replicas together; a plan the
    planner refuses (nothing fits, every candidate failed) is a ReplicaPlan with the reason
    and no program."""
    from aoizora.planning.planner import plan

    try:
        result = plan(request.model, request.video, request.frames, shape, settings, progress,
                      batch=batch)
    except NoFitError as e:
        return ReplicaPlan(shape, error=f"no sharding fits: {e}", batch=batch), None
    except UserError as e:
        return ReplicaPlan(shape, error=str(e), batch=batch), None
    seconds, scope = seconds_per_video(result.plan, request.steps)
    c = result.plan.choice
    steps = (result.plan.video or {}).get("steps") if not scope.startswith(TRANSFORMER_ONLY) \
        else request.steps
    program = together.Program(result.graph, result.topology, tuple(c.chip_ids), c.simulated_s)
    return ReplicaPlan(shape, seconds, scope, f"{c.candidate} @ {c.placement}",
                       step_s=c.simulated_s, steps=int(steps or 0),
                       relative_interval=_relative_interval(result.plan, scope),
                       batch=batch), program


def _relative_interval(plan, scope: str) -> tuple[float, float] | None:
    """The interval of the plan's figure that latency_s is (per video, or its forward for
    transformer steps only) over its point figure; None without joint draws."""
    if "draws" not in (plan.uncertainty or {}):
        return None
    iv = (plan.choice.extra.get("interval") or {}).get(
        "forward" if scope.startswith(TRANSFORMER_ONLY) else "video")
    if not iv or not iv["point_s"]:
        return None
    return iv["low_s"] / iv["point_s"], iv["high_s"] / iv["point_s"]


def seconds_per_video(plan, steps: int) -> tuple[float, str]:
    """(seconds per call, what they cover) of a plan (plan_format.Plan): its own figure for
    the whole call where the planner priced it (plan.video["seconds"]: per call of the
    plan's videos; one video at batch 1), else `steps` simulated forwards."""
    video = getattr(plan, "video", None) or {}
    if video.get("seconds") is not None:
        n = video.get("steps")
        return float(video["seconds"]), (f"video: text encoder, {n} steps, VAE decode, "
                                         "reshards" if n else "video")
    return steps * plan.choice.simulated_s, f"{TRANSFORMER_ONLY} ({steps} x one forward)"


def row_of(request: Request, s: splits.Split, batch: int, replica: ReplicaPlan | None,
           run: together.Together | None = None) -> Row:
    """The row of split `s` at `batch` from its replica shape's plan at that batch (None: not
    planned; its latency_s is seconds per call of `batch` videos) and,
    for a split whose replicas could share links, its replicas simulated together (`run`;
    None: not simulated, so not priced)."""
    chips = s.replicas * s.chips_per_replica
    base = dict(topology=s.slice_name, split=s.describe(), replicas=s.replicas, chips=chips,
                batch=batch)
    if replica is None or replica.error:
        return Row(**base, latency_s=None, videos_per_hour=None, usd_per_video=None,
                   priced=False, why_not=f"no plan on {replica_key(s.planned_as, batch)}: "
                   + (replica.error if replica else "not planned"))
    if s.shares_links and (run is None or not replica.step_s):
        return Row(**base, latency_s=None, videos_per_hour=None, usd_per_video=None,
                   priced=False, why_not="not priced: replicas could share links and were not "
                   f"simulated together: {s.why}")
    alone = f"{'apart' if s.replicas > 1 else 'alone'}: {s.why}"
    latency, pricing = ((replica.latency_s, alone) if run is None
                        else _together_latency(s, replica, run))
    vph = frontier.videos_per_hour(s.replicas, batch, latency)
    usd = request.prices.usd_per_chip_hour(s.generation)
    rel = replica.relative_interval
    return Row(**base, latency_s=latency, videos_per_hour=vph,
               usd_per_video=None if usd is None else frontier.usd_per_video(chips, usd, vph),
               scope=replica.scope, plan=replica.plan, pricing=pricing,
               latency_interval_s=None if rel is None else (latency * rel[0], latency * rel[1]))


def _together_latency(s: splits.Split, replica: ReplicaPlan,
                      run: together.Together) -> tuple[float, str]:
    """(seconds per video, what was done) when the replicas ran together: each of the
    replica's `steps` forwards takes the slowest replica's forward instead of the plan's
    alone; what the plan priced around the loop stays as priced alone."""
    slowest = run.slowest
    latency = replica.latency_s + replica.steps * (slowest - replica.step_s)
    around = ("; the text encoder, VAE decode and reshards priced alone"
              if not replica.scope.startswith(TRANSFORMER_ONLY) else "")
    return latency, (f"together: the {s.replicas} replicas simulated at once on "
                     f"{s.slice_name} ({s.why}); one forward {slowest:.4g} s for the slowest, "
                     f"{slowest / replica.step_s:.4f} x the plan's alone on {s.planned_as}"
                     f"{around}")


def _notes(request: Request, by_slice, replicas: dict[str, ReplicaPlan]) -> list[str]:
    notes = []
    gens = dict.fromkeys(s.generation for ss in by_slice.values() for s in ss)
    for gen in gens:
        p = request.prices.prices.get(gen)
        notes.append(f"{gen}: {p.usd_per_chip_hour:g} USD per chip-hour ({p.date}, "
                     f"{p.source})" if p else f"{gen}: no cost per video: "
                     + request.prices.why_missing(gen))
    if any(b != 1 for b in request.batches):
        notes.append("at batch B a row's latency is one call of B videos on one replica (every "
                     "video of the call waits for all of it), from the replica's own plan at "
                     "that batch (aoizora plan --batch B: compiled at the batch 2B); its "
                     "videos per hour count B videos a call")
    if any(r.scope.startswith(TRANSFORMER_ONLY) for r in replicas.values()):
        notes.append(f"latency per video: {TRANSFORMER_ONLY}, {request.steps} x the plan's "
                     "simulated forward; no text encoder, VAE decode or reshards (this "
                     "planner does not price the whole video yet)")
    return notes
