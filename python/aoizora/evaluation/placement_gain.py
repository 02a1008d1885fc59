"""What placement adds to a sharding, simulated: the placements beyond axis orders (snake
orders, tile cycles, local search) against the best axis order of the same sharding and
against JAX's default order; and, on slices of at most 8 devices, every device order.

A placement's name says its kind (place/ and stage2.rank): "axes ..." and "row-major" are
axis orders, "default (...)" and "jax-default" JAX's default order; anything else ("snake
xy", "tile ...", "search(...)") goes beyond axis orders."""

from __future__ import annotations

import itertools
import math
from typing import Any

# Slices up to this many devices get the exhaustive check (8! = 40,320 orders).
EXHAUSTIVE_MAX_DEVICES = 8


def placement_kind(name: str) -> str:
    if name.startswith("axes ") or name == "row-major":
        return "axis-order"
    if name.startswith("default") or name == "jax-default":
        return "jax-default"
    return "beyond"


def beyond_axis_orders(pairs: list, default) -> dict[str, Any]:
    """pairs: one sharding's simulated placements; default: its pair on JAX's default order.
    Gains are "x / y - 1" of simulated seconds: how much slower the reference is."""
    best = min(pairs, key=lambda p: (p.simulated, p.placement))
    axis = [p for p in pairs if placement_kind(p.placement) == "axis-order"]
    best_axis = min(axis, key=lambda p: (p.simulated, p.placement)) if axis else None
    out: dict[str, Any] = {"placements": len(pairs), "best": best.placement,
                           "best_kind": placement_kind(best.placement),
                           "best_s": best.simulated, "default_s": default.simulated,
                           "gain_vs_default": default.simulated / best.simulated - 1}
    if best_axis is not None:
        out.update(best_axis_order=best_axis.placement, best_axis_order_s=best_axis.simulated,
                   gain_beyond_axis_orders=best_axis.simulated / best.simulated - 1)
    return out


def every_device_order(stage2, graph, chosen_chip_of: list[int],
                       default_chip_of: list[int]) -> dict[str, Any] | None:
    """Simulates the program under every assignment of partitions to chips (n! orders, n <=
    EXHAUSTIVE_MAX_DEVICES), and places the plan's and JAX's default order among them.
    None on larger slices."""
    from aoizora import _core

    n = graph.num_partitions
    if n > EXHAUSTIVE_MAX_DEVICES or n != stage2.num_devices:
        return None
    times = {}
    for order in itertools.permutations(range(n)):
        times[order] = _core.simulate(graph, stage2.topology, list(order)).step_seconds
    ranked = sorted(times.values())
    best, worst = ranked[0], ranked[-1]

    def standing(device_of: list[int]) -> dict[str, Any]:
        t = times[tuple(device_of)]
        return {"simulated_s": t, "over_best": t / best - 1,
                "faster_orders": sum(1 for x in ranked if x < t * (1 - 1e-12))}

    return {"orders": math.factorial(n), "best_s": best, "worst_s": worst,
            "worst_over_best": worst / best - 1, "plan": standing(chosen_chip_of),
            "jax_default": standing(default_chip_of)}
