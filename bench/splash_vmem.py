"""The splash kernel's VMEM as libtpu reports it, beside kernels.vmem_bytes (the model the
block search uses). Compiles one kernel call per block triple for a TPU generation under a
scoped VMEM limit of 1 MiB, so that every compile fails and libtpu prints the kernel's own
scratch ("Scoped allocation with size X"; two blocks of q and of k/v, so that
the pipeline double-buffers as it does on real lengths); the figures in tests/python/test_kernels.py
come from here. Deviceless: no TPU needed.

    python bench/splash_vmem.py v6e:2x2 512,512,512 9472,1024,512
"""

import os
import re
import sys

os.environ["LIBTPU_INIT_ARGS"] = "--xla_tpu_scoped_vmem_limit_kib=1024"

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

from aoizora.compile import tpu
from aoizora.planning import kernels  # noqa: E402
from aoizora.models import splash  # noqa: E402

HEAD_DIM = 128


def reported_mib(topology: str, bq: int, bkv: int, bkc: int) -> str:
    mesh = Mesh([tpu.compile_only_devices(topology)[0]], ("x",))

    def arg(n):
        return jax.ShapeDtypeStruct((1, 1, n, HEAD_DIM), jnp.bfloat16,
                                    sharding=NamedSharding(mesh, P()))

    f = jax.jit(lambda q, k, v: splash.call(q, k, v, blocks=splash.Blocks(bq, bkv, bkc)))
    try:
        f.lower(arg(2 * bq), arg(2 * bkv), arg(2 * bkv)).compile()  # two blocks each
    except jax.errors.JaxRuntimeError as e:
        m = re.search(r"Scoped allocation with size ([0-9.]+)M", str(e))
        return m.group(1) if m else "?"
    return "fits 1 MiB"


def main(argv):
    topology, triples = argv[0], [tuple(map(int, a.split(","))) for a in argv[1:]]
    print(f"{'block_q':>8} {'block_kv':>8} {'kv_comp':>8} {'libtpu MiB':>11} "
          f"{'model scratch':>13} {'model bound':>11}")
    for bq, bkv, bkc in triples:
        bound = kernels.vmem_bytes(bq, bkv, bkc, HEAD_DIM)
        scratch = bound - 4 * bq * bkv
        print(f"{bq:>8} {bkv:>8} {bkc:>8} {reported_mib(topology, bq, bkv, bkc):>11} "
              f"{scratch / 2**20:>13.2f} {bound / 2**20:>11.2f}")


if __name__ == "__main__":
    main(sys.argv[1:] or ["v6e:2x2", "512,512,512", "2048,512,512", "4096,2048,512"])
