"""A plan as MaxDiffusion runs it: the config overrides a MaxDiffusion user passes, and the
device order its mesh must take (`aoizora plan --emit maxdiffusion FILE`).

    doc = to_maxdiffusion(plan)           # {"overrides": {...}, "device_order": {...}, ...}
    yaml_text(plan)                       # the same, as YAML
    candidate_of(doc["overrides"])        # back to the Candidate (the round-trip test)
    mesh = maxdiffusion_mesh(doc, jax.devices())   # the Mesh MaxDiffusion must use

How a candidate maps (MaxDiffusion's base_wan_*.yml; mesh axes data, fsdp, context, tensor):
    data, fsdp, tensor          ici_data/fsdp/tensor_parallelism
    context                     ici_context_parallelism (ring x ulysses for ulysses_ring)
    allgather_kv / ring / ulysses / ulysses_ring
                                attention: flash / ring / ulysses / ulysses_ring
                                (+ ulysses_shards: the Ulysses degree, innermost)
    weights over context        MaxDiffusion's own rule `embed -> [context, fsdp]`; a candidate
                                that keeps weights off the context axis gets the rule
                                `embed -> fsdp` instead (logical_axis_rules, in full)
MaxDiffusion builds its mesh with mesh_utils.create_device_mesh and never reorders it, so
the placement cannot travel as a config key: `device_order` lists the JAX device ids (and
each device's (x, y, z[, core])) in the flat order of the (data, fsdp, context, tensor)
mesh, and maxdiffusion_mesh() builds that Mesh (docs/maxdiffusion.md shows where it goes).
A candidate planned with the splash kernel (TPU targets, kernels.py) carries its block sizes
as `flash_block_sizes` (block_q, block_kv, block_kv_compute: the forward kernel's; inference
runs no backward); a blockwise (CPU-compiled) plan leaves them to the user's config.
"""

from __future__ import annotations

import math
from typing import Any

from aoizora.errors import UserError
from aoizora.strategies import Candidate, candidate_name

MESH_AXES = ("data", "fsdp", "context", "tensor")
ATTENTION = {"none": "flash", "allgather_kv": "flash", "ring": "ring", "ulysses": "ulysses",
             "ulysses_ring": "ulysses_ring"}
FORM_OF = {"ring": "ring", "ulysses": "ulysses", "ulysses_ring": "ulysses_ring"}
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


def overrides(c: Candidate) -> dict[str, Any]:
    """The MaxDiffusion config keys that give candidate `c`."""
    out: dict[str, Any] = {
        "ici_data_parallelism": c.data, "ici_fsdp_parallelism": c.fsdp,
        "ici_context_parallelism": c.context, "ici_tensor_parallelism": c.tensor,
        "attention": ATTENTION[c.form]}
    if c.form == "ulysses_ring":
        out["ulysses_shards"] = c.ulysses
    if c.context > 1 and not c.weights_over_context:
        out["logical_axis_rules"] = [["embed", "fsdp"] if r[0] == "embed" else r
                                     for r in BASE_RULES]
    if c.kernel == "splash":
        out["flash_block_sizes"] = {"block_q": c.block_q, "block_kv": c.block_kv,
                                    "block_kv_compute": c.block_kv_compute}
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
    kernel = {"kernel": "splash", "block_q": int(blocks["block_q"]),
              "block_kv": int(blocks["block_kv"]),
              "block_kv_compute": int(blocks.get("block_kv_compute", blocks["block_kv"]))} \
        if blocks else {}
    return Candidate(candidate_name(data, fsdp, context, form, ulysses, tensor, wc),
                     data, fsdp, context, form, ulysses, tensor, wc, **kernel)


def to_maxdiffusion(plan, device_ids: list[int]) -> dict[str, Any]:
    """The emitted document of a plan. `device_ids[i]` is the JAX id of the device at
    plan.choice.device_coords[i] (jax_device_ids() finds them)."""
    c = Candidate.from_dict(plan.choice.strategy)
    if candidate_of(overrides(c)).key() != c.key():  # a form MaxDiffusion cannot express
        raise UserError(f"MaxDiffusion cannot express {c.name}: its config has no key for it")
    return {
        "aoizora": {"model": plan.model.get("name"), "topology": plan.topology.get("name"),
                    "candidate": c.name, "placement": plan.choice.placement,
                    "simulated_s": plan.choice.simulated_s,
                    "attention_kernel": c.kernel, **_libtpu_args(c)},
        "overrides": overrides(c),
        "device_order": {"mesh_axes": list(MESH_AXES),
                         "mesh_shape": [c.data, c.fsdp, c.context, c.tensor],
                         "device_ids": list(device_ids),
                         "device_coords": [list(x) for x in plan.choice.device_coords]},
    }


def _libtpu_args(c) -> dict[str, str]:
    """The libtpu flag the plan's splash blocks were chosen and compiled under (the scoped
    VMEM limit, MaxDiffusion's own run flag): a deployment must run with it too."""
    from aoizora import kernels

    if c.kernel != "splash":
        return {}
    return {"libtpu_init_args": f"--{kernels.SCOPED_VMEM_FLAG}="
                                f"{kernels.scoped_vmem_bytes() >> 10}"}


def jax_device_ids(plan, devices=None) -> list[int]:
    """JAX ids of the plan's devices in mesh order, looked up by position among `devices`
    (default: the compile-only devices of the plan's compile target; ids are numbered the
    same way on the real slice)."""
    from aoizora.placement import devices_by_coords

    if devices is None:
        from aoizora import tpu

        target = plan.topology.get("compile_target", {})
        if target.get("platform") != "tpu":
            raise UserError("the plan was compiled for CPU devices: no TPU device ids to emit")
        devices = tpu.compile_only_devices(target["name"])
    by_key = devices_by_coords(devices)
    try:
        return [int(by_key[tuple(k)].id) for k in plan.choice.device_coords]
    except KeyError as e:
        raise UserError(f"no device at {e.args[0]}: the plan is for another slice") from None


def yaml_text(plan, devices=None) -> str:
    """The YAML text of the emitted document (the caller writes it, atomically)."""
    import yaml

    doc = to_maxdiffusion(plan, jax_device_ids(plan, devices))
    head = ("# AoiZora plan for MaxDiffusion. Pass `overrides` as config keys; build the mesh\n"
            "# from `device_order` with aoizora.maxdiffusion.maxdiffusion_mesh (see\n"
            "# docs/maxdiffusion.md); run with aoizora.libtpu_init_args in LIBTPU_INIT_ARGS.\n"
            "# Figures are simulated, not measured.\n")
    return head + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None)


def maxdiffusion_mesh(doc: dict[str, Any], devices):
    """The jax.sharding.Mesh MaxDiffusion must use: `devices` (jax.devices()) placed in the
    emitted order on the (data, fsdp, context, tensor) axes."""
    import numpy as np
    from jax.sharding import Mesh

    order = doc["device_order"]
    by_id = {int(d.id): d for d in devices}
    missing = [i for i in order["device_ids"] if i not in by_id]
    if missing or len(order["device_ids"]) != math.prod(order["mesh_shape"]):
        raise UserError(f"the emitted device order does not fit these {len(by_id)} devices "
                        f"(missing ids {missing[:4]})")
    grid = np.array([by_id[i] for i in order["device_ids"]], dtype=object)
    return Mesh(grid.reshape(order["mesh_shape"]), tuple(order["mesh_axes"]))
