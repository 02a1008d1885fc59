"""The plan document (aoizora.plan/1) AoiZora hands back: a logical sharding plus a
physical placement, with the figures that chose it. It round-trips through JSON (versioned
schema) and turns into a `jax.sharding.Mesh` whose device order *is* the placement, so JAX
runs it unchanged.

Latencies in a plan are predicted (Q1, Q2) or simulated (flow-level simulator) on the
model of the chip generation; none is measured.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

from aoizora.atomic import write_atomic
from aoizora.errors import UserError

SCHEMA = "aoizora.plan/1"


@dataclass
class Choice:
    """One sharding-placement pair and its figures (seconds for one forward pass)."""

    candidate: str                      # strategies.Candidate name
    mesh_shape: list[int]
    axis_names: list[str]
    strategy: dict[str, Any]            # degrees per parallelism kind, context form, rules
    placement: str                      # how the device order was found
    device_coords: list[list[int]]      # (x, y, z[, core]) of mesh.devices.flat, in order
    chip_ids: list[int] = field(default_factory=list)  # the same devices as topology device ids
    q1_s: float | None = None           # Stage 1, placement-oblivious
    q2_s: float | None = None           # Stage 2, topology-aware ranking cost
    simulated_s: float | None = None    # flow-level simulator
    extra: dict[str, Any] = field(default_factory=dict)

    def label(self, tag: str) -> str:
        """A baseline's tag as tables show it, its notes() in parentheses: "TAG (NOTE;
        NOTE)", or the tag alone."""
        notes = self.notes()
        return f"{tag} ({'; '.join(notes)})" if notes else tag

    def notes(self) -> list[str]:
        """What a baseline's figures are not, in words: one whose mesh JAX's default order
        cannot lay out on the slice is shown on AoiZora's best placement for its sharding,
        a MaxDiffusion recipe whose published blocks failed to compile with the searched
        blocks, and one whose sharding was analysed and not compiled in full; [] for
        none."""
        notes = []
        if "no_default_order" in self.extra:
            notes.append("not deployable with JAX's default order on this slice: "
                         f"{self.extra['no_default_order']}; shown on AoiZora's best "
                         "placement for its sharding")
        if "stand_in" in self.extra:
            notes.append("searched blocks: the published ones fail to compile")
        if "analysed_only" in self.extra:
            notes.append("analysed, not compiled in full")
        return notes


def plan_json(d: dict) -> str:
    """A plan's dict as strict JSON text: a NaN or infinity anywhere is an error, not a token
    other readers refuse."""
    return json.dumps(d, indent=2, allow_nan=False)


@dataclass
class Plan:
    model: dict[str, Any]
    workload: dict[str, Any]
    topology: dict[str, Any]
    choice: Choice
    runners_up: list[Choice] = field(default_factory=list)
    baselines: dict[str, Choice] = field(default_factory=dict)
    planning: dict[str, Any] = field(default_factory=dict)
    # Seconds per video (simulated): the plan's and each baseline's by part, the stages
    # around the loop (pipeline/plan_video.py); {"not_priced": why} when not priced.
    video: dict[str, Any] = field(default_factory=dict)
    # The figures' error (intervals.py): the generation's bands, the rule that chose
    # ("point" or "robust"), the figure ranked by, the candidates tied with the plan; each
    # choice's extra["interval"] holds its own. {} in plans made before intervals.
    uncertainty: dict[str, Any] = field(default_factory=dict)
    # The compiler flags (planning/flag_search.py): the mode, the chosen set with its
    # source, and with --flags search each (sharding, flags) program's simulated figures.
    # {} in plans made before flags were a choice (compiled without any).
    flags: dict[str, Any] = field(default_factory=dict)
    schema: str = SCHEMA

    def seconds_per_video(self, tag: str | None = None) -> float | None:
        """The plan's simulated seconds per video, or baseline `tag`'s; None when not
        priced."""
        v = self.video if tag is None else self.video.get("baselines", {}).get(tag, {})
        return v.get("seconds")

    def workload_text(self) -> str:
        """The workload in words, only the figures the plan has: "480p, 21 frames (9,360
        tokens per sample)", or "its own arguments (a function spec)"."""
        w = self.workload
        if w.get("function"):
            return "its own arguments (a function spec)"
        parts = [str(w["video"])] if w.get("video") else []
        if w.get("frames"):
            parts.append(f"{w['frames']} frames")
        text = ", ".join(parts) or "its workload"
        if isinstance(w.get("tokens"), int):
            text += f" ({w['tokens']:,} tokens per sample)"
        if (w.get("videos_per_call") or 1) > 1:
            text += f", {w['videos_per_call']} videos per call"
        return text

    # ---- JSON ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """plan.json's content: strict JSON (an interval's unbounded high end is null)."""
        d = _unbounded(asdict(self), math.inf, None)
        d["note"] = ("latencies are predicted (q1_s, q2_s) or simulated (simulated_s) on the "
                     f"model of {self.topology.get('generation', 'the chip')}; none is measured")
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Plan":
        if not isinstance(d, dict) or d.get("schema") != SCHEMA:
            from aoizora.inputs import json_document

            raise UserError(f"not an AoiZora plan (schema {SCHEMA}, written by `aoizora "
                            f"plan`): {json_document.describe(d)}")
        d = _unbounded(d, None, math.inf)
        return cls(
            model=d["model"], workload=d["workload"], topology=d["topology"],
            choice=Choice(**d["choice"]),
            runners_up=[Choice(**c) for c in d.get("runners_up", [])],
            baselines={k: Choice(**c) for k, c in d.get("baselines", {}).items()},
            planning=d.get("planning", {}),
            video=d.get("video", {}),
            uncertainty=d.get("uncertainty", {}),
            flags=d.get("flags", {}),
        )

    def save(self, path: str) -> None:
        write_atomic(path, self.to_json() + "\n")

    def to_json(self) -> str:
        return plan_json(self.to_dict())

    @classmethod
    def load(cls, path: str) -> "Plan":
        try:
            with open(path) as f:
                return cls.from_dict(json.load(f))
        except (OSError, json.JSONDecodeError, KeyError, TypeError) as e:
            raise UserError(f"cannot read plan {path}: {e}") from e

    # ---- execution ----------------------------------------------------------------------
    def mesh(self, devices: Sequence | None = None):
        """A jax.sharding.Mesh over `devices` (real TPU devices or compile-only ones) in the
        planned order, matched by chip coordinates."""
        return mesh_from_coords(self.choice.device_coords, self.choice.mesh_shape,
                                self.choice.axis_names, devices, self.choice.chip_ids)

    def candidate(self):
        """The chosen logical sharding as a strategies.Candidate."""
        from aoizora.planning.strategies import Candidate

        return Candidate.from_dict(self.choice.strategy)

    def layout(self, model, devices: Sequence | None = None, *, interpret: bool = False):
        """The strategies.Layout that runs `model` (a ModelSpec such as a WanConfig) under
        this plan: pass it to `model.apply(..., layout=...)`. interpret: run the plan's
        Pallas kernel through its interpreter (to check a TPU plan on CPU devices)."""
        from aoizora.planning.strategies import layout_for

        return layout_for(self.candidate(), self.mesh(devices), model, interpret=interpret)

    def shardings(self, model, workload, devices: Sequence | None = None):
        """(parameter shardings pytree, input shardings tuple) for jax.device_put / jit."""
        import jax

        # The leaves are tuples of axis names, as compiler.build reads them: a model's
        # parameters may be a tuple of trees (the resident experts of Wan 2.2 A14B).
        from aoizora.compile.compiler import is_axes

        layout = self.layout(model, devices)
        params = jax.tree.map(lambda a, x: layout.sharding(a, x.shape), model.param_axes(),
                              model.abstract_params(), is_leaf=is_axes)
        inputs = tuple(layout.sharding(a, x.shape) for a, x in
                       zip(model.input_axes(workload), model.abstract_inputs(workload)))
        return params, inputs


def _unbounded(value, old, new):
    """`value` with every interval's high end (intervals.py: a dict with low_s and high_s)
    that is `old` replaced by `new`. A high end is infinite when an error band is 100 % or
    more (the part may be any slower); JSON has no infinity, so plan.json writes null."""
    if isinstance(value, list):
        return [_unbounded(v, old, new) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _unbounded(v, old, new) for k, v in value.items()}
    if "low_s" in out and "high_s" in out and out["high_s"] == old:
        out["high_s"] = new
    return out


def mesh_from_coords(device_coords, mesh_shape, axis_names, devices=None, chip_ids=None):
    """Arranges devices into a Mesh so that mesh.devices.flat[i] sits at device_coords[i].

    Devices without coordinates (CPU stand-ins) are taken as the slice's chips in chip-id
    order (x fastest), so device chip_ids[i] goes to mesh position i."""
    import numpy as np
    from jax.sharding import Mesh

    if devices is None:
        import jax

        devices = jax.devices()
    devices = list(devices)
    if devices and getattr(devices[0], "coords", None) is None:
        if not chip_ids or max(chip_ids) >= len(devices):
            raise UserError(f"the plan needs {len(device_coords)} devices, got {len(devices)}")
        ordered = [devices[i] for i in chip_ids]
        return Mesh(np.array(ordered, dtype=object).reshape(mesh_shape), tuple(axis_names))
    from aoizora.planning.placement import devices_by_coords

    by_coords = devices_by_coords(devices)
    try:
        ordered = [by_coords[tuple(c)] for c in device_coords]
    except KeyError as e:
        raise UserError(f"no device at {e.args[0]}: the plan is for another slice") from e
    return Mesh(np.array(ordered, dtype=object).reshape(mesh_shape), tuple(axis_names))
