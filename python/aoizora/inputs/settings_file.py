"""SETTINGS.yaml, the input of `aoizora plan-many`: a list of settings to plan, each checked
before any work.

    - model: wan2.1-t2v-14b      # a preset (aoizora plan --model), required
      video: 720p                # default: the model's 480p (or its own size)
      frames: 81                 # default 21 (tiny: its fixed 9)
      topology: v5e:4x4          # a slice name or a topology JSON file, required
      top_k: 4                   # optional: Stage 1's K (default: from measured recall)
      hardware: v5e-fitted.json  # optional: a hardware profile replacing the chip figures

    load(path) -> list[Request]  UserError, one line naming the file, the setting and its
                                 line: not YAML, not a list, an unknown or missing field, a
                                 value of the wrong type, an unknown model or topology, a
                                 workload the model cannot run, two settings alike
Files (topology JSON, hardware) are found relative to the settings file's folder.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field

from aoizora.errors import UserError

FIELDS = {"model": str, "video": str, "frames": int, "topology": str, "top_k": int,
          "hardware": str}
REQUIRED = ("model", "topology")


@dataclass(frozen=True)
class Request:
    """One setting, resolved (video and frames filled in, files as absolute paths)."""

    model: str
    video: str
    frames: int
    topology: str
    top_k: int | None = None
    hardware: str | None = None
    line: int = field(default=0, compare=False)   # where it stands in the settings file

    @property
    def key(self) -> str:
        """A file-name-safe name: "wan-1.3b_v5e-2x4_480p-21f", "_k4" for top_k 4, and the
        hardware profile's file name."""
        short = self.model.replace("wan2.1-t2v-", "wan-")
        topo = _stem(self.topology) if self.topology.endswith(".json") else self.topology
        key = f"{short}_{topo}_{self.video}-{self.frames}f"
        if self.top_k is not None:
            key += f"_k{self.top_k}"
        if self.hardware:
            key += f"_{_stem(self.hardware)}"
        return re.sub(r"[^A-Za-z0-9._-]+", "-", key)

    def record(self) -> dict:
        """What the setting's plan depends on, files by their content (sha256)."""
        files = {"topology": self.topology, "hardware": self.hardware}
        return {"model": self.model, "video": self.video, "frames": self.frames,
                "topology": self.topology, "top_k": self.top_k, "hardware": self.hardware,
                **{f"{k}_sha256": _sha256(v) for k, v in files.items()
                   if v and os.path.isfile(v)}}


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load(path: str) -> list[Request]:
    import yaml

    from aoizora.inputs.validate import read_text

    text = read_text(path, "plan-many", "settings file (YAML)")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f":{mark.line + 1}:{mark.column + 1}" if mark else ""
        raise UserError(f"{path}{where}: not YAML: {getattr(e, 'problem', None) or e}") from None
    if not isinstance(data, list) or not data:
        raise UserError(f"{path}: expected a list of settings (- model: ..., topology: ...), "
                        f"found {type(data).__name__ if data is not None else 'nothing'}")
    folder = os.path.dirname(os.path.abspath(path))
    out, keys = [], {}
    for i, (item, node) in enumerate(zip(data, root.value), 1):
        line = node.start_mark.line + 1
        r = _request(item, f"{path}: setting {i} (line {line})", folder, line)
        if r.key in keys:
            raise UserError(f"{path}: settings {keys[r.key]} and {i} (line {line}) would write "
                            f"the same plan {r.key}.json: remove the repeat, or rename a "
                            "topology or hardware file")
        keys[r.key] = i
        out.append(r)
    return out


def _request(item, where: str, folder: str, line: int) -> Request:
    if not isinstance(item, dict):
        raise UserError(f"{where}: expected fields (model: ..., topology: ...), found "
                        f"{type(item).__name__}")
    for k, v in item.items():
        if k not in FIELDS:
            raise UserError(f"{where}: unknown field {k!r}: use {', '.join(FIELDS)}")
        if not isinstance(v, FIELDS[k]) or isinstance(v, bool):
            raise UserError(f"{where}: {k} must be {FIELDS[k].__name__}, found {v!r}")
    missing = [k for k in REQUIRED if k not in item]
    if missing:
        raise UserError(f"{where}: missing {', '.join(missing)}")
    try:
        return _resolved(item, folder, line)
    except UserError as e:
        raise UserError(f"{where}: {e}") from None


def _resolved(item: dict, folder: str, line: int) -> Request:
    from aoizora.hardware import hardware_file
    from aoizora.inputs import topology_file, validate
    from aoizora.models import MODELS, default_video

    model = item["model"]
    if model not in MODELS:
        raise UserError(f"unknown model {model!r}: use one of {', '.join(sorted(MODELS))}")
    video = item.get("video") or default_video(model, "480p")
    _, wl = validate.workload(model, video, item.get("frames"))
    top_k = item.get("top_k")
    if top_k is not None and not 1 <= top_k <= 1000:
        raise UserError(f"top_k {top_k}: use 1 to 1000")
    hardware = item.get("hardware")
    if hardware:
        hardware = hardware_file.check(os.path.join(folder, hardware), "hardware")
    topology = item["topology"]
    if topology.endswith(".json"):
        topology = os.path.join(folder, topology)
    topology_file.load(topology, "topology", hardware=hardware)
    return Request(model, video, wl.frames, topology, top_k, hardware, line)
