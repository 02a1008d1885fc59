"""Stage 2 over the C++ core: one topology, compiled candidates in, sharding-placement pairs
out, ranked by Q2 and judged by the simulator. The Python here only carries data between the
planner and `aoizora._core`; routing, Q2, search and simulation are C++."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from aoizora import _core
from aoizora.hardware import field_basis
from aoizora.planning import step_split
from aoizora.planning.block_timeline import block_timeline
from aoizora.errors import UserError
from aoizora.planning.placement import axis_groups_on_chips
from aoizora.planning.placement_words import axis_shapes, placement_in_words
from aoizora.plan_format import Choice
from aoizora.planning.strategies import Candidate


class NoDefaultOrder(UserError):
    """JAX's default device order (mesh_utils.create_device_mesh, which jax.make_mesh and
    MaxDiffusion call) cannot lay this mesh out on this slice: a deployment that builds its
    mesh that way cannot run the sharding here. `why` is JAX's reason, without the sharding's
    name. A result of planning, not bad input: the planner reports such a baseline in the
    comparison and goes on; where nothing catches it, it ends the command in one line as
    any UserError does."""

    def __init__(self, candidate: str, why: str):
        super().__init__(f"{candidate}: no JAX default order: {why}")
        self.why = why


class UnknownTripCount(ValueError):
    """A compiled program with a loop whose trip count was not found: counted once it would
    look many times cheaper than it is, so the candidate cannot be priced."""


@dataclass
class Pair:
    """One sharding-placement pair with its figures (seconds per forward)."""

    candidate: Candidate
    placement: str
    device_of: list[int]
    q2: float
    q1: float | None = None
    simulated: float | None = None
    tag: str = ""                                   # baseline tag, if it is one
    sim: Any = field(default=None, repr=False)      # the _core.SimResult
    split: dict | None = field(default=None, repr=False)  # step_split.split of the simulation


class Stage2:
    def __init__(self, topology, *, seed: int = 0, search_iters: int = 2000,
                 source: str | None = None, hardware: str | None = None):
        self.topology = topology
        self.seed = seed
        self.search_iters = search_iters
        # What the C++ core's make_topology() reads back into this topology (Stage 1 takes
        # it by name): the catalog name, or the JSON file's absolute path.
        self.source = source or topology.name
        # The hardware profile file whose figures replace the generation's (absolute), if any.
        self.hardware = hardware

    @classmethod
    def for_topology(cls, name: str, hardware: str | None = None, **kw) -> "Stage2":
        """A catalog name or a topology JSON file, checked (topology_file.load), with the
        chip figures of `hardware` (a profile file) when given."""
        from aoizora.inputs import topology_file

        topology = topology_file.load(name, hardware=hardware)
        source = os.path.abspath(name) if topology_file.is_file(name) else name
        return cls(topology, source=source,
                   hardware=os.path.abspath(hardware) if hardware else None, **kw)

    def stage1_options(self) -> dict[str, Any]:
        """The options that give Stage 1 this topology's chip figures."""
        return {"hardware": self.hardware} if self.hardware else {}

    @property
    def num_devices(self) -> int:
        """JAX devices of the slice: chips x TensorCores per chip."""
        return self.topology.num_devices

    def describe(self) -> dict[str, Any]:
        t = self.topology
        return {"name": t.name, "generation": t.spec["generation"], "dims": list(t.dims),
                "wrap": list(t.wrap), "chips": t.num_chips, "cores_per_chip": t.cores_per_chip,
                "devices": t.num_devices, "links": t.num_links,
                "link_bandwidth": t.spec["link_bandwidth"],
                # Which hardware profile gave the figures: a file, or the shipped one.
                "hardware": self.hardware or f"shipped:{t.spec['generation']}",
                # Which of them are fitted, derived or nominal: no plan rests on nominal
                # figures without saying so.
                "hardware_basis": field_basis.of_profile(t.spec["generation"], self.hardware)}

    @staticmethod
    def load(hlo_text: str):
        """The collective graph of a compiled HLO text. Raises ValueError on malformed text
        and UnknownTripCount when a loop's trip count was not found."""
        graph = _core.load_hlo(hlo_text)
        unknown = list(graph.unknown_trip_count_loops)
        if unknown:
            raise UnknownTripCount(f"loop {', '.join(unknown)}: unknown trip count, the "
                                   "candidate cannot be priced")
        return graph

    # ---- placements -----------------------------------------------------------------------
    def rank(self, candidate: Candidate, graph, *, q1: float | None = None) -> list[Pair]:
        """Every placement Stage 2 considers for this sharding, best Q2 first."""
        ranking = _core.rank_placements(graph, self.topology, list(candidate.mesh_shape),
                                        seed=self.seed, search_iterations=self.search_iters)
        pairs = [Pair(candidate, r.placement.name, list(r.placement.device_of), r.q2, q1)
                 for r in ranking.ranked]
        d = ranking.default
        if d is not None and not any(p.device_of == list(d.placement.device_of) for p in pairs):
            pairs.append(Pair(candidate, "jax-default", list(d.placement.device_of), d.q2, q1))
        return sorted(pairs, key=lambda p: p.q2)

    def default_pair(self, candidate: Candidate, graph, *, q1: float | None = None,
                     tag: str = "") -> Pair:
        """The sharding on JAX's default device order (what a deployment gets today).
        Raises NoDefaultOrder when JAX has no default order for its mesh on this slice."""
        try:
            p = _core.default_placement(self.topology, list(candidate.mesh_shape))
        except _core.CoreError as e:
            raise NoDefaultOrder(candidate.name, str(e)) from e
        device_of = list(p.device_of)
        q2 = _core.evaluate_q2(graph, self.topology, device_of).seconds
        return Pair(candidate, "jax-default", device_of, q2, q1, tag=tag or candidate.name)

    # ---- simulation -----------------------------------------------------------------------
    def simulate(self, pair: Pair, graph, *, timeline: bool = False) -> Pair:
        pair.sim = _core.simulate(graph, self.topology, pair.device_of,
                                  record_timeline=timeline, top_contributors=-1)
        pair.simulated = pair.sim.step_seconds
        pair.split = step_split.split(pair.sim, graph)
        return pair

    def write_trace(self, pair: Pair, graph, path: str) -> None:
        result = _core.simulate(graph, self.topology, pair.device_of, record_timeline=True)
        _core.write_sim_trace(result, self.topology, path)

    # ---- plan output ----------------------------------------------------------------------
    def coords(self, device_of: list[int]) -> list[list[int]]:
        return [list(c) for c in self.topology.coords_of(device_of)]

    def link_ends(self, link_id: int) -> tuple[list[int], list[int]]:
        """A link's two ends: chip coords for an ICI link, (x, y, z, core) for the link
        between the cores of a chip (TPU7x)."""
        link = self.topology.links[link_id]
        chips = self.topology.chips
        src, dst = list(chips[link["src"]]), list(chips[link["dst"]])
        if link["dim"] == 3:  # topo::kCoreAxis
            a, b = (0, 1) if link["dir"] > 0 else (1, 0)
            return src + [a], dst + [b]
        return src, dst

    def choice(self, pair: Pair, *, label: str | None = None, with_links: bool = False,
               graph=None) -> Choice:
        c = pair.candidate
        extra: dict[str, Any] = {}
        if label:
            extra["label"] = label
        if with_links and graph is not None:
            q2 = _core.evaluate_q2(graph, self.topology, pair.device_of)
            extra["link_bytes"] = [[*self.link_ends(i), b] for i, b in enumerate(q2.link_bytes)]
            extra["q2_compute_s"] = q2.compute_seconds
            extra["q2_exposed_comm_s"] = q2.exposed_comm_seconds
            extra["jax_default"] = self._default_order(c, graph)
            extra["block_timeline"] = block_timeline(graph, self.topology, pair.device_of)
        if pair.split is not None:
            extra["step_split"] = pair.split
        coords = self.coords(pair.device_of)
        extra["axis_groups"] = axis_groups_on_chips(c.mesh_shape, c.axis_names, coords)
        extra["axis_shapes"] = axis_shapes(c.mesh_shape, c.axis_names, coords)
        extra["placement_words"] = placement_in_words(c.mesh_shape, c.axis_names, coords)
        return Choice(candidate=c.name, mesh_shape=list(c.mesh_shape),
                      axis_names=list(c.axis_names), strategy=c.to_dict(),
                      placement=pair.placement, device_coords=coords,
                      chip_ids=list(pair.device_of),
                      q1_s=pair.q1, q2_s=pair.q2, simulated_s=pair.simulated, extra=extra)

    def _default_order(self, candidate: Candidate, graph) -> dict[str, Any]:
        """The sharding on JAX's default device order, for the report to draw beside the
        plan: coords, link bytes, Q2, simulated seconds, words; {"error": why} when JAX has
        no default order for the mesh."""
        try:
            p = _core.default_placement(self.topology, list(candidate.mesh_shape))
        except _core.CoreError as e:
            return {"error": str(e)}
        device_of = list(p.device_of)
        q2 = _core.evaluate_q2(graph, self.topology, device_of)
        sim = self.simulate(Pair(candidate, "jax-default", device_of, q2.seconds), graph)
        coords = self.coords(device_of)
        return {"device_coords": coords, "chip_ids": device_of, "q2_s": q2.seconds,
                "simulated_s": sim.simulated,
                "link_bytes": [[*self.link_ends(i), b] for i, b in enumerate(q2.link_bytes)],
                "placement_words": placement_in_words(candidate.mesh_shape,
                                                      candidate.axis_names, coords)}
