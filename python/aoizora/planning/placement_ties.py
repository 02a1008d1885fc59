"""Placements that tie the chosen one, and how the planner broke the tie. A pure function of
a plan's choice (its extra["placements"]: the chosen sharding's placements by Q2, with the
simulated step of those simulated), for the terminal summary and the report.

Two steps tie when they differ by at most TIE_REL of the step (0.001%): a few hop latencies
(1 us each) in a step of seconds, far below the accuracy of the model of the slice. Among
simulated pairs the planner takes the least simulated step, then the least Q2, then the
first by sharding name and placement name (decision.decision_key; Stage 2 ranks by (Q2,
sharding, placement)); placements of one sharding share its name, so a tie in both figures
goes to the placement whose name sorts first.

    ties(choice) -> [Tie]                 simulated ties, in the plan's order
    q2_ties_not_simulated(choice) -> [name]   placements with its Q2 that were not simulated
    tie_sentence(choice) -> str | None    both in words; None when nothing ties
"""

from __future__ import annotations

from dataclasses import dataclass

from aoizora.plan_format import Choice

TIE_REL = 1e-5  # relative to the choice's step: 0.001%


@dataclass(frozen=True)
class Tie:
    name: str            # the placement, as plan.json names it
    broken_by: str       # "simulated", "Q2" or "name": the first figure that differs
    margin_s: float      # how much more it has of that figure (0 for "name"), seconds


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= TIE_REL * max(abs(a), abs(b))


def _is_the_choice(c: Choice, name: str) -> bool:
    """The entry of the choice itself: its name, or (a baseline on JAX's default order, as
    plans name it) Stage 2's name for the same order, "default (...)"."""
    return name == c.placement or (c.placement == "jax-default" and name.startswith("default ("))


def ties(c: Choice) -> list[Tie]:
    """The other placements of the chosen sharding whose simulated step is within TIE_REL of
    the choice's, each with what separated it from the choice."""
    if c.simulated_s is None:
        return []
    out = []
    for p in c.extra.get("placements") or []:
        sim = p.get("simulated_s")
        if sim is None or _is_the_choice(c, p["name"]) or not _close(sim, c.simulated_s):
            continue
        q2, chosen_q2 = p.get("q2_s"), c.q2_s
        if sim != c.simulated_s:
            out.append(Tie(p["name"], "simulated", sim - c.simulated_s))
        elif q2 is not None and chosen_q2 is not None and q2 != chosen_q2:
            out.append(Tie(p["name"], "Q2", q2 - chosen_q2))
        else:
            out.append(Tie(p["name"], "name", 0.0))
    return out


def q2_ties_not_simulated(c: Choice) -> list[str]:
    """Placements listed with the choice's Q2 (within TIE_REL) that the planner did not
    simulate: ties in Q2 whose simulated step nobody knows."""
    if c.q2_s is None:
        return []
    return [p["name"] for p in c.extra.get("placements") or []
            if p.get("simulated_s") is None and p.get("q2_s") is not None
            and not _is_the_choice(c, p["name"]) and _close(p["q2_s"], c.q2_s)]


def _duration(s: float) -> str:
    """3 ns, 1 us, 2.5 ms: three significant figures in the largest unit below 1000."""
    s = abs(s)
    for unit, scale in (("ns", 1e-9), ("us", 1e-6), ("ms", 1e-3)):
        if round(s / scale, 1) < 999.5:
            return f"{s / scale:.3g} {unit}"
    return f"{s:.3g} s"


def _names(names: list[str], most: int = 4) -> str:
    """"a", "a and b", "a, b and c"; past `most`, the first ones and how many more."""
    if len(names) > most:
        return f"{', '.join(names[:most - 1])} and {len(names) - most + 1} more"
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _why(group: str, ts: list[Tie]) -> str:
    """What separated a group of ties from the choice: "1 us slower"."""
    if group == "name":
        return "the same step and Q2, its name sorts after"
    lo, hi = (_duration(m) for m in (min(t.margin_s for t in ts), max(t.margin_s for t in ts)))
    spread = lo if lo == hi else f"{lo} to {hi}"
    return f"{spread} slower" if group == "simulated" else f"the same step, Q2 {spread} more"


def tie_sentence(c: Choice) -> str | None:
    """"Tie: ..." in words: which placements tie the choice, what separated each from it,
    and the planner's rule; None when no placement ties it."""
    tied = ties(c)
    unsimulated = q2_ties_not_simulated(c)
    parts = []
    if tied:
        groups: dict[str, list[Tie]] = {}
        for t in tied:
            groups.setdefault(t.broken_by, []).append(t)
        each = "; ".join(f"{_names([t.name for t in ts])}: {_why(g, ts)}"
                         for g, ts in groups.items())
        parts.append(
            f"Tie: {_names([t.name for t in tied])} simulate{'s' if len(tied) == 1 else ''} "
            f"within {TIE_REL:.3%} of the chosen placement ({each}), far below what the model can "
            "tell apart. Ties go to the least simulated step, then the least Q2, then the "
            f"first name, so {'either' if len(tied) == 1 else 'any'} of them is as good.")
    if unsimulated:
        n = len(unsimulated)
        parts.append(f"{'Tie in Q2: ' if not tied else ''}{n} {'more ' if tied else ''}"
                     f"listed placement{'s' if n > 1 else ''} "
                     f"{'have' if n > 1 else 'has'} the chosen placement's Q2 within "
                     f"{TIE_REL:.3%} but {'were' if n > 1 else 'was'} not simulated "
                     f"({_names(unsimulated)}).")
    return " ".join(parts) or None
