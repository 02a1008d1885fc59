"""Seconds per video: the text encoder and the VAE decode, each under every sharding offered
(stage_specs), compiled for the slice's TPU through the planner's compile path and simulated
on the slice; the reshards between stages (reshard.py); the transformer's steps from a plan.

    price_stage(stage, cfg, workload, stage2, options, ...) -> list[StagePrice]
    seconds_per_video(model, workload, topology, steps, plan=None, ...) -> VideoPrice

Compiles: one job per (stage, sharding), the TPU's analysis compile (optimized_hlo: XLA's
optimized HLO, the backend skipped, as Stage 2 uses it) through compiler.run_jobs, so worker
processes and the on-disk cache (~/.cache/aoizora) are the planner's; a CPU target compiles
in full. Each program is simulated by the C++ simulator on JAX's default device order for its
mesh (mesh_utils.create_device_mesh, as MaxDiffusion builds its meshes); no placement search.
The best sharding of a stage is the one with the fewest simulated seconds. Every figure is
simulated; nothing is measured. What the analysis compile does not check (a program over HBM)
is not checked here either.
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass(frozen=True)
class VideoPrice:
    """One video's seconds on the slice, by part; every figure simulated."""

    model: str
    workload: str
    topology: str
    steps: int
    text_encoder: StagePrice | None     # the best priced sharding, None when none priced
    vae_decode: StagePrice | None
    transformer_step_s: float | None    # the plan's choice.simulated_s; None without a plan
    transformer_sharding: str           # the plan's, or "no plan"
    reshards: tuple                     # reshard.ReshardPrice, ...
    options: tuple                      # every StagePrice, priced or not
    kind: str = SIMULATED
    notes: tuple = field(default=())

    @property
    def reshard_s(self) -> float:
        return sum(r.seconds for r in self.reshards)

    @property
    def total_s(self) -> float | None:
        """None while any part is missing."""
        parts = [self.text_encoder and self.text_encoder.simulated_s,
                 self.vae_decode and self.vae_decode.simulated_s, self.transformer_step_s]
        if any(p is None for p in parts):
            return None
        return parts[0] + self.steps * parts[2] + parts[1] + self.reshard_s


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
    from aoizora import compiler
    from aoizora.compile_target import compile_target_for

    target = compile_target_for(stage2.topology, platform)
    kind = "analyze" if target.platform == "tpu" else "compile"
    todo = [(o, cfg) for o, cfg in options if _skip_reason(o, workload) is None]
    # The text encoder's program does not depend on the video: no workload in its job, so
    # its cache entries serve every workload of the slice.
    jobs = [compiler.Job(kind, o.candidate, o.spec(cfg),
                         workload if o.stage in VIDEO_STAGES else None, target.spec)
            for o, cfg in todo]
    outs = dict(zip([(o.stage, o.name) for o, _ in todo],
                    compiler.run_jobs(jobs, cache=cache, workers=workers, executor=executor,
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
    from aoizora.strategies import Candidate

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

    @classmethod
    def of_plan(cls, plan: dict) -> "Placed":
        from aoizora.strategies import Candidate

        choice = plan["choice"]
        cand = Candidate.from_dict(choice["strategy"])
        return cls(cand, tuple(choice["chip_ids"]), f"transformer: {cand.name} (plan)")


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
    """Text context -> the transformer's input layout; the final latents -> the VAE's."""
    import jax.numpy as jnp

    spec, n, out = stage2.topology.spec, stage2.num_devices, []
    if te is not None and te.chips:
        shape = (2, enc_cfg.text_len, enc_cfg.d_model)
        src = _stage_layout(te, stage_specs.TextEncoderStage.model_output_axes(), shape)
        dst = _transformer_layout(placed, n, model.input_axes(workload)[2], shape)
        out.append(reshard.price("text context -> transformer", src, dst, shape,
                                 jnp.dtype(enc_cfg.dtype).itemsize, spec))
    if vae is not None and vae.chips:
        shape = (1, vae_cfg.z_dim, *workload.latent_shape())
        axes = tuple(model.output_axes(workload))
        axes = (None,) * (len(shape) - len(axes)) + axes
        src = _transformer_layout(placed, n, axes, shape)
        dst = _stage_layout(vae, stage_specs.VaeDecodeStage.model_input_axes(), shape)
        out.append(reshard.price("latents -> VAE", src, dst, shape,
                                 jnp.dtype(vae_cfg.dtype).itemsize, spec))
    return out


def seconds_per_video(model, workload, topology: str, steps: int, plan: dict | None = None,
                      *, cache=None, workers=None, executor=None, platform: str = "tpu",
                      te_options=None, vae_options=None) -> VideoPrice:
    """The whole video on `topology` (a catalog name or topology file). `plan`: a plan.json
    dict for this model, workload and slice (its choice gives the transformer's step, its
    sharding and placement the reshards' far side); te_options / vae_options: the shardings
    tried (default: stage_specs' full lists)."""
    from aoizora.stage2 import Stage2

    stage2 = Stage2.for_topology(topology)
    n = stage2.num_devices
    enc_cfg, vae_cfg = stage_specs.encoder_for(model), stage_specs.vae_for(model)
    kw = dict(cache=cache, workers=workers, executor=executor, platform=platform)
    te_prices = price_stage(enc_cfg, workload, stage2,
                            te_options or stage_specs.text_encoder_options(n), **kw)
    vae_prices = price_stage(vae_cfg, workload, stage2,
                             vae_options or stage_specs.vae_options(n), **kw)
    te, vae = best(te_prices), best(vae_prices)
    notes = []
    step_s, sharding = None, "no plan"
    if plan is not None:
        step_s = plan["choice"]["simulated_s"]
        sharding = plan["choice"]["candidate"]
        for what, mine, theirs in (("model", model.name, plan["model"]["name"]),
                                   ("topology", stage2.topology.name, plan["topology"]["name"]),
                                   ("frames", workload.frames, plan["workload"]["frames"])):
            if mine != theirs:
                notes.append(f"the plan is for {what} {theirs}, not {mine}")
    return VideoPrice(model.name, workload.name, stage2.topology.name, steps, te, vae, step_s,
                      sharding, tuple(reshards(model, workload, stage2,
                                               Placed.of_plan(plan) if plan else None,
                                               te, vae, enc_cfg, vae_cfg)),
                      tuple(te_prices + vae_prices), notes=tuple(notes))

