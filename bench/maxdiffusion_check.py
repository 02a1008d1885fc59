"""Check emitted MaxDiffusion plans against MaxDiffusion's own code (a checkout of it).

    python bench/maxdiffusion_check.py --maxdiffusion DIR PLAN.json [PLAN.json ...]
    python bench/maxdiffusion_check.py --maxdiffusion DIR --record python/aoizora/maxdiffusion_contract.json

Run it with a Python where MaxDiffusion's own imports resolve (jax 0.10.2 with libtpu, flax,
optax, orbax, ...; see docs/maxdiffusion.md); torch, which its Wan weight loader imports, is
stubbed when absent (nothing here calls it) and the table says so. For each plan.json it:
  1. emits the plan with this tree's `aoizora emit maxdiffusion` (--aoizora, default
     .venv/bin/aoizora), as a user would;
  2. in a child process with as many (CPU) jax devices as the plan has, feeds the emitted
     command line (config file + `key=value` arguments) to MaxDiffusion's pyconfig (its
     `initialize`, with unittest=True: no distributed start-up), and reads back what MaxDiffusion
     will run: the attention kernel (looked up in its kernel registry), the prompts per
     generation, the video size and frames, ulysses_shards, and the block sizes its
     get_flash_block_sizes builds;
  3. installs the launcher (aoizora.launch.maxdiffusion) and calls MaxDiffusion's
     max_utils.create_device_mesh(config, devices) on the compile-only TPU devices of the
     plan's slice, and also MaxDiffusion's own mesh builder, unpatched;
  4. compares each with the plan.json itself (not with the emitted file): its strategy,
     workload, and device coordinates.
Nothing runs on a TPU: the compile-only devices are numbered as the real slice's are assumed
to be. --record writes the facts the CI contract test checks emitted files against (config
keys with their YAML types, registered kernels, block-size keys), read from the checkout.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WAN_CONFIGS = ("base_wan_1_3b.yml", "base_wan_14b.yml", "base_wan_i2v_14b.yml",
               "base_wan_27b.yml", "base_wan_i2v_27b.yml")


# ---- facts read from the checkout ------------------------------------------------------
def git_commit(md_dir: str) -> tuple[str, str]:
    out = subprocess.run(["git", "-C", md_dir, "log", "-1", "--format=%H %cs"],
                         capture_output=True, text=True, check=True).stdout.split()
    return out[0], out[1]


def registered_kernels(md_dir: str) -> list[str]:
    """Names given to @register_kernel("...") in attention_flax.py (its KERNEL_REGISTRY)."""
    path = os.path.join(md_dir, "src/maxdiffusion/models/attention_flax.py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    names = []
    for node in ast.walk(tree):
        for d in getattr(node, "decorator_list", []):
            if (isinstance(d, ast.Call) and getattr(d.func, "id", "") == "register_kernel"
                    and d.args and isinstance(d.args[0], ast.Constant)):
                names.append(d.args[0].value)
    return sorted(set(names))


def block_size_keys(md_dir: str) -> list[str]:
    """The flash_block_sizes keys max_utils.get_flash_block_sizes reads."""
    path = os.path.join(md_dir, "src/maxdiffusion/max_utils.py")
    tree = ast.parse(open(path, encoding="utf-8").read())
    fn = next(n for n in ast.walk(tree)
              if isinstance(n, ast.FunctionDef) and n.name == "get_flash_block_sizes")
    keys = set()
    for n in ast.walk(fn):
        if (isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "get"
                and getattr(n.func.value, "id", "") == "user_block_sizes"):
            keys.add(n.args[0].value)
        if isinstance(n, ast.Subscript) and getattr(n.value, "id", "") == "user_block_sizes":
            keys.add(n.slice.value)
    return sorted(keys)


def config_types(md_dir: str) -> dict[str, dict[str, str]]:
    import yaml

    out = {}
    for name in WAN_CONFIGS:
        with open(os.path.join(md_dir, "src/maxdiffusion/configs", name), encoding="utf-8") as f:
            raw = yaml.safe_load(f)
        out[name] = {k: type(v).__name__ for k, v in raw.items()}
    return out


def _constants(tree) -> dict[str, str]:
    """Module-level NAME = "string" assignments."""
    return {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
            and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
            for t in n.targets if isinstance(t, ast.Name)}


def attention_rules(md_dir: str) -> dict[str, list]:
    """The rule tables pyconfig prepends for each attention family (common_types.py:
    *_ATTENTION_AXIS_RULES, SEQUENCE_PARALLEL_AXIS_RULES), names resolved to strings."""
    tree = ast.parse(open(os.path.join(md_dir, "src/maxdiffusion/common_types.py"),
                          encoding="utf-8").read())
    names = _constants(tree)
    value = lambda n: (names[n.id] if isinstance(n, ast.Name)  # noqa: E731
                       else n.value if isinstance(n, ast.Constant) else None)
    out = {}
    for n in tree.body:
        if (isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
                and n.targets[0].id.endswith("_AXIS_RULES") and isinstance(n.value, ast.List)):
            out[n.targets[0].id] = [[value(e) for e in r.elts] for r in n.value.elts]
    return out


def cross_local_kv_kernels(md_dir: str) -> list[str]:
    """The kernels whose cross-attention keeps the text K/V local (FlaxWanAttention:
    cross_attention_remapped_to_flash, or a flash kernel): the strings its two
    `attention_kernel in (...)` tests name."""
    tree = ast.parse(open(os.path.join(md_dir, "src/maxdiffusion/models/attention_flax.py"),
                          encoding="utf-8").read())
    out = set()
    for n in ast.walk(tree):
        if (isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)
                and n.targets[0].id in ("cross_attention_remapped_to_flash",
                                        "cross_attention_uses_local_kv")):
            for c in ast.walk(n.value):
                if isinstance(c, ast.Compare) and isinstance(c.ops[0], ast.In):
                    out |= {e.value for e in ast.walk(c.comparators[0])
                            if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return sorted(out)


def record(md_dir: str, path: str) -> None:
    commit, date = git_commit(md_dir)
    facts = {"what": "MaxDiffusion's config keys (YAML type of each default), registered "
                     "attention kernels and flash_block_sizes keys, the attention rule tables "
                     "pyconfig prepends and the kernels whose cross-attention keeps its K/V "
                     "local, read from its checkout by bench/maxdiffusion_check.py --record",
             "commit": commit, "date": date, "kernels": registered_kernels(md_dir),
             "block_size_keys": block_size_keys(md_dir), "configs": config_types(md_dir),
             "attention_rules": attention_rules(md_dir),
             "cross_local_kv_kernels": cross_local_kv_kernels(md_dir)}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(facts, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"recorded MaxDiffusion {commit[:7]} ({date}): {len(facts['kernels'])} kernels, "
          f"{len(facts['block_size_keys'])} block keys, {len(WAN_CONFIGS)} configs -> {path}")


# ---- one plan, in a child process --------------------------------------------------------
def _stub_torch() -> list[str]:
    """Make `import torch` succeed with an empty module when torch is not installed: the
    Wan weight loader imports it at module level and nothing checked here calls it."""
    import importlib.machinery
    import importlib.util
    import types

    if importlib.util.find_spec("torch") is not None:
        return []

    class Anything(types.ModuleType):
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return type(name, (), {})

    mod = Anything("torch")
    mod.__path__ = []
    mod.__spec__ = importlib.machinery.ModuleSpec("torch", None, is_package=True)
    sys.modules["torch"] = mod
    return ["torch"]


def check_one(md_dir: str, plan_path: str, emitted_path: str) -> dict:
    """What MaxDiffusion makes of the emitted file, beside what the plan priced."""
    import yaml

    sys.path[:0] = [os.path.join(md_dir, "src"), os.path.join(ROOT, "python")]
    stubbed = _stub_torch()
    plan = json.load(open(plan_path, encoding="utf-8"))
    doc = yaml.safe_load(open(emitted_path, encoding="utf-8"))
    from maxdiffusion import max_utils, pyconfig

    own_create = max_utils.create_device_mesh
    md = doc["maxdiffusion"]
    config_file = os.path.join(md_dir, md["config"])
    from aoizora.launch import maxdiffusion as launch

    launch.install(doc)  # as the launcher runs it: its device order, the keys it fills
    pyconfig.initialize(["generate_wan.py", config_file, *md["args"]], unittest=True)
    cfg = pyconfig.config
    stubbed += [m for m in ("tensorflow",) if _stub(m)]
    reading = config_reading(cfg)
    kernels = registered_kernels(md_dir)
    blocks = max_utils.get_flash_block_sizes(cfg)

    from aoizora.compile import tpu
    from aoizora.planning.placement import device_keys

    devices = tpu.compile_only_devices(plan["topology"]["compile_target"]["name"])
    planned = max_utils.create_device_mesh(cfg, devices=devices, logging=False)
    keys_of = {int(d.id): list(k) for d, k in zip(devices, device_keys(devices))}
    try:
        own = [int(d.id) for d in own_create(cfg, devices=list(devices), logging=False).flat]
    except (ValueError, NotImplementedError, AssertionError) as e:
        own = f"raises: {str(e).splitlines()[0]}"
    import jax
    import numpy as np

    # the child's CPU devices in the mesh's shape: the attention is built, not run, and
    # compile-only TPU devices hold no arrays
    executed = _executed(cfg, np.array(jax.devices()[:planned.size]).reshape(planned.shape))
    from aoizora.models import get_model

    s, w = plan["choice"]["strategy"], plan["workload"]
    height, width = dict(get_model(plan["model"]["name"]).sizes)[w["video"]]
    want_blocks = ([s["block_q"], s["block_kv"], s["block_kv_compute"]]
                   if s.get("block_q") else None)  # a Pallas kernel's blocks (splash, tokamax)
    got_blocks = [blocks.block_q, blocks.block_kv, blocks.block_kv_compute] if blocks else None
    return {
        "plan": os.path.relpath(plan_path, ROOT), "candidate": s["name"],
        "config": os.path.basename(md["config"]), "stubbed": stubbed,
        "keys_accepted": True,  # pyconfig.initialize raised on none of them
        "config_reading": reading or "ok",
        "kernel": cfg.attention, "kernel_registered": cfg.attention in kernels,
        "prompts": cfg.global_batch_size_to_train_on, "plan_videos": w.get("batch", 2) // 2,
        "video": [cfg.width, cfg.height, cfg.num_frames],
        "plan_video": [width, height, w["frames"]],
        "ulysses_shards": cfg.ulysses_shards,
        "plan_ulysses": s["ulysses"] if s["form"] == "ulysses_ring" else None,
        "uniform": cfg.attention_sharding_uniform,
        "blocks": got_blocks, "plan_blocks": want_blocks,
        "mesh_coords": [keys_of[int(d.id)] for d in planned.flat],
        "plan_coords": plan["choice"]["device_coords"],
        "mesh_shape": list(planned.shape),
        "order_same_as_maxdiffusion": own == [int(d.id) for d in planned.flat]
        if isinstance(own, list) else own,
        "executed": executed, "priced": _priced(plan, doc, len(devices)),
    }


def _stub(name: str) -> bool:
    """An empty module for `name` when it is not installed (MaxDiffusion's pipeline modules
    import torch and tensorflow at module level; nothing checked here calls them)."""
    import importlib.machinery
    import importlib.util
    import types

    if importlib.util.find_spec(name) is not None:
        return False

    class Anything(types.ModuleType):
        def __getattr__(self, attr):
            if attr.startswith("__"):
                raise AttributeError(attr)
            return type(attr, (), {})

    mod = Anything(name)
    mod.__path__ = []
    mod.__spec__ = importlib.machinery.ModuleSpec(name, None, is_package=True)
    sys.modules[name] = mod
    return True


def config_reading(cfg) -> str:
    """generate_wan's own call_pipeline run on the config with a pipeline that only records
    its arguments: "" when every key it reads is there, else MaxDiffusion's error (a missing
    key). The config reading a command must get past before anything needs a TPU."""
    from maxdiffusion import generate_wan

    generate_wan.load_image = lambda url: None  # I2V: the image is not the config
    try:
        generate_wan.call_pipeline(cfg, lambda **kw: kw, ["a prompt"], [""])
    except AttributeError as e:
        return str(e)
    return ""


def _executed(cfg, mesh_devices) -> dict:
    """What MaxDiffusion executes, read back through its own code: FlaxWanAttention built
    for self- and cross-attention under the config (its effective kernel and axis names),
    the names resolved by flax under pyconfig's final logical rules; the ring kernel's
    module; the text encoder's run (host torch: dtype, calls, tokens); the VAE mesh as
    _create_common_components builds it; the steps."""
    import flax.linen as nn
    from flax import nnx
    from jax.sharding import Mesh
    from maxdiffusion.models import attention_flax as af

    mesh = Mesh(mesh_devices, tuple(cfg.mesh_axes))
    out = {}
    for role, is_self in (("self", True), ("cross", False)):
        with mesh, nn.logical_axis_rules(cfg.logical_axis_rules):
            a = af.FlaxWanAttention(
                rngs=nnx.Rngs(0), query_dim=256, heads=2, dim_head=128,
                attention_kernel=cfg.attention, mesh=mesh, is_self_attention=is_self,
                attention_config={"ulysses_shards": cfg.ulysses_shards,
                                  "use_base2_exp": getattr(cfg, "use_base2_exp", False)})
        op = a.attention_op
        spec = lambda names: [None if x is None else (list(x) if isinstance(x, tuple) else x)
                              for x in nn.logical_to_mesh_axes(names, cfg.logical_axis_rules)]
        q, kv = spec(op.axis_names_q), spec(op.axis_names_kv)
        out[role] = {"kernel": op.attention_kernel, "q": q, "kv": kv,
                     "heads_over_tensor": "tensor" in str(q[1]),
                     "kv_length_over_context": "context" in str(kv[2])}
    ring = af.tokamax_ring_attention_kernel.__name__
    splash = af.splash_attention_kernel.__name__
    out["kernel_module"] = ring if ("ring" in cfg.attention) else splash
    out["use_base2_exp"] = bool(getattr(cfg, "use_base2_exp", False))
    calls = 1 if cfg.use_batched_text_encoder else 2
    out["text_encoder"] = {"device": "host CPU (torch)", "dtype": str(cfg.text_encoder_dtype),
                           "calls": calls, "tokens": int(cfg.max_sequence_length)}
    total = mesh_devices.size
    spatial = total if cfg.vae_spatial == -1 else int(cfg.vae_spatial)
    out["vae_mesh"] = [total // spatial, spatial]
    out["steps"] = int(cfg.num_inference_steps)
    return out


def _priced(plan: dict, doc: dict, devices: int) -> dict:
    """The same facts as the plan priced them (plan.json and the emitted file's aoizora)."""
    from aoizora.planning.strategies import Candidate

    c = Candidate.from_dict(plan["choice"]["strategy"])
    video = plan.get("video", {})
    te = ((video.get("stages") or {}).get("text_encoder") or {}).get("sharding")
    vae = ((video.get("stages") or {}).get("vae_decode") or {}).get("sharding")
    kernel = {"tokamax_ring": "tokamax (PyPI)", "splash":
              "jax.experimental.pallas.ops.tpu.splash_attention.splash_attention_kernel"}
    return {"heads_over_tensor": c.attention_tensor > 1,
            "text_kv_over_context": bool(c.rules.get("text_length")),
            "kernel_module": kernel.get(c.kernel, c.kernel),
            "stand_in": doc["aoizora"].get("executes", {}).get("ring_kernel_stand_in"),
            "text_encoder": te, "vae_decode": vae, "devices": devices,
            "steps": video.get("steps")}


def _row_ok(r: dict) -> dict[str, bool]:
    e, p = r["executed"], r["priced"]
    same_kernel = e["kernel_module"] == p["kernel_module"]
    return {"keys": r["keys_accepted"] and r["config_reading"] == "ok",
            "kernel": r["kernel_registered"],
            "batch": r["prompts"] == r["plan_videos"],
            "video": r["video"] == r["plan_video"],
            "blocks": r["blocks"] == r["plan_blocks"] or r["plan_blocks"] is None,
            "mesh": r["mesh_coords"] == r["plan_coords"],
            "specs": (e["self"]["heads_over_tensor"] == p["heads_over_tensor"]
                      and e["cross"]["heads_over_tensor"] == p["heads_over_tensor"]
                      and e["cross"]["kv_length_over_context"] == p["text_kv_over_context"]),
            # the same module, or the plan names the stand-in it priced in its place
            "kernel source": same_kernel or bool(p["stand_in"]),
            "text encoder": (p["text_encoder"] == "host-cpu"
                             and e["text_encoder"]["calls"] == 2
                             and e["text_encoder"]["tokens"] == 512),
            "VAE mesh": p["vae_decode"] == f"vae-width{p['devices']}"
            and e["vae_mesh"] == [1, p["devices"]],
            "steps": e["steps"] == p["steps"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--maxdiffusion", required=True, help="a MaxDiffusion checkout")
    ap.add_argument("--record", help="write the contract facts to this file and stop")
    ap.add_argument("--aoizora", default=os.path.join(ROOT, ".venv/bin/aoizora"))
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--json", help="also write the rows to this file")
    ap.add_argument("plans", nargs="*")
    args = ap.parse_args()
    md_dir = os.path.abspath(args.maxdiffusion)
    if args.record:
        record(md_dir, args.record)
        return 0
    if args.child:
        print(json.dumps(check_one(md_dir, *args.child)))
        return 0
    commit, date = git_commit(md_dir)
    print(f"MaxDiffusion {commit[:7]} ({date}) at {md_dir}")
    rows, failed = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for plan_path in args.plans:
            emitted = os.path.join(tmp, os.path.basename(plan_path) + ".yaml")
            run = subprocess.run([args.aoizora, "emit", "maxdiffusion", emitted,
                                  "--plan", plan_path], capture_output=True, text=True)
            if run.returncode:
                print(f"{plan_path}: emit failed: {run.stderr.strip()}")
                failed += 1
                continue
            devices = json.load(open(plan_path))["topology"]["compile_target"]["devices"]
            env = {**os.environ, "JAX_PLATFORMS": "cpu",
                   "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
            child = subprocess.run([sys.executable, __file__, "--maxdiffusion", md_dir,
                                    "--child", plan_path, emitted],
                                   capture_output=True, text=True, env=env)
            if child.returncode:
                print(f"{plan_path}: MaxDiffusion refused it:\n{child.stderr[-2000:]}")
                failed += 1
                continue
            rows.append(json.loads(child.stdout.strip().splitlines()[-1]))
    print(table(rows))
    print()
    print(executed_table(rows))
    failed += sum(not all(_row_ok(r).values()) for r in rows)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"commit": commit, "rows": rows}, f, indent=1)
    print(f"{len(rows) - (failed - (len(args.plans) - len(rows)))} of {len(args.plans)} plans "
          "pass every check")
    return 1 if failed else 0


def executed_table(rows: list[dict]) -> str:
    """What MaxDiffusion executes against what each plan priced."""
    head = ("| plan | self / cross kernel | heads over tensor | text K/V over context | "
            "kernel source | text encoder | VAE mesh | steps |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        ok, e, p = _row_ok(r), r["executed"], r["priced"]
        mark = lambda k: "ok" if ok[k] else "MISMATCH"  # noqa: E731
        src = e["kernel_module"].rsplit(".", 1)[-1]
        te = e["text_encoder"]
        lines.append(
            f"| {os.path.basename(r['plan'])} | {e['self']['kernel']} / {e['cross']['kernel']} "
            f"| {e['self']['heads_over_tensor']} ({mark('specs')}) | "
            f"{e['cross']['kv_length_over_context']} | {src}"
            f"{' (stand-in named)' if p['stand_in'] else ''} ({mark('kernel source')}) | "
            f"{te['device']}, {te['dtype']}, {te['calls']} x {te['tokens']} "
            f"({mark('text encoder')}) | {e['vae_mesh']} ({mark('VAE mesh')}) | "
            f"{e['steps']} ({mark('steps')}) |")
    return "\n".join(lines)


def table(rows: list[dict]) -> str:
    head = ("| plan | candidate | config | keys | kernel | prompts | W x H x F | ulysses | "
            "blocks q/kv/kv_c | launcher mesh = plan | MaxDiffusion's own order |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        ok = _row_ok(r)
        mark = lambda k: "ok" if ok[k] else "MISMATCH"  # noqa: E731
        own = r["order_same_as_maxdiffusion"]
        own = "same" if own is True else "differs" if own is False else own
        blocks = "/".join(map(str, r["blocks"])) if r["blocks"] else "config's"
        lines.append(
            f"| {os.path.basename(r['plan'])} | {r['candidate']} | {r['config']} | "
            f"{mark('keys')} | {r['kernel']} ({'registered' if ok['kernel'] else 'UNKNOWN'}) | "
            f"{r['prompts']} ({mark('batch')}) | {'x'.join(map(str, r['video']))} "
            f"({mark('video')}) | {r['ulysses_shards']} | {blocks} ({mark('blocks')}) | "
            f"{mark('mesh')} | {own} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
