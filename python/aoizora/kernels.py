"""Which attention kernel a candidate compiles with, and its block sizes.

    kernel_for_platform("tpu") -> "splash"       ("cpu" -> "blockwise")
    attention_shapes(candidate, model, workload) -> KernelShape   (what one kernel call sees)
    legal_blocks(n) -> [128, 256, ...]            (multiples of 128 dividing n)
    with_kernel(candidate, model, workload, platform) -> Candidate  (kernel and blocks set)
        raises KernelUnsupported with a one-line reason when a shard cannot run the kernel

On TPU targets every candidate runs the Pallas splash-attention kernel
(jax.experimental.pallas.ops.tpu.splash_attention) inside its context-parallel form, as
MaxDiffusion does (models/splash.py); the plain-JAX blockwise core stays for CPU targets,
where Mosaic kernels do not lower. The choice is made here, from the compile target, and
recorded on the Candidate (kernel, block_q, block_kv, block_kv_compute), so a plan names the
kernel and block sizes it was compiled and priced with. Nothing falls back silently.

Block sizes: the kernel tiles its query and key sequences by block_q and block_kv, which must
be multiples of 128 dividing the (padded) lengths one call sees. The default is the largest
legal block not above MaxDiffusion's default of 512 (`flash_block_sizes` in base_wan_14b.yml).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

KERNELS = ("blockwise", "splash")
LANE = 128                 # the kernel's sequence tile (TPU lane width)
DEFAULT_BLOCK = 512        # MaxDiffusion's default block_q / block_kv / block_kv_compute


class KernelUnsupported(ValueError):
    """A candidate whose shards cannot run the kernel (the reason is the message)."""


def kernel_for_platform(platform: str) -> str:
    """The attention kernel for a compile platform: "splash" on "tpu", "blockwise" on "cpu"."""
    if platform == "tpu":
        return "splash"
    if platform == "cpu":
        return "blockwise"
    raise ValueError(f"no attention kernel for platform {platform!r}: use 'tpu' or 'cpu'")


@dataclass(frozen=True)
class KernelShape:
    """What one self-attention kernel call sees on one device: heads, query and key lengths
    (padded), head dim, and how many calls a step makes (ring steps)."""

    heads: int
    q_len: int
    kv_len: int
    head_dim: int
    calls: int = 1


def attention_shapes(candidate, model, workload, kernel: str = "splash") -> KernelShape:
    """The per-device shape of the self-attention kernel under `candidate` (sequence padded
    as the model pads it for `kernel`)."""
    c = candidate
    s = model.padded_len(workload, c.context, kernel=kernel)
    heads = model.heads // c.tensor
    d = model.dim // model.heads
    if c.form == "allgather_kv":
        return KernelShape(heads, s // c.context, s, d)
    if c.form == "ulysses":
        return KernelShape(heads // c.ulysses, s, s, d)
    if c.form == "ring":
        return KernelShape(heads, s // c.context, s // c.context, d, calls=c.context)
    if c.form == "ulysses_ring":
        r = s // c.ring
        return KernelShape(heads // c.ulysses, r, r, d, calls=c.ring)
    return KernelShape(heads, s, s, d)


def legal_blocks(n: int) -> list[int]:
    """Block sizes the kernel accepts for a length n: multiples of 128 that divide n."""
    return [b for b in range(LANE, n + 1, LANE) if n % b == 0]


def default_block(n: int, target: int = DEFAULT_BLOCK) -> int:
    """The largest legal block of n not above target (n itself must be a multiple of 128)."""
    fits = [b for b in legal_blocks(n) if b <= target]
    if not fits:
        raise KernelUnsupported(f"length {n} is not a multiple of {LANE}")
    return fits[-1]


def with_kernel(candidate, model, workload, platform: str, *, block: int = DEFAULT_BLOCK):
    """The candidate with the attention kernel of `platform` and its block sizes set. Raises
    KernelUnsupported (one line, naming the candidate) when its shards cannot run it."""
    kernel = kernel_for_platform(platform)
    if kernel == "blockwise" or not hasattr(model, "padded_len"):
        return dataclasses.replace(candidate, kernel="blockwise", block_q=0, block_kv=0,
                                   block_kv_compute=0)
    shape = attention_shapes(candidate, model, workload, kernel)
    if shape.q_len % LANE or shape.kv_len % LANE:
        raise KernelUnsupported(f"{candidate.name}: splash needs sequence lengths that are "
                                f"multiples of {LANE}, got q {shape.q_len}, kv {shape.kv_len}")
    bq, bkv = default_block(shape.q_len, block), default_block(shape.kv_len, block)
    return dataclasses.replace(candidate, kernel="splash", block_q=bq, block_kv=bkv,
                               block_kv_compute=bkv)


def describe(candidate) -> dict:
    """The kernel record of a candidate, as the plan shows it."""
    out = {"kernel": candidate.kernel}
    if candidate.kernel == "splash":
        out["block_sizes"] = {"block_q": candidate.block_q, "block_kv": candidate.block_kv,
                              "block_kv_compute": candidate.block_kv_compute}
    return out


def pad_multiple_for(kernel: str, shard_multiple: int) -> int:
    """The per-shard padding multiple the kernel needs (splash tiles shards by 128)."""
    return math.lcm(shard_multiple, LANE) if kernel == "splash" else shard_multiple
