"""Regenerates the Pallas-kernel fixture tests/data/hlo/splash_ring.v5e_2x4.hlo.

    .venv/bin/python tests/data/regen_kernels.py

A sharded splash multi-head attention as models/splash.py runs it: mesh data 4 x context 2
on v5e:2x4 (deviceless, libtpu), q, k, v bf16 [4, 2048, 8, 128] with the batch over data and
the sequence over context, ring attention over context (two kernel calls per device, each
with its logsumexp residuals and segment ids masking keys >= 2000), blocks q 256, kv 512,
kv_compute 256. Per device and call: B 1 x H 8, Sq = Skv = 1024, D = Dv = 128. Kernels do not
lower for CPU, so there is no CPU twin. tests/cpp/hlo_kernel_cost_test.cpp checks these
numbers against the C++ kernel model.
"""

from __future__ import annotations

import os
import sys
from functools import partial

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))

from aoizora.compile import jaxenv  # noqa: E402,F401
from aoizora.compile import tpu  # noqa: E402
from aoizora.models import splash  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hlo", "splash_ring.v5e_2x4.hlo")


def main() -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    mesh = Mesh(np.array(tpu.compile_only_devices("v5e:2x4")).reshape(4, 2), ("data", "context"))
    spec = P("data", "context", None, None)
    body = partial(splash.ring, axes=("context",), kv_valid=2000,
                   blocks=splash.Blocks(256, 512, 256))
    f = jax.shard_map(body, mesh=mesh, in_specs=(spec,) * 3, out_specs=spec, check_vma=False)
    arg = jax.ShapeDtypeStruct((4, 2048, 8, 128), jnp.bfloat16,
                               sharding=NamedSharding(mesh, spec))
    text = jax.jit(f).lower(arg, arg, arg).compile().as_text()
    with open(OUT + ".tmp", "w") as out:
        out.write(text)
    os.replace(OUT + ".tmp", OUT)
    print(f"{OUT}: {len(text)} chars, {text.count('tpu_custom_call')} tpu_custom_call")


if __name__ == "__main__":
    main()
