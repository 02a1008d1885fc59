"""The attention kernels' VMEM as libtpu reports it, beside kernels.vmem_bytes (the model the
block search uses). Compiles one kernel call per block triple for a TPU generation (two
blocks of q and of k/v, so that the pipeline double-buffers as it does on real lengths),
first under a scoped VMEM limit of 1 MiB, where libtpu reports the first allocation it
refuses ("Scoped allocation with size X": the splash kernel's own scratch on whole blocks),
then, each in a process of its own, under limits raised past each report until the compile
fits: the last report is the whole kernel. The figures in tests/python/test_kernels.py
come from here. Deviceless: no TPU needed. Kernels (--kernel):

    splash         jax's splash kernel on lengths of whole blocks (no segment ids)
    splash-padded  the same with the last key block padded, masked by segment ids (what a
                   candidate whose length is no multiple of its blocks runs)
    tokamax_ring   tokamax's ring kernel over 2 devices, keys padded likewise (the ring form)
    splash_ring    jax's splash kernel returning its residuals, in models/splash.py's ring
                   over 2 devices, keys padded likewise (the ring steps of Ulysses x ring)

SPLASH_VMEM_HEADS sets the heads of a call (default 1), SPLASH_VMEM_BATCH the batch the
kernel is vmapped over (default 1). bench/residual_vmem.py builds its table from here.

    python bench/splash_vmem.py v6e:2x2 512,512,512 9472,1024,512
    python bench/splash_vmem.py --kernel tokamax_ring v5e:2x2 4736,2432,2432
"""

import os
import re
import sys

import math  # noqa: E402
import subprocess  # noqa: E402

# libtpu reads its flags once per process: each limit is probed in a process of its own.
LIMIT_KIB = int(os.environ.get("SPLASH_VMEM_LIMIT_KIB", "1024"))
os.environ["LIBTPU_INIT_ARGS"] = f"--xla_tpu_scoped_vmem_limit_kib={LIMIT_KIB}"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

from aoizora.compile import tpu
from aoizora.planning import kernels  # noqa: E402
from aoizora.models import splash  # noqa: E402

HEAD_DIM = 128
HEADS = int(os.environ.get("SPLASH_VMEM_HEADS", "1"))   # heads per call (Wan 14B: 40)
BATCH = int(os.environ.get("SPLASH_VMEM_BATCH", "1"))   # samples per device (the CFG pair: 2)


def _spec(mesh, n):
    return jax.ShapeDtypeStruct((BATCH, HEADS, n, HEAD_DIM), jnp.bfloat16,
                                sharding=NamedSharding(mesh, P()))


def _ring_step(mesh, bq: int, bkv: int, bkc: int, kernel: str = "tokamax_ring"):
    """tokamax's ring (or, for "splash_ring", models/splash.py's ring of jax's kernel with
    residuals) over the mesh's 2 devices: each holds 2 query blocks and 2 key blocks, the
    last key block padded by one lane tile (segment ids, as a candidate's)."""
    from aoizora.models import tokamax_ring

    ring = splash.ring if kernel == "splash_ring" else tokamax_ring.ring

    def f(q, k, v):  # [B, S, H, D] shards, as the model calls it
        return ring(q, k, v, axes=("x",), kv_valid=2 * (2 * bkv - 128),
                    blocks=splash.Blocks(bq, bkv, bkc))

    spec = P(None, "x")
    g = jax.shard_map(f, mesh=mesh, in_specs=(spec, spec, spec), out_specs=spec,
                      check_vma=False)

    def arg(n):
        return jax.ShapeDtypeStruct((BATCH, 2 * n, HEADS, HEAD_DIM), jnp.bfloat16,
                                    sharding=NamedSharding(mesh, spec))
    return jax.jit(g), (arg(2 * bq), arg(2 * bkv - 128), arg(2 * bkv - 128))


def _program(kernel: str, topology: str, bq: int, bkv: int, bkc: int):
    """(a jitted kernel call, its arguments) for `kernel` at the blocks."""
    devices = tpu.compile_only_devices(topology)
    if kernel in ("tokamax_ring", "splash_ring"):
        return _ring_step(Mesh(devices[:2], ("x",)), bq, bkv, bkc, kernel)
    mesh = Mesh([devices[0]], ("x",))
    pad = 128 if kernel == "splash-padded" else 0   # keys: one lane tile short of 2 blocks
    f = jax.jit(lambda q, k, v: splash.call(q, k, v, blocks=splash.Blocks(bq, bkv, bkc)))
    return f, (_spec(mesh, 2 * bq), _spec(mesh, 2 * bkv - pad), _spec(mesh, 2 * bkv - pad))


def reported_mib(kernel: str, topology: str, bq: int, bkv: int, bkc: int) -> str:
    f, args = _program(kernel, topology, bq, bkv, bkc)
    try:
        f.lower(*args).compile()
    except jax.errors.JaxRuntimeError as e:
        m = (re.search(r"Scoped allocation with size ([0-9.]+)M", str(e))
             or re.search(r"Used ([0-9.]+)M of [0-9.]+M vmem", str(e)))
        op = re.search(r"allocating on stack for %([\w.-]+)", str(e))
        # Over the whole program's VMEM, libtpu lists its largest allocations: the kernel's
        # register spill slots among them
        spill = re.search(r"Size: ([0-9.]+)([MK])\s+XLA label: register allocator spill", str(e))
        # libtpu names the op whose allocation failed: the kernel's custom call, or (with
        # padding) a fusion around it, whose size is not the kernel's
        return ((m.group(1) if m else "?")
                + (f" spill={float(spill.group(1)) / (1024 if spill.group(2) == 'K' else 1):.2f}"
                   if spill else "")
                + ("" if not op or "splash" in op.group(1) else f" ({op.group(1)})"))
    return "fits"


def probe(kernel: str, topology: str, triple: tuple[int, int, int], limit_mib: int) -> str:
    """reported_mib under a scoped limit of `limit_mib`, in a process of its own."""
    env = {**os.environ, "SPLASH_VMEM_LIMIT_KIB": str(limit_mib * 1024)}
    out = subprocess.run([sys.executable, __file__, "--probe", kernel, topology,
                          ",".join(map(str, triple))], env=env, capture_output=True,
                         text=True, check=True)
    return out.stdout.strip().splitlines()[-1]


def total_mib(kernel: str, topology: str, triple, first: str) -> str:
    """The whole kernel: libtpu reports the allocation that the limit refuses, which grows
    as the limit is raised past each one; the limit is raised to just above each report
    until the compile fits, and the last report is the whole."""
    try:
        last = float(first.split()[0])
    except ValueError:
        return "?"
    limit = math.ceil(last) + 1
    while limit <= 1024:
        got = probe(kernel, topology, triple, limit)
        if got == "fits":
            return f"{last:.2f}"
        last = float(got.split()[0])
        limit = max(math.ceil(last) + 1, limit + 1)
    return "?"


def main(argv):
    if argv[:1] == ["--probe"]:   # one compile under this process's limit
        got = reported_mib(argv[1], argv[2], *map(int, argv[3].split(",")))
        print(got)
        return
    kernel = "splash"
    if argv[:1] == ["--kernel"]:
        kernel, argv = argv[1], argv[2:]
    topology, triples = argv[0], [tuple(map(int, a.split(","))) for a in argv[1:]]
    print(f"kernel {kernel} on {topology}, head dim {HEAD_DIM}: libtpu's first refused "
          "allocation under 1 MiB, and the whole kernel under a limit above that")
    print(f"{'block_q':>8} {'block_kv':>8} {'kv_comp':>8} {'first MiB':>10} {'whole MiB':>10} "
          f"{'model scratch':>13} {'model bound':>11}")
    model_kernel = "tokamax_ring" if kernel == "tokamax_ring" else "splash"
    for t in triples:
        bound = kernels.vmem_bytes(*t, HEAD_DIM, kernel=model_kernel,
                                   residuals=kernel == "splash_ring")
        scratch = kernels.scratch_bytes(t[0], t[1], HEAD_DIM)
        first = probe(kernel, topology, t, 1)
        print(f"{t[0]:>8} {t[1]:>8} {t[2]:>8} {first:>10} "
              f"{total_mib(kernel, topology, t, first):>10} "
              f"{scratch / 2**20:>13.2f} {bound / 2**20:>11.2f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["v6e:2x2", "512,512,512", "2048,512,512", "4096,2048,512"])
