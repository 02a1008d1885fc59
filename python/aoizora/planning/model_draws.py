"""Joint draws of the model of the chip: N hardware profiles drawn from each figure's spread
(hardware/figure_spread.py), and every compiled program a plan compares priced under each.

Every row of a plan (its choice, runners-up, baselines, the choice's sharding on JAX's
default order) is simulated again under the *same* N profiles, so that row i's time in draw
d and row j's in draw d come from one model of the chip: their ratio carries only what
differs between them. Seconds per video add to the simulated steps the stages around the
loop (text encoder, conditioning, VAE decode) and the reshards, scaled by the draw's
factor on mxu_efficiency and on link_bandwidth respectively (they are priced once per
setting, not simulated again per draw); a text encoder run on the host CPU (MaxDiffusion's)
by a draw of the host figure instead (hardware/hosts.py spread).

    ModelDraws(stage2, n=DRAWS, seed=SEED)    the n drawn slices; UncertainModel raised
        when the slice's generation has no hardware profile to draw from (a topology file's
        own figures)
    .step_s(graph, device_of) -> ndarray (n,)    simulated seconds per forward in each draw
    .video_s(graph, device_of, parts, steps) -> ndarray (n,)   seconds per video
    .record() -> dict                            plan.json's record of the draws

Deterministic for a (profile, n, seed); every figure is simulated, none measured.
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np

from aoizora import _core
from aoizora.hardware import error_bands, figure_spread, hosts
from aoizora.planning import intervals

DRAWS = 100    # profiles drawn per plan: about 0.1 s per compared row of Wan 1.3B (measured:
               # plan.json planning.phases.joint_draws)
SEED = 0


class UncertainModel(Exception):
    """The slice's figures cannot be drawn (no hardware profile behind them)."""


def _profile(stage2) -> dict:
    if stage2.hardware:
        with open(stage2.hardware, encoding="utf-8") as f:
            return json.load(f)
    generation = stage2.topology.spec["generation"]
    try:
        return json.loads(_core.hardware_profile(generation))
    except _core.CoreError as e:
        raise UncertainModel(f"no hardware profile of {generation!r} to draw from: {e}") from e


class ModelDraws:
    def __init__(self, stage2, n: int = DRAWS, seed: int = SEED):
        self.n, self.seed = n, seed
        doc = _profile(stage2)
        self.generation = stage2.topology.spec["generation"]
        rows = error_bands.read()
        self.widening = figure_spread.widening(rows).get(self.generation, 1.0)
        self.spreads = figure_spread.spreads(doc, self.generation, rows)
        self.factors = figure_spread.factors(self.spreads, n, seed)
        # The host's text-encoder figure (hardware/hosts.py), drawn on its own stream so the
        # chip's draws stay those of its figures alone.
        self.host_spread = hosts.spread(self.generation)
        self.host_factor = np.exp(self.host_spread * np.random.default_rng(
            (seed, 1)).standard_normal(n))
        docs = figure_spread.draw(doc, self.spreads, n, seed)
        self.topologies = []
        with tempfile.TemporaryDirectory(prefix="aoizora-draws-") as d:
            for i, drawn in enumerate(docs):
                path = os.path.join(d, f"draw{i}.json")
                with open(path, "w", encoding="utf-8") as f:
                    json.dump(drawn, f)
                self.topologies.append(_core.make_topology(stage2.source, path))
        self._steps: dict[tuple, tuple] = {}

    def step_s(self, graph, device_of) -> np.ndarray:
        key = (id(graph), tuple(device_of))
        if key not in self._steps:  # the graph is held beside its times: its id stays its own
            self._steps[key] = (graph, np.array([
                _core.simulate(graph, t, list(device_of), top_contributors=0).step_seconds
                for t in self.topologies]))
        return self._steps[key][1]

    def _factor(self, figure: str) -> np.ndarray:
        return self.factors.get(figure, np.ones(self.n))

    def video_s(self, graph, device_of, parts: dict, steps: int,
                host: bool = False) -> np.ndarray:
        """Seconds per video in each draw from a row's video parts (plan_video.parts); with
        `host`, its text encoder ran on the host CPU and takes the host figure's draw."""
        stages = sum(parts.get(k) or 0.0 for k in intervals.STAGES)
        on_host = (parts.get("text_encoder_s") or 0.0) if host else 0.0
        return (steps * self.step_s(graph, device_of)
                + (stages - on_host) * self._factor("mxu_efficiency")
                + on_host * self.host_factor
                + parts["reshard_s"] * self._factor("link_bandwidth"))

    def record(self) -> dict:
        return {"draws": self.n, "seed": self.seed, "generation": self.generation,
                "spreads": [s.record() for s in self.spreads.values()],
                "host_spread": self.host_spread, "widening": self.widening}
