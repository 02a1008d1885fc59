"""A saved plan (aoizora.plan/1, plan_format.py) checked against its schema before use.

    load(path, flag="--plan") -> plan.Plan; UserError (one line) naming the first field that
        is missing or of the wrong type, a choice that contradicts itself (mesh size,
        device count, axis names, repeated chips), or one that does not fit the plan's
        slice (check_slice).

plan.Plan.from_dict trusts its input; commands that read a user's file come here first.
"""

from __future__ import annotations

import json
import math

from aoizora.errors import UserError
from aoizora.inputs.validate import read_text

_OBJECTS = ("model", "workload", "topology", "choice")
_SECONDS = ("q1_s", "q2_s", "simulated_s")


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _ints(x, lo: int) -> bool:
    return isinstance(x, list) and all(
        isinstance(v, int) and not isinstance(v, bool) and v >= lo for v in x)


def check_choice(c, where: str) -> None:
    """Raises ValueError when the Choice dict `c` is malformed or inconsistent."""
    if not isinstance(c, dict):
        raise ValueError(f"{where} must be an object")
    for key in ("candidate", "placement"):
        if not isinstance(c.get(key), str):
            raise ValueError(f"{where}.{key} must be a string")
    if not isinstance(c.get("strategy"), dict):
        raise ValueError(f"{where}.strategy must be an object")
    mesh, names, coords = c.get("mesh_shape"), c.get("axis_names"), c.get("device_coords")
    if not _ints(mesh, 1) or not mesh:
        raise ValueError(f"{where}.mesh_shape must be a list of positive integers")
    if not isinstance(names, list) or len(names) != len(mesh) or not all(
            isinstance(n, str) for n in names):
        raise ValueError(f"{where}.axis_names must name each of the {len(mesh)} mesh axes")
    if not isinstance(coords, list) or not all(_ints(x, 0) and x for x in coords):
        raise ValueError(f"{where}.device_coords must be a list of device coordinates "
                         "((x, y, z), or (x, y, z, core) on two-core chips)")
    if len(coords) != math.prod(mesh) or len({tuple(x) for x in coords}) != len(coords):
        raise ValueError(f"{where}.device_coords must hold {math.prod(mesh)} distinct devices "
                         f"(the mesh {'x'.join(map(str, mesh))}), found {len(coords)}")
    if not _ints(c.get("chip_ids", []), 0):
        raise ValueError(f"{where}.chip_ids must be a list of device ids")
    for key in _SECONDS:
        x = c.get(key)
        if x is not None and (not _is_number(x) or x < 0):
            raise ValueError(f"{where}.{key} must be a number of seconds >= 0 or null")
    if not isinstance(c.get("extra", {}), dict):
        raise ValueError(f"{where}.extra must be an object")
    for kind, iv in (c.get("extra", {}).get("interval") or {}).items():
        _check_interval(iv, f"{where}.extra.interval.{kind}")
    if "speedup" in c.get("extra", {}):
        _check_speedup(c["extra"]["speedup"], f"{where}.extra.speedup")


def _check_interval(iv, where: str) -> None:
    """An interval (intervals.py): null, or low_s <= point_s <= high_s, seconds >= 0; high_s
    null when unbounded (plan.json holds no infinity)."""
    if iv is None:
        return
    if not isinstance(iv, dict) or not all(
            _is_number(iv.get(k)) or (k == "high_s" and iv.get(k) in (None, math.inf))
            for k in ("low_s", "point_s", "high_s")):
        raise ValueError(f"{where} must be an object with numbers low_s, point_s, high_s")
    high = math.inf if iv["high_s"] is None else iv["high_s"]   # older code wrote inf
    if not 0 <= iv["low_s"] <= iv["point_s"] <= high:
        raise ValueError(f"{where}: low_s {iv['low_s']} <= point_s {iv['point_s']} <= high_s "
                         f"{iv['high_s']} does not hold")


def _extent(dims: list[int]) -> str:
    return "x".join(map(str, list(dims) + [1] * (3 - len(dims))))


def _plan_slice(t: dict) -> tuple[list[int] | None, int | None, int]:
    """(dims, devices, cores per chip) of the plan's topology; a catalog name's own, which
    the figures beside it must match. dims or devices None where the plan does not say."""
    from aoizora import _core

    name, dims, devices, cores = t.get("name"), t.get("dims"), t.get("devices"), \
        t.get("cores_per_chip", 1)
    if not isinstance(name, str) or not name:
        raise ValueError("topology.name must be a non-empty string")
    if dims is not None and (not _ints(dims, 1) or not 1 <= len(dims) <= 3):
        raise ValueError("topology.dims must be a list of 1 to 3 positive integers")
    if devices is not None and (not _ints([devices], 1)):
        raise ValueError("topology.devices must be a positive integer")
    if cores not in (1, 2) or isinstance(cores, bool):
        raise ValueError("topology.cores_per_chip must be 1 or 2")
    if name not in _core.catalog_names():   # a topology file's: the plan's own figures
        return dims, devices, cores
    s = _core.make_topology(name)
    again = f"the plan was edited; plan again for {name}, or restore its topology"
    if dims is not None and _extent(dims) != _extent(list(s.dims)):
        raise ValueError(f"topology.dims {_extent(dims)} are not those of {name} "
                         f"({_extent(list(s.dims))}): {again}")
    if devices is not None and devices != s.num_devices:
        raise ValueError(f"topology.devices {devices} is not the {s.num_devices} of {name}: "
                         f"{again}")
    return list(s.dims), s.num_devices, s.cores_per_chip


def check_slice(d: dict) -> None:
    """Raises ValueError when a choice does not fit the plan's slice (topology.name, a
    catalog slice, or the figures a topology file's plan carries): another device count, or a
    device outside the slice's dims and cores. A plan edited to another slice would otherwise
    be compared, and run, on it."""
    t = d["topology"]
    dims, devices, cores = _plan_slice(t)
    if devices is None and dims is not None:
        devices = math.prod(dims) * cores
    choices = [("choice", d["choice"])]
    choices += [(f"runners_up[{i}]", c) for i, c in enumerate(d.get("runners_up", []))]
    choices += [(f"baselines.{tag}", c) for tag, c in d.get("baselines", {}).items()]
    for where, c in choices:
        coords = c["device_coords"]
        if devices is not None and len(coords) != devices:
            raise ValueError(f"{where} holds {len(coords)} devices but topology {t['name']} has "
                             f"{devices}: a plan runs on the slice it was made for; plan again "
                             f"for {t['name']}, or restore the plan's topology")
        if dims is None:
            continue
        limits = [*dims, *[1] * (3 - len(dims)), cores]
        for i, xyz in enumerate(coords):
            if len(xyz) > 4 or any(v >= lim for v, lim in zip(xyz, limits)):
                raise ValueError(f"{where}.device_coords[{i}] {tuple(xyz)} lies outside "
                                 f"topology {t['name']} (dims {_extent(dims)}, {cores} core"
                                 f"{'s' if cores > 1 else ''} per chip): plan again for "
                                 f"{t['name']}, or restore the plan's topology")


def check(d) -> None:
    from aoizora.plan_format import SCHEMA

    from aoizora.inputs import json_document

    if not isinstance(d, dict) or d.get("schema") != SCHEMA:
        raise ValueError(f"not an AoiZora plan (schema {SCHEMA}, written by `aoizora plan`): "
                         f"{json_document.describe(d)}")
    for key in _OBJECTS:
        if not isinstance(d.get(key), dict):
            raise ValueError(f"'{key}' must be an object")
    check_choice(d["choice"], "choice")
    runners = d.get("runners_up", [])
    if not isinstance(runners, list):
        raise ValueError("'runners_up' must be a list")
    for i, c in enumerate(runners):
        check_choice(c, f"runners_up[{i}]")
    base = d.get("baselines", {})
    if not isinstance(base, dict):
        raise ValueError("'baselines' must be an object")
    for tag, c in base.items():
        check_choice(c, f"baselines.{tag}")
        why = c.get("extra", {}).get("no_default_order")
        if why is not None and not (isinstance(why, str) and why):
            raise ValueError(f"baselines.{tag}.extra.no_default_order must be a string "
                             "(why JAX's default order cannot lay the mesh out)")
    planning = d.get("planning", {})
    if not isinstance(planning, dict):
        raise ValueError("'planning' must be an object")
    _check_failed_baselines(planning.get("baselines_failed", {}))
    _check_retries(planning.get("retries", []))
    _check_workload(d["workload"])
    _check_video(d.get("video", {}), _videos_per_call(d["workload"]))
    _check_uncertainty(d.get("uncertainty", {}))
    _check_flags(d.get("flags", {}))


def _check_flags(f) -> None:
    """flags (optional; plans before flags were a choice have none): the mode and the
    chosen set, its flags a list of strings (what --emit maxdiffusion puts in
    LIBTPU_INIT_ARGS)."""
    if not isinstance(f, dict):
        raise ValueError("'flags' must be an object")
    if not f:
        return
    if f.get("mode") not in ("none", "published", "search"):
        raise ValueError(f"flags.mode must be none, published or search, found "
                         f"{f.get('mode')!r}")
    chosen = f.get("chosen")
    if not (isinstance(chosen, dict) and isinstance(chosen.get("name"), str)
            and isinstance(chosen.get("flags"), list)
            and all(isinstance(x, str) and x.startswith("--") for x in chosen["flags"])):
        raise ValueError("flags.chosen must be an object with a 'name' and 'flags', a list "
                         "of '--flag=value' strings")


def _check_uncertainty(u) -> None:
    """uncertainty (optional; plans before intervals have none): the joint draws (or, in
    plans made without them, the bands), the rule that chose ("point" or "robust"), the
    ranked figure, the ties (each with its interval)."""
    from aoizora.planning import intervals

    if not isinstance(u, dict):
        raise ValueError("'uncertainty' must be an object")
    if not u:
        return
    if u.get("rule") not in (intervals.POINT, intervals.ROBUST):
        raise ValueError(f"uncertainty.rule must be {intervals.POINT!r} or "
                         f"{intervals.ROBUST!r}, found {u.get('rule')!r}")
    if u.get("ranked_by") not in (intervals.PER_VIDEO, intervals.PER_FORWARD):
        raise ValueError("uncertainty.ranked_by must be 'seconds per video' or 'seconds per "
                         "forward'")
    if "draws" in u:
        _check_draws(u)
    else:
        _check_bands(u.get("bands"))
    ties = u.get("ties")
    if not isinstance(ties, list):
        raise ValueError("uncertainty.ties must be a list")
    for i, t in enumerate(ties):
        if not (isinstance(t, dict) and isinstance(t.get("name"), str)):
            raise ValueError(f"uncertainty.ties[{i}] must be an object with a 'name'")
        _check_interval(t, f"uncertainty.ties[{i}]")


def _check_speedup(s, where: str) -> None:
    """A speedup over joint draws (speedups.Speedup.record): low <= median <= high, all
    > 0, 0 <= p_faster <= 1."""
    if not isinstance(s, dict) or not all(_is_number(s.get(k)) and s[k] > 0
                                          for k in ("median", "low", "high")):
        raise ValueError(f"{where}: median, low and high must be numbers > 0")
    if not s["low"] <= s["median"] <= s["high"]:
        raise ValueError(f"{where}: low {s['low']} <= median {s['median']} <= high "
                         f"{s['high']} does not hold")
    if not (_is_number(s.get("p_faster")) and 0 <= s["p_faster"] <= 1):
        raise ValueError(f"{where}.p_faster must be a number in [0, 1]")


def _check_draws(u: dict) -> None:
    """uncertainty from joint draws (confidence.py): their count, each row's speedup, the
    changes considered."""
    if isinstance(u["draws"], bool) or not isinstance(u["draws"], int) or u["draws"] < 1:
        raise ValueError("uncertainty.draws must be an integer >= 1")
    for i, r in enumerate(u.get("speedups") or []):
        _check_speedup(r, f"uncertainty.speedups[{i}]")
    for i, c in enumerate(u.get("changes") or []):
        if not (isinstance(c, dict) and isinstance(c.get("made"), bool)
                and _is_number(c.get("p"))):
            raise ValueError(f"uncertainty.changes[{i}] must say whether it was made and "
                             "its P")


def _check_bands(bands) -> None:
    for part in ("communication", "compute"):
        rel = (bands or {}).get(part, {}).get("rel") if isinstance(bands, dict) else None
        if not (_is_number(rel) and rel >= 0):
            raise ValueError(f"uncertainty.bands.{part}.rel must be a number >= 0")


def _positive_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 1


def _check_workload(w: dict) -> None:
    """workload.batch (the program's batch: each video's CFG pair) and videos_per_call
    (plans before batches have neither: one video, batch 2): positive integers that agree,
    batch = 2 x videos_per_call."""
    batch, videos = w.get("batch"), w.get("videos_per_call")
    if batch is not None and not _positive_int(batch):
        raise ValueError("workload.batch must be a positive integer or null")
    if videos is None:
        return
    if not _positive_int(videos):
        raise ValueError("workload.videos_per_call must be a positive integer")
    if batch is not None and batch != 2 * videos:
        raise ValueError(f"workload.batch {batch} must be 2 x workload.videos_per_call "
                         f"{videos} (each video's CFG pair)")


def _videos_per_call(w: dict) -> int:
    """Videos one call serves: workload.videos_per_call, else 1 (plans before batches)."""
    return w.get("videos_per_call") or 1


def _check_video(video, videos: int = 1) -> None:
    """video (optional; plans before seconds per video have none): the plan's and each
    baseline's seconds (per call), numbers >= 0 or null, the step count, and, where given
    (plans before batches have none), seconds_per_video = seconds / videos per call and
    videos_per_call equal to the workload's."""
    if not isinstance(video, dict):
        raise ValueError("'video' must be an object")
    if not video or "not_priced" in video:
        return
    steps = video.get("steps")
    if not (isinstance(steps, int) and not isinstance(steps, bool) and steps >= 1):
        raise ValueError("video.steps must be a positive integer")
    if video.get("runtime", "jax") not in ("jax", "maxdiffusion"):
        raise ValueError("video.runtime must be 'jax' or 'maxdiffusion'")
    gain = video.get("jax_runtime_gain")
    if gain is not None and not (isinstance(gain, dict) and all(
            _is_number(gain.get(k)) for k in ("text_encoder_s", "vae_decode_s", "total_s"))):
        raise ValueError("video.jax_runtime_gain must hold text_encoder_s, vae_decode_s and "
                         "total_s, numbers of seconds")
    if video.get("videos_per_call", videos) != videos:
        raise ValueError(f"video.videos_per_call {video.get('videos_per_call')!r} must be "
                         f"the workload's {videos}")
    for where, v in [("video", video)] + [(f"video.baselines.{t}", b) for t, b in
                                          video.get("baselines", {}).items()]:
        per_video = v.get("seconds_per_video")
        for key, x in ([("seconds", v.get("seconds")), ("seconds_per_video", per_video)]
                       + list(v.get("parts", {}).items())):
            if x is not None and (not _is_number(x) or x < 0):
                raise ValueError(f"{where}.{key} must be a number of seconds >= 0 or null")
        seconds = v.get("seconds")
        if per_video is not None and seconds is not None and not math.isclose(
                per_video * videos, seconds, rel_tol=1e-9, abs_tol=1e-12):
            raise ValueError(f"{where}.seconds_per_video {per_video} must be seconds "
                             f"{seconds} over the {videos} video(s) per call")


def _check_retries(retries) -> None:
    """planning.retries: the jobs run a second time, each {"job": name, "why": reason}."""
    if not (isinstance(retries, list) and all(
            isinstance(r, dict) and isinstance(r.get("job"), str)
            and isinstance(r.get("why"), str) for r in retries)):
        raise ValueError("planning.retries must be a list of objects with 'job' and 'why' "
                         "strings")


def _check_failed_baselines(failed) -> None:
    """planning.baselines_failed: tag -> {"candidate": sharding, "why": reason}."""
    if not isinstance(failed, dict):
        raise ValueError("planning.baselines_failed must be an object")
    for tag, f in failed.items():
        if not (isinstance(f, dict) and isinstance(f.get("candidate"), str)
                and isinstance(f.get("why"), str)):
            raise ValueError(f"planning.baselines_failed.{tag} must be an object with "
                             "'candidate' and 'why' strings")


def load(path: str, flag: str = "--plan"):
    from aoizora.plan_format import Plan

    text = read_text(path, flag, "plan JSON file")
    try:
        d = json.loads(text)
        check(d)
        check_slice(d)
    except json.JSONDecodeError as e:
        raise UserError(f"{flag} {path}:{e.lineno}:{e.colno}: not JSON: {e.msg}") from None
    except ValueError as e:
        raise UserError(f"{flag} {path}: {e}") from None
    try:
        return Plan.from_dict(d)
    except TypeError as e:  # a field Choice does not know
        raise UserError(f"{flag} {path}: {e}") from None
