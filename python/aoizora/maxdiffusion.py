"""A plan as MaxDiffusion runs it (`aoizora plan --emit maxdiffusion FILE`, `aoizora emit`):
the command a user types, every config override in the form MaxDiffusion's pyconfig parses,
the LIBTPU_INIT_ARGS the plan was compiled under, and the device order its mesh must take.

    doc = to_maxdiffusion(plan, device_ids)   # {"maxdiffusion", "aoizora", "overrides", ...}
    yaml_text(plan)                           # the same, as YAML (device ids looked up)
    candidate_of(doc["overrides"])            # back to the Candidate (the round-trip test)
    command_args(doc["overrides"], config)    # ["key=value", ...] as pyconfig parses them

How a plan maps (MaxDiffusion's base_wan_*.yml; mesh axes data, fsdp, context, tensor):
    data, fsdp, context, tensor  ici_{data,fsdp,context,tensor}_parallelism
    K/V gathered / no context    attention=flash, attention_sharding_uniform=true (sequence
                                 sharded q and K/V: the kernel gathers K/V)
    ring                         attention=tokamax_ring: tokamax's ring kernel, the one a TPU
                                 plan compiles and prices (models/tokamax_ring.py); a plan that
                                 priced another kernel names it a stand-in (the file says so)
    ulysses / ulysses x ring     attention=ulysses / ulysses_ring (+ ulysses_shards)
    weights over context         MaxDiffusion's own rule `embed -> [context, fsdp]`; else the
                                 rule `embed -> fsdp` (logical_axis_rules, in full)
    splash blocks                flash_block_sizes {block_q, block_kv, block_kv_compute} and
                                 block_q_dkv = block_q (tokamax kernels and ulysses_ring read
                                 their forward block_q from it); flash_min_seq_length=0
    the workload                 per_device_batch_size = videos per call / devices (V videos
                                 = the plan's batch 2V, each one's CFG pair; MaxDiffusion runs
                                 int(per_device_batch_size x devices) prompts, each with its
                                 negative), height, width, num_frames
The keys, kernel names and block keys MaxDiffusion has at the commit this was checked against
are recorded in maxdiffusion_contract.json (bench/maxdiffusion_check.py regenerates it from a
checkout); nothing is emitted that the record does not have.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
from typing import Any

from aoizora.errors import UserError
from aoizora.planning.kernels import SPLASH_KERNELS, kernel_for
from aoizora.planning.strategies import Candidate, candidate_name

MESH_AXES = ("data", "fsdp", "context", "tensor")
# The Wan config file of each preset in MaxDiffusion (src/maxdiffusion/configs/).
CONFIG_OF = {
    "wan2.1-t2v-1.3b": "base_wan_1_3b.yml", "wan2.1-t2v-14b": "base_wan_14b.yml",
    "wan2.1-i2v-14b": "base_wan_i2v_14b.yml", "wan2.2-t2v-a14b": "base_wan_27b.yml",
    "wan2.2-i2v-a14b": "base_wan_i2v_27b.yml",
}
CONFIG_DIR = "src/maxdiffusion/configs"
ENTRY_POINT = "src/maxdiffusion/generate_wan.py"
LAUNCHER = "python -m aoizora.launch.maxdiffusion"
# The kernel MaxDiffusion runs for each context form, and what the plan priced in its place
# when that is not the same kernel.
ATTENTION = {"none": "flash", "allgather_kv": "flash", "ring": "tokamax_ring",
             "ulysses": "ulysses", "ulysses_ring": "ulysses_ring"}
STAND_IN = {"ring": "the plan priced a ring of jax's splash kernel over the context axis as a "
                    "stand-in for tokamax's ring kernel (MaxDiffusion's tokamax_ring)"}
# The kernel MaxDiffusion runs in the ring steps is its own copy of tokamax's ring kernel
# (kernels/splash_attention/ring_attention_kernel.py at the recorded commit), with
# use_base2_exp in the Wan configs: what a plan priced in its place, by form.
RING_STAND_IN = {
    "ring": "PyPI tokamax's ring kernel (0.0.12, natural exp) stands in for MaxDiffusion's own "
            "copy of it (base-2 exp, kernels/splash_attention/ring_attention_kernel.py)",
    "ulysses_ring": "jax's splash kernel returning its residuals stands in for the ring steps "
                    "of MaxDiffusion's own ring kernel (base-2 exp)"}
FORM_OF = {"ring": "ring", "tokamax_ring": "ring", "ulysses": "ulysses",
           "ulysses_ring": "ulysses_ring"}
# MaxDiffusion's base_wan_14b.yml rules, in order (first match wins).
BASE_RULES = [
    ["batch", ["data", "fsdp"]], ["activation_batch", ["data", "fsdp"]],
    ["activation_self_attn_heads", ["context", "tensor"]],
    ["activation_cross_attn_q_length", ["context", "tensor"]],
    ["activation_length", "context"], ["activation_heads", "tensor"], ["mlp", "tensor"],
    ["embed", ["context", "fsdp"]], ["heads", "tensor"], ["norm", "tensor"],
    ["conv_batch", ["data", "context", "fsdp"]], ["out_channels", "tensor"],
    ["conv_out", "context"],
]


@functools.cache
def contract() -> dict[str, Any]:
    """What MaxDiffusion has at the recorded commit: its config keys (with their YAML types)
    per config file, its registered attention kernels, the flash_block_sizes keys it reads."""
    path = os.path.join(os.path.dirname(__file__), "maxdiffusion_contract.json")
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def overrides(c: Candidate) -> dict[str, Any]:
    """The MaxDiffusion config keys that give candidate `c` (its sharding and kernel)."""
    out: dict[str, Any] = {
        "ici_data_parallelism": c.data, "ici_fsdp_parallelism": c.fsdp,
        "ici_context_parallelism": c.context, "ici_tensor_parallelism": c.tensor,
        "attention": ATTENTION[c.form], "attention_sharding_uniform": True}
    if c.form == "ulysses_ring":
        out["ulysses_shards"] = c.ulysses
    if c.context > 1 and not c.weights_over_context:
        out["logical_axis_rules"] = [["embed", "fsdp"] if r[0] == "embed" else r
                                     for r in BASE_RULES]
    if c.kernel in SPLASH_KERNELS:
        out["flash_min_seq_length"] = 0  # else short sequences run dot_product attention
        out["flash_block_sizes"] = {"block_q": c.block_q, "block_kv": c.block_kv,
                                    "block_kv_compute": c.block_kv_compute,
                                    "block_q_dkv": c.block_q}
    return out


def per_device_batch_size(videos: int, devices: int) -> float:
    """MaxDiffusion's per_device_batch_size for `videos` prompts per call on `devices`
    devices: videos / devices, as the float its config file holds. UserError (one line)
    where MaxDiffusion would run another count: pyconfig takes int(per_device_batch_size x
    devices) prompts, and the float's truncation loses one for some device counts (1 / 49
    x 49 < 1)."""
    per = videos / devices
    if int(devices * float(repr(per))) != videos:
        raise UserError(f"--batch {videos}: MaxDiffusion cannot run {videos} video(s) per "
                        f"call on {devices} devices: per_device_batch_size {per!r} x "
                        f"{devices} truncates to {int(devices * per)} prompts")
    return per


def workload_overrides(plan, devices: int) -> dict[str, Any]:
    """The workload the plan priced: its videos per call (the CFG pairs of its batch, 2
    per video; plans before batches: batch 2, one video) at the plan's size and frames, as
    MaxDiffusion counts it (per_device_batch_size x devices prompts)."""
    from aoizora.models import get_model

    name, video = plan.model.get("name"), plan.workload.get("video")
    videos = int(plan.workload.get("batch") or 2) // 2
    per = per_device_batch_size(videos, devices)
    height, width = dict(get_model(name).sizes)[video]
    out = {"per_device_batch_size": per, "height": height, "width": width,
           "num_frames": int(plan.workload["frames"])}
    steps = plan.video.get("steps")
    if steps is not None:  # the step count seconds per video was priced at
        out["num_inference_steps"] = int(steps)
    return out


def candidate_of(o: dict[str, Any]) -> Candidate:
    """The candidate an overrides dict gives (the inverse of overrides())."""
    data, fsdp = int(o["ici_data_parallelism"]), int(o["ici_fsdp_parallelism"])
    context, tensor = int(o["ici_context_parallelism"]), int(o["ici_tensor_parallelism"])
    attention = o.get("attention", "flash")
    if context == 1:
        form, ulysses = "none", 1
    elif attention == "flash":
        form, ulysses = "allgather_kv", 1
    elif attention in FORM_OF:
        form = FORM_OF[attention]
        ulysses = {"ring": 1, "ulysses": context}.get(form) or int(o["ulysses_shards"])
    else:
        raise UserError(f"MaxDiffusion attention {attention!r} has no AoiZora candidate")
    rules = o.get("logical_axis_rules", BASE_RULES)
    embed = next((r[1] for r in rules if r[0] == "embed"), [])
    wc = context > 1 and "context" in ([embed] if isinstance(embed, str) else embed)
    blocks = o.get("flash_block_sizes")
    kernel = {"kernel": kernel_for(form, "tpu"), "block_q": int(blocks["block_q"]),
              "block_kv": int(blocks["block_kv"]),
              "block_kv_compute": int(blocks.get("block_kv_compute", blocks["block_kv"]))} \
        if blocks else {}
    return Candidate(candidate_name(data, fsdp, context, form, ulysses, tensor, wc),
                     data, fsdp, context, form, ulysses, tensor, wc, **kernel,
                     runtime="maxdiffusion")


def config_of(model_name: str | None) -> str:
    """MaxDiffusion's config file for a model, or a UserError naming those it has."""
    if model_name not in CONFIG_OF:
        raise UserError(f"--emit maxdiffusion: MaxDiffusion (at {contract()['commit'][:7]}) has "
                        f"no Wan config for {model_name!r}; it has "
                        f"{', '.join(sorted(CONFIG_OF))}")
    return CONFIG_OF[model_name]


def command_args(o: dict[str, Any], config: str) -> list[str]:
    """`key=value` for each override, the value written as pyconfig types a command-line
    string by the YAML type of the key's default (bool: true/false, list: a Python literal,
    dict: JSON). Raises UserError for a key the recorded config does not have."""
    types = contract()["configs"][config]
    out = []
    for key, value in o.items():
        kind = types.get(key)
        if kind is None:
            raise UserError(f"MaxDiffusion's {config} has no key {key!r}: cannot emit it")
        if kind == "bool":
            text = "true" if value else "false"
        elif kind == "dict":
            text = json.dumps(value, separators=(",", ":"))
        elif kind == "float":
            text = repr(float(value))
        else:  # int, str, list (a Python literal, read with ast.literal_eval)
            text = repr(value) if kind == "list" else str(value)
        out.append(f"{key}={text}")
    return out


def _checked_args(o: dict[str, Any], config: str) -> list[str]:
    """command_args(o, config), after checking the kernel and the block keys against the
    recorded MaxDiffusion (command_args checks every key)."""
    facts = contract()
    if o["attention"] not in facts["kernels"]:
        raise UserError(f"MaxDiffusion registers no attention kernel {o['attention']!r}")
    unread = set(o.get("flash_block_sizes", {})) - set(facts["block_size_keys"])
    if unread:
        raise UserError(f"MaxDiffusion reads no flash_block_sizes key {sorted(unread)}")
    return command_args(o, config)


def to_maxdiffusion(plan, device_ids: list[int],
                    maxdiffusion_ids: list[int] | str | None = None,
                    path: str = "FILE.yaml") -> dict[str, Any]:
    """The emitted document of a plan. `device_ids[i]` is the JAX id of the device at
    plan.choice.device_coords[i] (jax_device_ids() finds them); `maxdiffusion_ids` the ids
    in the order MaxDiffusion's own create_device_mesh builds, or why it cannot; `path` the
    file the document is written to (the launcher's command names it)."""
    c = Candidate.from_dict(plan.choice.strategy)
    _check_expressible(c)
    config = config_of(plan.model.get("name"))
    o = {**overrides(c), **workload_overrides(plan, len(device_ids))}
    args = _checked_args(o, config)
    libtpu = libtpu_init_args(plan)
    if maxdiffusion_ids is None:
        order = "not compared with MaxDiffusion's own order: run with the launcher"
    elif isinstance(maxdiffusion_ids, str):
        order = f"MaxDiffusion cannot build this mesh by itself ({maxdiffusion_ids}): " \
                "run with the launcher"
    elif list(maxdiffusion_ids) == list(device_ids):
        order = "the same as MaxDiffusion's own: the plain command runs the plan as it is"
    else:
        order = "differs from MaxDiffusion's own: run with the launcher"
    env = f"LIBTPU_INIT_ARGS={shlex.quote(libtpu)} " if libtpu else ""
    plain = " ".join([f"{env}python {ENTRY_POINT} {CONFIG_DIR}/{config}",
                      *map(shlex.quote, args)])
    return {
        "maxdiffusion": {
            "checked_against": contract()["commit"], "config": f"{CONFIG_DIR}/{config}",
            "entry_point": ENTRY_POINT, "libtpu_init_args": libtpu, "args": args,
            "device_order": order,
            "launcher_command": f"{env}{LAUNCHER} {shlex.quote(path)} -- [your MaxDiffusion args]",
            "command": plain,
        },
        "aoizora": {"model": plan.model.get("name"), "topology": plan.topology.get("name"),
                    "candidate": c.name, "placement": plan.choice.placement,
                    "simulated_step_s": plan.choice.simulated_s,
                    # per call of videos_per_call videos (one video: per video)
                    "simulated_video_s": plan.video.get("seconds"),
                    "videos_per_call": int(plan.workload.get("batch") or 2) // 2,
                    "simulated_s_per_video": plan.video.get("seconds_per_video",
                                                            plan.video.get("seconds")),
                    "steps": plan.video.get("steps"),
                    "attention_kernel": c.kernel,
                    "priced_for": c.runtime, "executes": executes(c),
                    **({"stand_in": STAND_IN[c.form]}
                       if c.form in STAND_IN and c.kernel != ATTENTION[c.form] else {}),
                    "not_planned": _not_planned(plan)},
        "overrides": o,
        "device_order": {"mesh_axes": list(MESH_AXES),
                         "mesh_shape": [c.data, c.fsdp, c.context, c.tensor],
                         "device_ids": list(device_ids),
                         "device_coords": [list(x) for x in plan.choice.device_coords]},
    }


def _check_expressible(c: Candidate) -> None:
    """UserError unless MaxDiffusion runs the very program the plan priced for `c`."""
    if candidate_of(overrides(c)).key() == c.key():
        return
    if c.runtime != "maxdiffusion":
        raise UserError(f"the plan priced {c.name} as AoiZora's JAX runtime runs it; "
                        "MaxDiffusion would run another program (its attention heads are not "
                        "split over tensor; attention=ulysses also runs cross-attention through "
                        "Ulysses): re-plan with --emit maxdiffusion")
    raise UserError(f"MaxDiffusion cannot express {c.name}: its config has no key for it")


def _rule_table(kernel: str) -> list:
    """The attention rules pyconfig prepends for `kernel` (its ulysses_ring, ring, ulysses
    and sequence-parallel families, in that order of precedence; every emitted command sets
    attention_sharding_uniform, so one of them always applies), from the recorded contract."""
    rules = contract()["attention_rules"]
    if kernel.startswith("ulysses_ring"):
        return rules["ULYSSES_RING_ATTENTION_AXIS_RULES"]
    if "ring" in kernel:
        return rules["RING_ATTENTION_AXIS_RULES"]
    if "ulysses" in kernel:
        return rules["ULYSSES_ATTENTION_AXIS_RULES"]
    return rules["SEQUENCE_PARALLEL_AXIS_RULES"]


def resolved_attention(kernel: str) -> dict[str, bool]:
    """What MaxDiffusion's rules (the recorded tables, first match wins) make of the attention
    under `kernel`: whether the heads are split over tensor and whether cross-attention's
    text K/V are split over context."""
    table = dict((r[0], r[1]) for r in reversed(_rule_table(kernel)))
    local_kv = kernel in contract()["cross_local_kv_kernels"]
    return {"heads_over_tensor": table["activation_self_attn_heads"] is not None
            and "tensor" in table["activation_self_attn_heads"],
            "cross_kv_over_context": not local_kv
            and table["activation_cross_attn_kv_length"] == "context"}


def executes(c: Candidate) -> dict[str, Any]:
    """What MaxDiffusion executes for `c` at the recorded commit, as the plan must have priced
    it (bench/maxdiffusion_check.py reads the same back from its code)."""
    kernel = ATTENTION[c.form]
    resolved = resolved_attention(kernel)
    return {"attention": kernel,
            "attention_heads_over_tensor": resolved["heads_over_tensor"],
            "cross_attention": ("through the kernel, text K/V over context"
                                if resolved["cross_kv_over_context"] else "local text K/V"),
            "text_encoder": "host CPU (torch, float32)",
            "vae_decode": "vae_spatial: width over every device",
            **({"ring_kernel_stand_in": RING_STAND_IN[c.form]}
               if c.form in RING_STAND_IN else {})}


def _not_planned(plan) -> str:
    """What the plan leaves to the user's config: the stages around the loop run as their
    config has them (the plan priced its own shardings of them: plan.json's video)."""
    if plan.video.get("steps") is None:
        return ("num_inference_steps and everything outside the transformer forward: your "
                "config's values stand")
    if plan.video.get("runtime") == "maxdiffusion":
        return ("nothing: the text encoder on the host and the VAE on MaxDiffusion's own mesh "
                "are priced as it runs them (plan.json's video)")
    return ("priced for AoiZora's JAX runtime: the step is the program MaxDiffusion runs, but "
            "its text encoder (on the host) and VAE (its own mesh) are not what the plan's "
            "seconds per video priced; re-plan with --emit maxdiffusion for them")


def libtpu_init_args(plan) -> str:
    """The LIBTPU_INIT_ARGS the plan's programs were compiled under (the plan records them;
    a plan from before that record was compiled under jaxenv's scoped VMEM flag alone)."""
    from aoizora.planning import kernels

    target = plan.topology.get("compile_target", {})
    if target.get("platform") != "tpu":
        return ""
    if "libtpu_init_args" in target:
        return target["libtpu_init_args"]
    return f"--{kernels.SCOPED_VMEM_FLAG}={kernels.SCOPED_VMEM_KIB}"


def jax_device_ids(plan, devices=None) -> list[int]:
    """JAX ids of the plan's devices in mesh order, looked up by position among `devices`
    (default: the compile-only devices of the plan's compile target; ids are numbered the
    same way on the real slice)."""
    from aoizora.planning.placement import devices_by_coords

    if devices is None:
        devices = _target_devices(plan)
    by_key = devices_by_coords(devices)
    try:
        return [int(by_key[tuple(k)].id) for k in plan.choice.device_coords]
    except KeyError as e:
        raise UserError(f"no device at {e.args[0]}: the plan is for another slice") from None


def maxdiffusion_order(plan, devices=None) -> list[int] | str:
    """The JAX ids in the order MaxDiffusion's create_device_mesh lays this mesh out on a
    single slice (jax's mesh_utils.create_device_mesh, allow_split_physical_axes=False, as
    its Wan configs set), or why it cannot."""
    from jax.experimental import mesh_utils

    c = Candidate.from_dict(plan.choice.strategy)
    devices = _target_devices(plan) if devices is None else devices
    try:
        grid = mesh_utils.create_device_mesh([c.data, c.fsdp, c.context, c.tensor],
                                             list(devices), allow_split_physical_axes=False)
    except (ValueError, NotImplementedError, AssertionError) as e:
        return str(e).splitlines()[0]
    return [int(d.id) for d in grid.flat]


def _target_devices(plan):
    from aoizora.compile import tpu

    target = plan.topology.get("compile_target", {})
    if target.get("platform") != "tpu":
        raise UserError("the plan was compiled for CPU devices: no TPU device ids to emit")
    return tpu.compile_only_devices(target["name"])


def document(plan, devices=None, path: str = "FILE.yaml") -> dict[str, Any]:
    """The emitted document, device ids looked up among `devices` (default: the compile-only
    devices of the plan's slice), to be written to `path`."""
    config_of(plan.model.get("name"))  # refuse an unknown model before any device work
    return to_maxdiffusion(plan, jax_device_ids(plan, devices),
                           maxdiffusion_order(plan, devices), path)


def yaml_text(plan, devices=None, doc: dict[str, Any] | None = None,
              path: str = "FILE.yaml") -> str:
    """The YAML text of the emitted document (the caller writes it to `path`, atomically)."""
    import yaml

    doc = document(plan, devices, path) if doc is None else doc
    head = ("# AoiZora plan for MaxDiffusion. Run `maxdiffusion.command` in a MaxDiffusion\n"
            "# checkout, or, where `maxdiffusion.device_order` says it differs, the launcher\n"
            "# (docs/maxdiffusion.md). Figures are simulated, not measured.\n")
    return head + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None,
                                 width=float("inf"))


def maxdiffusion_mesh(doc: dict[str, Any], devices):
    """The jax.sharding.Mesh the plan asks for: `devices` (jax.devices()) placed in the
    emitted order on the (data, fsdp, context, tensor) axes."""
    from jax.sharding import Mesh

    from aoizora.launch.maxdiffusion import LaunchError, planned_devices

    try:
        return Mesh(planned_devices(doc, devices), tuple(doc["device_order"]["mesh_axes"]))
    except LaunchError as e:
        raise UserError(str(e)) from None
