"""The stages around the transformer loop priced: each (stage, sharding) option compiled for
the slice's TPU through the planner's compile path and simulated on the slice; the reshards
between a stage and the transformer (reshard.py). plan_video.py puts them together per video.

    price_options([(StageOption, cfg), ...], workload, stage2, ...) -> list[StagePrice]
    best(prices) -> the fastest priced StagePrice
    reshards(model, workload, stage2, Placed | None, te, vae, ...) -> [ReshardPrice]

Compiles: one job per (stage, sharding), the TPU's analysis compile (optimized_hlo: XLA's
optimized HLO, the backend skipped, as Stage 2 uses it) through run_jobs, so worker
processes and the on-disk cache (~/.cache/aoizora) are the planner's; a CPU target compiles
in full. Each program is simulated by the C++ simulator on JAX's default device order for its
mesh (mesh_utils.create_device_mesh, as MaxDiffusion builds its meshes); no placement search.
The best sharding of a stage is the one with the fewest simulated seconds. Every figure is
simulated; nothing is measured. What the analysis compile does not check (a program over HBM)
is not checked here either.
"""

from __future__ import annotations

from dataclasses import dataclass

from aoizora.pipeline import reshard, stage_specs

SIMULATED = "simulated"
# The stages whose program depends on the video's size (the others: on the prompt or the
# image only, so one cache entry serves every workload of the slice).
VIDEO_STAGES = ("vae_decode", "vae_encode")


@dataclass(frozen=True)
class StagePrice:
    stage: str                    # "text_encoder" | "vae_decode"
    sharding: str                 # the option's name ("vae-width8")
    mesh: tuple                   # ((axis, size), ...)
    rename: tuple                 # model logical axis -> candidate logical axis
    source: str                   # what the sharding is / where it comes from
    simulated_s: float | None     # None: not priced (see error)
    error: str | None = None      # why not: skipped, lowering or compile failure
    compiled: str = ""            # "analyze for v5e:2x4 (cached)", "" when skipped
    chips: tuple = ()             # the placement: chip of each logical device
    key: str = ""                 # the compile job's cache key (the program: Cache().get(key))
    kind: str = SIMULATED


def _skip_reason(option, workload) -> str | None:
    dims = stage_specs.latent_dims(workload)
    for axis, degree in option.divides:
        if dims[axis] % degree:
            return f"skipped: {dims[axis]} latent {axis} do not divide by {degree}"
    return None


def price_stage(cfg, workload, stage2, options, **kw) -> list[StagePrice]:
    """Every option of one stage compiled (one job each, cached) and simulated."""
    return price_options([(o, cfg) for o in options], workload, stage2, **kw)


def price_options(options, workload, stage2, *, cache=None, workers=None, executor=None,
                  platform: str = "tpu", progress=None) -> list[StagePrice]:
    """Each (StageOption, stage config) compiled and simulated, every compile in one batch
    (the workers take them in parallel). progress: run_jobs' callback (done, total,
    Outcome)."""
    from aoizora.compile.batch import run_jobs
    from aoizora.compile.jobs import Job
    from aoizora.compile.compile_target import compile_target_for

    target = compile_target_for(stage2.topology, platform)
    kind = "analyze" if target.platform == "tpu" else "compile"
    todo = [(o, cfg) for o, cfg in options if _skip_reason(o, workload) is None]
    # The text encoder's program does not depend on the video: no workload in its job, so
    # its cache entries serve every workload of the slice.
    jobs = [Job(kind, o.candidate, o.spec(cfg),
                workload if o.stage in VIDEO_STAGES else None, target.spec)
            for o, cfg in todo]
    outs = dict(zip([(o.stage, o.name) for o, _ in todo],
                    run_jobs(jobs, cache=cache, workers=workers, executor=executor,
                             progress=progress)))
    how = f"{kind} for {target.spec}"
    return [_priced(o, outs.get((o.stage, o.name)), workload, stage2, how)
            for o, _ in options]


def _priced(o, out, workload, stage2, how: str) -> StagePrice:
    """One option's price from its compile outcome (None: skipped before compiling)."""
    from aoizora.errors import UserError

    base = dict(stage=o.stage, sharding=o.name, mesh=tuple(o.candidate.mesh_axes()),
                rename=o.rename, source=o.source)
    if out is None:
        return StagePrice(**base, simulated_s=None, error=_skip_reason(o, workload))
    base.update(key=out.key, compiled=how + (" (cached)" if out.cached else ""))
    if not out.ok:
        return StagePrice(**base, simulated_s=None, error=out.error)
    try:
        graph = stage2.load(out.text)
        pair = stage2.simulate(stage2.default_pair(o.candidate, graph), graph)
    except (UserError, ValueError) as e:  # NoDefaultOrder, CoreError, an unreadable text
        return StagePrice(**base, simulated_s=None, error=str(e))
    return StagePrice(**base, simulated_s=pair.simulated, chips=tuple(pair.device_of))


def best(prices: list[StagePrice]) -> StagePrice | None:
    priced = [p for p in prices if p.simulated_s is not None]
    return min(priced, key=lambda p: p.simulated_s) if priced else None


def _candidate(price: StagePrice):
    from aoizora.planning.strategies import Candidate

    deg = dict(price.mesh)
    return Candidate(price.sharding, data=deg.get("data", 1), fsdp=deg.get("fsdp", 1),
                     context=deg.get("context", 1),
                     form="allgather_kv" if deg.get("context", 1) > 1 else "none",
                     tensor=deg.get("tensor", 1))


def _stage_layout(price: StagePrice, model_axes: tuple, shape: tuple) -> reshard.Layout:
    axes = stage_specs.Renamed(None, price.rename).axes(model_axes)
    return reshard.layout_of(_candidate(price), axes, shape, price.chips, price.sharding)


@dataclass(frozen=True)
class Placed:
    """The transformer's sharding and placement, the far side of the reshards: a candidate
    and the chip of each logical device (mesh.devices.flat order)."""

    candidate: object          # strategies.Candidate
    chips: tuple
    label: str

    @classmethod
    def of_pair(cls, pair, label: str = "") -> "Placed":
        return cls(pair.candidate, tuple(int(c) for c in pair.device_of),
                   label or f"transformer: {pair.candidate.name}")


def _transformer_layout(placed: Placed | None, n: int, axes: tuple,
                        shape: tuple) -> reshard.Layout:
    """The transformer's layout of an array on logical `axes`; without a placement,
    replicated on every chip (MaxDiffusion's default: context parallelism over the slice,
    nothing of the batch sharded)."""
    if placed is None:
        return reshard.Layout((("data", n),), ((),) * len(shape), tuple(range(n)),
                              "transformer: replicated (no plan)")
    return reshard.layout_of(placed.candidate, axes, shape, placed.chips, placed.label)


def reshards(model, workload, stage2, placed: Placed | None, te: StagePrice | None,
             vae: StagePrice | None, enc_cfg, vae_cfg) -> list[reshard.ReshardPrice]:
    """Text context -> the transformer's input layout; the final latents -> the VAE's. A
    call of V videos (the workload's batch 2V) moves all of them: 2V prompts' context, V
    videos' latents."""
    import jax.numpy as jnp

    spec, n, out = stage2.topology.spec, stage2.num_devices, []
    videos = max(1, getattr(workload, "batch", 2) // 2)
    if te is not None and te.chips:
        shape = (2 * videos, enc_cfg.text_len, enc_cfg.d_model)
        src = _stage_layout(te, stage_specs.TextEncoderStage.model_output_axes(), shape)
        dst = _transformer_layout(placed, n, model.input_axes(workload)[2], shape)
        out.append(reshard.price("text context -> transformer", src, dst, shape,
                                 jnp.dtype(enc_cfg.dtype).itemsize, spec))
    if vae is not None and vae.chips:
        shape = (videos, vae_cfg.z_dim, *workload.latent_shape())
        axes = tuple(model.output_axes(workload))
        axes = (None,) * (len(shape) - len(axes)) + axes
        src = _transformer_layout(placed, n, axes, shape)
        dst = _stage_layout(vae, stage_specs.VaeDecodeStage.model_input_axes(), shape)
        out.append(reshard.price("latents -> VAE", src, dst, shape,
                                 jnp.dtype(vae_cfg.dtype).itemsize, spec))
    return out
