"""Seconds per video inside a plan: the stages around the transformer loop priced once per
setting, and every simulated sharding-placement pair of the plan (its choice, the judged
pool, the baselines) priced as a whole video.

    stages = price_stages(cfg, workload, stage2, ...)     the text encoder, the VAE decode:
                                                          every sharding compiled (cached)
                                                          and simulated; the best of each
    video = VideoModel(cfg, workload, stage2, steps, stages)
    video.seconds(pair)   text encoding + steps x the pair's step + VAE decode + reshards:
                          seconds per call (all the call's videos finish together)
    video.parts(pair)     the same by part, for plan.json
    video.record(plan_pair, baselines)                    plan.json's "video"

A call of V videos (the workload's batch 2V: each video's CFG pair; `aoizora plan --batch
V`): the steps are the transformer compiled at that batch; the host text encoder is priced
for V videos (hosts.seconds); the text encoder and the VAE decode on the slice are compiled
for one video and counted V times (run one video after another; their batched programs are
not compiled, a stated approximation in plan.json's notes); the reshards move the call's
arrays (2V prompts' context, V videos' latents). `seconds_per_video` = seconds / V.

The stages do not depend on the transformer's sharding, so they are compiled once per
(model, workload, slice), not per candidate; only the reshards (the text context into the
transformer's layout, the final latents into the VAE's) depend on the pair. Every figure
is simulated; nothing is measured.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from aoizora.pipeline import host_encoder, price, stage_specs

SIMULATED = "simulated"


def plannable(cfg) -> str | None:
    """None when `cfg` is a video model whose stages AoiZora can build (the Wan presets),
    else why not."""
    if getattr(cfg, "vae_stride", None) is None or getattr(cfg, "text_len", None) is None:
        return (f"{getattr(cfg, 'name', 'this model')} is not a Wan video model: only one "
                "forward is planned")
    return None


def steps_for(cfg, steps: int | None) -> tuple[int, str, int | None]:
    """(denoising steps, where the count comes from, the first step of Wan 2.2's low-noise
    expert or None). steps None: the preset's reference run (models/scheduler.py: its
    MaxDiffusion config's num_inference_steps)."""
    from aoizora.errors import UserError
    from aoizora.models import scheduler

    try:
        run = scheduler.denoising(cfg.name)
    except KeyError:
        raise UserError(f"{cfg.name}: no reference denoising run (steps, flow shift) for "
                        "this model; leave out seconds per video with --no-video") from None
    if steps is None:
        steps, source = run.steps, run.source
    else:
        source = "--steps"
    ratio = getattr(cfg, "boundary_ratio", None)
    switch = (None if ratio is None else
              scheduler.boundary_step(scheduler.FlowUniPC(steps, run.flow_shift), ratio))
    return steps, source, switch


# Stage name -> (its shardings on n devices, what the plan calls it). Pipeline order.
_OPTIONS = {
    "text_encoder": (lambda n, cfg: stage_specs.text_encoder_options(n), "text encoder"),
    "image_encoder": (stage_specs.image_encoder_options, "image encoder"),
    "vae_encode": (lambda n, cfg: stage_specs.vae_encode_options(n), "VAE encode"),
    "vae_decode": (lambda n, cfg: stage_specs.vae_options(n), "VAE decode"),
}
CONDITIONING = ("image_encoder", "vae_encode")


@dataclass(frozen=True)
class Stages:
    """Each stage's shardings priced, and the best of each (None: none priced)."""

    best: dict                # stage name -> StagePrice | None, in pipeline order
    options: tuple            # every StagePrice, priced or not

    @property
    def text_encoder(self) -> price.StagePrice | None:
        return self.best.get("text_encoder")

    @property
    def vae_decode(self) -> price.StagePrice | None:
        return self.best.get("vae_decode")

    def conditioning(self) -> dict:
        """The image to video stages before the loop ({} for text to video)."""
        return {k: v for k, v in self.best.items() if k in CONDITIONING}

    def missing(self) -> list[str]:
        return [_OPTIONS[k][1] for k, v in self.best.items() if v is None]


def stage_configs(cfg) -> list[tuple[str, object]]:
    """(stage, its config) of every stage around the loop of `cfg`, in pipeline order."""
    return ([("text_encoder", stage_specs.encoder_for(cfg))]
            + stage_specs.image_stages_for(cfg) + [("vae_decode", stage_specs.vae_for(cfg))])


def stage_options(cfg, n: int) -> list[tuple]:
    """(StageOption, stage config) of every sharding offered on n devices, every stage."""
    return [(o, c) for stage, c in stage_configs(cfg) for o in _OPTIONS[stage][0](n, c)]


def price_stages(cfg, workload, stage2, options=None, *, cache=None, workers=None,
                 executor=None, platform: str = "tpu", progress=None) -> Stages:
    """Every stage around the loop of `cfg` (a Wan preset: the text encoder, the image
    conditioning of image to video, the VAE decode) under every sharding stage_specs offers
    on the slice (or `options`, a subset of stage_options), compiled (one job each, one
    batch, cached) and simulated."""
    configs = stage_configs(cfg)
    prices = price.price_options(
        stage_options(cfg, stage2.num_devices) if options is None else options, workload,
        stage2, cache=cache, workers=workers, executor=executor, platform=platform,
        progress=progress)
    return Stages({stage: price.best([p for p in prices if p.stage == stage])
                   for stage, _ in configs}, tuple(prices))


def plan_pair(plan: dict):
    """A plan.json's choice as a stage2.Pair: its sharding, placement and simulated step."""
    from aoizora.planning.stage2 import Pair
    from aoizora.planning.strategies import Candidate

    c = plan["choice"]
    return Pair(Candidate.from_dict(c["strategy"]), c["placement"], list(c["chip_ids"]),
                c.get("q2_s") or 0.0, c.get("q1_s"), c["simulated_s"])


class VideoModel:
    """One video of `workload` on the slice with `stages` priced: a pair's seconds per video
    (module doc). `steps`: denoising steps, each one transformer forward of the CFG pair."""

    def __init__(self, cfg, workload, stage2, steps: int, stages: Stages,
                 steps_source: str = "", switch_step: int | None = None,
                 runtime: str = "jax"):
        self.cfg, self.workload, self.stage2 = cfg, workload, stage2
        self.steps, self.steps_source, self.switch_step = steps, steps_source, switch_step
        self.stages, self.runtime = stages, runtime
        self._reshards: dict[tuple, list] = {}

    @property
    def videos(self) -> int:
        """Videos per call: the workload's batch holds each one's CFG pair."""
        return max(1, getattr(self.workload, "batch", 2) // 2)

    def runs_maxdiffusion(self, tag: str = "") -> bool:
        """Whether a row runs as MaxDiffusion executes it: every row of a plan for its
        runtime, and its recipes (tag maxdiffusion-*) in any plan."""
        return self.runtime == "maxdiffusion" or tag.startswith("maxdiffusion")

    def host_text_encoder(self) -> price.StagePrice:
        """The text encoder as MaxDiffusion runs it, on the host CPU (host_encoder.py)."""
        return host_encoder.price(stage_specs.encoder_for(self.cfg),
                                  self.stage2.topology.spec["generation"],
                                  videos=self.videos)

    def stages_of(self, tag: str = "") -> tuple:
        """(text encoder, VAE decode) StagePrices a row runs: the best of each on the slice,
        but a row MaxDiffusion runs (runs_maxdiffusion) encodes the prompts on the host and
        decodes with its VAE over every device along width (vae_spatial -1), when that
        option was priced."""
        te, vae = self.stages.text_encoder, self.stages.vae_decode
        if self.runs_maxdiffusion(tag):
            te, vae = self.host_text_encoder(), self._maxdiffusion_vae() or vae
        return te, vae

    def jax_runtime_gain(self, pair) -> dict | None:
        """For a MaxDiffusion plan: the seconds per video the JAX runtime would save on the
        same pair with the text encoder and the VAE on the slice at their best shardings
        (advice, priced); None for a JAX-runtime plan or while a part is missing."""
        if self.runtime != "maxdiffusion":
            return None
        own, best = self.stages_of(), (self.stages.text_encoder, self.stages.vae_decode)
        if None in own or None in best:
            return None
        te_gain = self._per_call(own[0]) - self._per_call(best[0])   # per call, as parts
        vae_gain = self._per_call(own[1]) - self._per_call(best[1])
        return {"text_encoder_s": te_gain, "vae_decode_s": vae_gain,
                "total_s": te_gain + vae_gain, "text_encoder_on": best[0].sharding,
                "vae_decode_on": best[1].sharding}

    def _maxdiffusion_vae(self) -> price.StagePrice | None:
        """MaxDiffusion's own VAE decode sharding (width over every device), None when it
        was not priced (a width that does not divide: record() says so)."""
        own = f"vae-width{self.stage2.num_devices}"
        return next((o for o in self.stages.options
                     if o.sharding == own and o.simulated_s is not None), None)

    def reshards(self, pair, tag: str = "") -> list:
        te, vae = self.stages_of(tag)
        key = (pair.candidate.name, tuple(pair.device_of), te and te.sharding,
               vae and vae.sharding)
        if key not in self._reshards:
            self._reshards[key] = price.reshards(
                self.cfg, self.workload, self.stage2, price.Placed.of_pair(pair), te, vae,
                stage_specs.encoder_for(self.cfg), stage_specs.vae_for(self.cfg))
        return self._reshards[key]

    def _per_call(self, stage) -> float | None:
        """A stage's seconds for the call's videos: the host encoder is priced for all of
        them; a stage on the slice, compiled for one video, runs once per video."""
        if stage is None or stage.simulated_s is None:
            return None
        once = stage.sharding == host_encoder.SHARDING
        return stage.simulated_s * (1 if once else self.videos)

    def parts(self, pair, tag: str = "") -> dict[str, float | None]:
        te, vae = self.stages_of(tag)
        step = pair.simulated
        out = {"text_encoder_s": self._per_call(te)}
        cond = self.stages.conditioning()
        if cond:  # image to video: its image encoder and VAE encode, before the loop
            out["conditioning_s"] = (None if None in cond.values() or any(
                c.simulated_s is None for c in cond.values())
                else sum(self._per_call(c) for c in cond.values()))
        return {**out, "denoising_s": None if step is None else self.steps * step,
                "vae_decode_s": self._per_call(vae),
                "reshard_s": self._reshard_s(pair, tag)}

    def seconds(self, pair, tag: str = "") -> float | None:
        """Seconds per call (of `videos` videos; one video at batch 1); None while a part is
        missing."""
        parts = self.parts(pair, tag).values()
        return None if any(p is None for p in parts) else sum(parts)

    def seconds_per_video(self, pair, tag: str = "") -> float | None:
        """Seconds per call over the call's videos (what a video costs in slice time)."""
        s = self.seconds(pair, tag)
        return None if s is None else s / self.videos

    def _reshard_s(self, pair, tag: str = "") -> float:
        return sum(r.seconds for r in self.reshards(pair, tag))

    def order_key(self, pair) -> float:
        """What the plan minimises once the stages are priced: the pair's share of the
        video (its steps and its reshards; the stages' own seconds are the same for every
        pair), so a missing stage does not change the order."""
        return self.steps * pair.simulated + self._reshard_s(pair)

    def of_pair(self, pair, tag: str = "") -> dict:
        te, vae = self.stages_of(tag)
        return {"seconds": self.seconds(pair, tag),
                "seconds_per_video": self.seconds_per_video(pair, tag),
                "parts": self.parts(pair, tag),
                "step_s": pair.simulated,
                "stages": {"text_encoder": te and te.sharding, "vae_decode": vae and vae.sharding},
                "reshards": [asdict(r) for r in self.reshards(pair, tag)]}

    def record(self, plan_pair, baselines: dict, by_step=None) -> dict:
        """plan.json's "video": the plan's seconds per video by part, each baseline's, the
        stages' shardings (every option tried, with why one was not priced), and
        `changed_choice` when the pair fastest per step (`by_step`) is not the plan."""
        stage = lambda s: None if s is None else _stage_record(s)
        out = {"kind": SIMULATED, "steps": self.steps, "steps_source": self.steps_source,
               "videos_per_call": self.videos,
               "expert_switch_step": self.switch_step,
               **self.of_pair(plan_pair),
               "stages": self._stages_record(),
               "options": [_stage_record(o) for o in self.stages.options],
               "baselines": {tag: self.of_pair(p, tag) for tag, p in baselines.items()},
               "changed_choice": None,
               "notes": ["the scheduler's update of the latents between steps (UniPC, a "
                         "few elementwise passes over them: models/scheduler.py) is not "
                         "priced; the CFG combine is, inside the transformer's step"]}
        experts, resident = getattr(self.cfg, "experts", 1), getattr(self.cfg, "resident", 1)
        if resident < experts:
            out["notes"].append(f"{resident} of {experts} experts resident: the switch at step "
                                f"{self.switch_step} loads the other's weights from host "
                                "memory, which is not priced")
        if self.videos > 1:
            out["notes"].append(
                f"{self.videos} videos per call: seconds is per call (every video of the call "
                "finishes with it), seconds_per_video is seconds over the call's videos; the "
                "steps run the transformer compiled at that batch; the text encoder and the "
                "VAE decode on the slice are priced for one video and counted once per video "
                "(their batched programs are not compiled); the host encoder is priced for "
                "the call's prompts")
        out["runtime"] = self.runtime
        gain = self.jax_runtime_gain(plan_pair)
        if gain is not None:
            out["jax_runtime_gain"] = gain
        if self.runtime == "maxdiffusion" or any(t.startswith("maxdiffusion")
                                                 for t in baselines):
            out["notes"].append(self._maxdiffusion_note())
        if self.stages.conditioning():
            out["notes"].append("image to video: the image tokens and latents enter the "
                                "transformer without a priced reshard")
        missing = self.stages.missing()
        if missing:
            out["notes"].append(f"no sharding of the {' and the '.join(missing)} was priced "
                                "(options say why): seconds per video is missing")
        if by_step is not None and (by_step.candidate.name, tuple(by_step.device_of)) != (
                plan_pair.candidate.name, tuple(plan_pair.device_of)):
            saved = self.steps * (plan_pair.simulated - by_step.simulated)
            cost = self._reshard_s(by_step) - self._reshard_s(plan_pair)
            out["changed_choice"] = {
                "by_step": by_step.candidate.name, "by_step_placement": by_step.placement,
                "by_step_video_s": self.seconds(by_step),
                "why": f"its {self.steps} steps save {saved * 1e3:.3f} ms, its reshards "
                       f"cost {cost * 1e3:.3f} ms more"}
        return out


    def _stages_record(self) -> dict:
        """Each stage the plan runs: the best of each on the slice, or MaxDiffusion's own
        (the host's text encoder, its VAE mesh) in a plan for MaxDiffusion."""
        out = {k: None if v is None else _stage_record(v) for k, v in self.stages.best.items()}
        if self.runs_maxdiffusion():
            te, vae = self.stages_of()
            out["text_encoder"] = _stage_record(te)
            out["vae_decode"] = None if vae is None else _stage_record(vae)
        return out

    def _maxdiffusion_note(self) -> str:
        who = ("every row (MaxDiffusion runs them all)" if self.runtime == "maxdiffusion"
               else "MaxDiffusion's rows")
        vae = ("decode with MaxDiffusion's own VAE sharding (width over every device)"
               if self._maxdiffusion_vae() else "decode on the best VAE sharding: "
               "MaxDiffusion's own (width over every device) was not priced (options say why)")
        te = self.host_text_encoder()
        return (f"{who}: {vae}, and encode the prompts on the host CPU as MaxDiffusion does "
                f"({te.simulated_s / self.videos:.1f} s predicted per video, a new prompt: a "
                "repeated one is served from its prompt cache; the upload of the embeddings "
                "is not priced)")


def _stage_record(s: price.StagePrice) -> dict:
    return {"stage": s.stage, "sharding": s.sharding, "simulated_s": s.simulated_s,
            "mesh": [list(a) for a in s.mesh], "source": s.source, "compiled": s.compiled,
            "error": s.error, "kind": s.kind}
