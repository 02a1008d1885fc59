"""Replicas of one program simulated together on one slice: R copies of the replica's
compiled program as one program (hlo::replicated, bound as _core.replicated_graph) under the
copies' device orders concatenated, so every replica's flows share the slice's links as they
would if the replicas ran at once. Each replica's latency is the max finish time over its own
chips (sim ChipTime.finish); a replica served at the pace of the slowest is the slowest's.

    Program(graph, topology, device_of, step_s)   one replica's plan: its CollectiveGraph,
        the topology it was planned on, its device order there, its simulated forward alone
    device_orders(split, program, slice_topology) -> [[device id]]: each replica's order
        moved into its box (the box's origin added, a transposed box's axes permuted)
    simulate(graph, topology, orders, **options) -> Together: every order a replica;
        UserError (one line) for orders that do not fit the graph or the slice

The copies start together and run the same schedule, so the simulator's loop extrapolation
(max_iterations trips simulated, the rest at the last trip's period) holds as for one
program: the replicas' contention repeats trip after trip (docs/serving.md). Deterministic.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from aoizora.errors import UserError


@dataclass(frozen=True)
class Program:
    """One replica's plan as the simulator needs it."""

    graph: Any                   # _core.CollectiveGraph of one replica
    topology: Any                # _core.Topology it was planned on (its catalog slice)
    device_of: tuple[int, ...]   # partition -> device id on `topology`
    step_s: float                # one forward, simulated alone on `topology`, seconds


@dataclass(frozen=True)
class Together:
    """R replicas of one program simulated at once on one slice."""

    seconds: tuple[float, ...]   # each replica's latency: max finish over its devices, s

    @property
    def slowest(self) -> float:
        return max(self.seconds)


def device_orders(split, program: Program, slice_topology) -> list[list[int]]:
    """Each replica's device order on the slice: the plan's device order on its catalog slice
    with each device's coordinates moved into the replica's box (splits.Split.origins). A
    box in the other orientation (4x2 planned as v5e:2x4) takes its axes in the order that
    matches the sizes; a TPU7x device keeps its core."""
    dims = [int(d) for d in program.topology.dims]
    perm = _axis_order(tuple(split.replica_dims), tuple(dims + [1] * (3 - len(dims)))[:3])
    where = {tuple(c): d for d, c in enumerate(
        slice_topology.coords_of(list(range(slice_topology.num_devices))))}
    coords = program.topology.coords_of(list(program.device_of))
    orders = []
    for origin in split.origins:
        order = []
        for c in coords:
            moved = tuple(origin[i] + c[perm[i]] for i in range(3)) + tuple(c[3:])
            order.append(where[moved])
        orders.append(order)
    return orders


def _axis_order(box: tuple[int, ...], planned: tuple[int, ...]) -> tuple[int, ...]:
    """perm with box[i] == planned[perm[i]], the identity when it fits (no needless turn)."""
    for perm in itertools.permutations(range(3)):
        if all(box[i] == planned[perm[i]] for i in range(3)):
            return perm
    raise UserError(f"replica box {'x'.join(map(str, box))} is not the planned slice "
                    f"{'x'.join(map(str, planned))} in any order of its axes")


def simulate(graph, topology, orders: list[list[int]], **options) -> Together:
    """`len(orders)` copies of `graph` simulated at once on `topology`, copy k on orders[k]
    (partition p of copy k on device orders[k][p]). Options go to _core.simulate. UserError
    when an order's length is not the graph's partition count, a device is used twice or
    is not on the topology."""
    from aoizora import _core

    n = graph.num_partitions
    if not orders:
        raise UserError("simulate together: no replica given")
    for k, order in enumerate(orders):
        if len(order) != n:
            raise UserError(f"simulate together: replica {k} has {len(order)} devices, the "
                            f"program {n} partitions")
    flat = [d for order in orders for d in order]
    seen: set[int] = set()
    for d in flat:
        if d in seen:
            raise UserError(f"simulate together: device {d} is used twice")
        seen.add(d)
    bad = next((d for d in flat if not 0 <= d < topology.num_devices), None)
    if bad is not None:
        raise UserError(f"simulate together: device {bad} is not on {topology.name} "
                        f"({topology.num_devices} devices)")
    result = _core.simulate(_core.replicated_graph(graph, len(orders)), topology, flat,
                            **options)
    # A chip's finish includes its share of every collective; the replica is done when its
    # last chip is, as one program's latency is its last chip's (SimResult.step_seconds).
    return Together(tuple(max(result.chips[d].finish for d in order) for order in orders))
