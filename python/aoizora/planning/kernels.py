"""Which attention kernel a candidate compiles with, and its block sizes.

    kernel_for_platform("tpu") -> "splash"       ("cpu" -> "blockwise")
    kernel_for(form, platform) -> a context form's kernel ("ring" on "tpu" -> "tokamax_ring")
    attention_shapes(candidate, model, workload) -> KernelShape   (what one kernel call sees)
    choose_blocks(shape, device) -> (BlockCost, legal count)   (the block-size search)
    price_blocks(shape, blocks, device) -> BlockCost   (seconds, steps, the bounding resource)
    with_kernel(candidate, model, workload, platform, device) -> Candidate  (kernel, blocks,
        kernel_bound)
        raises KernelUnsupported with a one-line reason when a shard cannot run the kernel
    backend_vmem(candidate, head_dim, batch, generation) -> (VMEM bound, most predicted)
        bytes, for the planner's prediction of libtpu's verdict (residual_vmem_bytes for
        the kernels that return residuals, with RESIDUAL_VMEM_MARGIN)

On TPU targets every candidate runs the Pallas splash-attention kernel
(jax.experimental.pallas.ops.tpu.splash_attention) inside its context-parallel form, as
MaxDiffusion does (models/splash.py), except the ring form: it runs tokamax's ring kernel,
MaxDiffusion's `tokamax_ring` (models/tokamax_ring.py), whose every step is tokamax's splash
forward kernel, priced as jax's is (SPLASH_KERNELS: the same blocks, the same cost model; the
compiled kernel carries the same name and block metadata). The plain-JAX blockwise core stays
for CPU targets, where Mosaic kernels do not lower. The choice is made here, from the compile
target and the form, and recorded on the Candidate (kernel, block_q, block_kv,
block_kv_compute), so a plan names the kernel and block sizes it was compiled and priced with.
Nothing falls back silently.

Block sizes are searched (choose_blocks). The kernel tiles its query and key sequences by
block_q and block_kv (multiples of 128); a call pads its lengths up to multiples of them and
masks the padded keys (models/splash.py, as MaxDiffusion's _pad_data_for_flash does). The
legal set per call shape is a ladder: for each block count k (1..32), the smallest multiple
of the MXU tile that covers the length in exactly k blocks (the least padding for k blocks),
and 512, 1024, 2048 and 4096; block_kv_compute is 512 or block_kv. A triple is legal when an
upper bound of the kernel's scoped VMEM (vmem_bytes) fits the limit we compile with
(scoped_vmem_bytes, set in jaxenv). Each legal triple is priced with the kernel model Stage 1
and the simulator use (compute/splash_kernel.h through _core.splash_kernel_cost) on the
padded lengths, per grid step (one q block x one kv block): the DMA of its K/V block at HBM
bandwidth, its two matmuls padded to the MXU at peak x mxu_efficiency, the online softmax's
VPU ops (7 per score, and 2 per accumulator element per block_kv_compute sub-tile: the
rescale) and EUP exps at the profile's vector figures; the step costs the largest of the
three (the next block's DMA overlaps this block's compute) plus the profile's fixed
grid_step_seconds, and the call the sum over its steps. So the search now has reasons
beyond padding: fewer steps (larger blocks) pay fewer fixed costs, a larger
block_kv_compute rescales the accumulator less often, and a small block_q is HBM-bound.
Each candidate records which resource bounds its calls (BOUNDS; Candidate.kernel_bound).
The cheapest wins, ties to the blocks nearest the default (512 each), then to the smaller
score tile (the cheaper to compile). MaxDiffusion's default is 512 for each block
(`flash_block_sizes` in base_wan_14b.yml); its published tuned profiles are in
PUBLISHED_BLOCKS.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from dataclasses import dataclass

KERNELS = ("blockwise", "splash", "tokamax_ring")
# The kernels that run the splash forward kernel per call (jax's, or tokamax's inside its
# ring): block sizes searched and priced alike, shards tiled by LANE.
SPLASH_KERNELS = ("splash", "tokamax_ring")
# A context form whose TPU kernel is not jax's splash kernel: form -> kernel.
TPU_KERNEL_OF_FORM = {"ring": "tokamax_ring"}
LANE = 128                 # the kernel's sequence tile (TPU lane width)
DEFAULT_BLOCK = 512        # MaxDiffusion's default block_q / block_kv / block_kv_compute
MAX_BLOCKS = 32            # the block-count ladder's depth (choose_blocks)
COMMON_BLOCKS = (512, 1024, 2048, 4096)   # also tried: MaxDiffusion's default and its powers

# The scoped VMEM limit our TPU compiles run with: MaxDiffusion's deployment flag
# --xla_tpu_scoped_vmem_limit_kib=65536 (its README and run scripts), without which its
# tuned blocks do not compile (libtpu's default is 16 MiB on v5e, 32 MiB on v6e and TPU7x).
SCOPED_VMEM_FLAG = "xla_tpu_scoped_vmem_limit_kib"
SCOPED_VMEM_KIB = 65536


def scoped_vmem_bytes() -> int:
    """The scoped VMEM limit of this process's TPU compiles: the flag in LIBTPU_INIT_ARGS
    (jaxenv sets SCOPED_VMEM_KIB unless the user set another)."""
    m = re.search(SCOPED_VMEM_FLAG + r"=(\d+)", os.environ.get("LIBTPU_INIT_ARGS", ""))
    return (int(m.group(1)) if m else SCOPED_VMEM_KIB) * 1024


# MaxDiffusion's published block sizes (block_q, block_kv, block_kv_compute) for a baseline
# recipe on a slice: (generation, devices, baseline tag) -> blocks. v6e-8 Ulysses 4 and
# TPU7x-8 Ulysses 2 x ring 2 are its tuned serving profiles (from MaxDiffusion's PRs);
# the TPU7x profile's kernel computes in 1024-key sub-tiles (block_kv_compute_in), which is
# what block_kv_compute means for jax's splash kernel. Every other recipe runs the default.
PUBLISHED_BLOCKS = {
    ("v6e", 8, "maxdiffusion-data2-ulysses"): (9472, 1024, 512),
    ("tpu7x", 8, "maxdiffusion-data2-ulysses2-ring"): (6400, 2048, 1024),
}


class KernelUnsupported(ValueError):
    """A candidate whose shards cannot run the kernel (the reason is the message)."""


def kernel_for_platform(platform: str) -> str:
    """The attention kernel for a compile platform: "splash" on "tpu", "blockwise" on "cpu"."""
    if platform == "tpu":
        return "splash"
    if platform == "cpu":
        return "blockwise"
    raise ValueError(f"no attention kernel for platform {platform!r}: use 'tpu' or 'cpu'")


def kernel_for(form: str, platform: str) -> str:
    """The attention kernel of a context form on a compile platform: on "tpu" the form's
    entry in TPU_KERNEL_OF_FORM, else "splash"; "blockwise" on "cpu"."""
    kernel = kernel_for_platform(platform)
    return TPU_KERNEL_OF_FORM.get(form, kernel) if kernel == "splash" else kernel


@dataclass(frozen=True)
class KernelShape:
    """What one self-attention kernel call sees on one device: heads, query and key lengths
    (padded), head dim, and how many calls a step makes (ring steps)."""

    heads: int
    q_len: int
    kv_len: int
    head_dim: int
    calls: int = 1
    kernel: str = "splash"     # whose VMEM bound the block search holds it to
    residuals: bool = False    # each call also returns its logsumexp (the ring steps)


def attention_shapes(candidate, model, workload, kernel: str = "splash") -> KernelShape:
    """The per-device shape of the self-attention kernel under `candidate` (sequence padded
    as the model pads it for `kernel`)."""
    c = candidate
    s = model.padded_len(workload, c.context, kernel=kernel)
    heads = model.heads // getattr(c, "attention_tensor", c.tensor)
    d = model.dim // model.heads
    if c.form == "allgather_kv":
        shape = KernelShape(heads, s // c.context, s, d)
    elif c.form == "ulysses":
        shape = KernelShape(heads // c.ulysses, s, s, d)
    elif c.form == "ring":
        shape = KernelShape(heads, s // c.context, s // c.context, d, calls=c.context)
    elif c.form == "ulysses_ring":
        r = s // c.ring
        shape = KernelShape(heads // c.ulysses, r, r, d, calls=c.ring)
    else:
        shape = KernelShape(heads, s, s, d)
    return dataclasses.replace(shape, kernel=kernel, residuals=returns_residuals(c))


def returns_residuals(candidate) -> bool:
    """Whether the sharding's attention kernel returns its residuals: the ring steps of the
    ring and Ulysses x ring forms (models/splash.py, tokamax's ring)."""
    return candidate.form in ("ring", "ulysses_ring")


def round_up(n: int, m: int) -> int:
    return -(-n // m) * m


def block_ladder(n: int, align: int, max_blocks: int = MAX_BLOCKS) -> list[int]:
    """The block sizes tried on a length n, ascending: for each block count k =
    1..max_blocks, the smallest multiple of `align` that covers n in exactly k blocks (counts
    with no such block are left out), and the usual hand-tuned sizes COMMON_BLOCKS (smaller
    than n / max_blocks on long sequences)."""
    out = {b for b in COMMON_BLOCKS if b % align == 0 and b < round_up(n, align)}
    for k in range(1, max_blocks + 1):
        b = round_up(-(-n // k), align)
        if -(-n // b) == k:
            out.add(b)
    return sorted(out)


def vmem_bytes(block_q: int, block_kv: int, block_kv_compute: int, head_dim: int,
               dtype_bytes: int = 2, kernel: str = "splash", residuals: bool = False) -> int:
    """An upper bound of an attention kernel's VMEM (jax's splash kernel, or tokamax's ring
    kernel: `kernel`), checked against what libtpu reports (docs/simulator.md, "Block
    sizes"; bench/splash_vmem.py; the points in tests/python/test_kernels.py). The kernel's
    own scratch (scratch_bytes), exactly; the scores, bounded by f32 over the whole
    block_q x block_kv tile (the inner loop over block_kv_compute sub-tiles keeps most of
    them live: 9728 x 9728 in 512-key sub-tiles uses 375 MiB in all); where the whole
    block is computed at once (block_kv_compute = block_kv), one more f32 lane tile per
    query row, which libtpu's total needs beyond those (4736 x 2432 x 2432: 59.86 MiB,
    1.98 over them; the one point that sets this term, the other whole-block points check
    it); and on a kernel that returns its residuals to merge a ring's steps (tokamax's ring
    kernel always; jax's splash kernel in the ring steps of the Ulysses x ring form,
    `residuals`) two f32 residual outputs per query row (a lane tile each,
    double-buffered: the operands libtpu lists; 4736 x 2432 with 40 heads on tokamax: 69.10
    MiB, the bound 69.44). jax's splash kernel with residuals is not bounded by its blocks
    alone (TPU7x, 8192 x 1024 x 512: 73.48 MiB vmapped over 2 samples a device, 60.41 over
    one; the bound 69.00): the planner holds those to residual_vmem_bytes instead, which
    counts the batch and the spill slots (compile_policy.backend_prediction, backend_vmem); the
    term keeps the block search off blocks that are likely not to fit."""
    whole_block = block_q * LANE * 4 if block_kv_compute == block_kv else 0
    lse = block_q * 2 * 2 * LANE * 4 if kernel == "tokamax_ring" or residuals else 0
    return (scratch_bytes(block_q, block_kv, head_dim, dtype_bytes) + whole_block + lse
            + 4 * block_q * block_kv)


# The f32 block_q x block_kv score tiles that bound Mosaic's own VMEM in a residual-returning
# kernel (its score sub-tiles live across the block_kv_compute loop, and its register spill
# slots), per generation: fitted to libtpu's totals (tests/python/test_kernels.py,
# LIBTPU_KERNEL_TOTAL_MIB; TPU7x: the totals in tests/data/residual_vmem.json), checked on
# bench/residual_vmem.py's verdicts there (docs/planner.md, "Residual-returning kernels").
SCORE_TILES = {"v5e": 1.0, "v6e": 1.0, "tpu7x": 1.6}
SCORE_TILES_DEFAULT = 1.6                     # a generation not measured: the largest
SUBLANES = 8                                  # the kv segment ids' window is 8 rows of keys


def residual_vmem_bytes(kernel: str, block_q: int, block_kv: int, block_kv_compute: int,
                        head_dim: int, *, batch: int = 1, generation: str = "",
                        dtype_bytes: int = 2) -> int:
    """An upper bound of libtpu's scoped VMEM for one call of a kernel that returns its
    residuals (the ring steps: tokamax's ring kernel, `kernel` "tokamax_ring", or jax's
    splash kernel with save_residuals, "splash"), by parts:

    - the windows of its operands, as its BlockSpecs give them, each double-buffered (what
      libtpu lists): q and o (dtype) and the q segment ids (int32, a lane tile) per query
      row, k and v (dtype) and the kv segment ids (int32, 8 sublanes) per key row; segment
      ids always (a call whose keys are padded has them; without, this is an upper bound);
    - its residual outputs, f32 lane tiles per query row, double-buffered: one for jax's
      kernel (the logsumexp), two for tokamax's (logsumexp, max logits);
    - the online softmax's m, l (a lane tile each) and accumulator (head_dim) in f32 per
      query row: scratch in tokamax's kernel, outputs of a constant window in jax's, which
      libtpu double-buffers when the kernel is vmapped over more than one sample (`batch`,
      the samples a device holds: TPU7x 8192 x 1024 x 512 used 60.41 MiB at batch 1, 73.48
      at batch 2, the 12 MiB of these buffers and 1 MiB more of spills; heads are a grid
      axis of the kernel and do not enter);
    - where the whole key block is computed at once (block_kv_compute = block_kv), one more
      f32 lane tile per query row (as vmem_bytes);
    - Mosaic's own: score sub-tiles and register spill slots, SCORE_TILES[generation] f32
      tiles of block_q x block_kv.
    """
    d, lane_row = head_dim, LANE * 4
    acc = 2 * lane_row + 4 * d
    if kernel == "splash" and batch > 1:
        acc *= 2
    outputs = 2 * lane_row * (2 if kernel == "tokamax_ring" else 1)
    per_q = 2 * 2 * d * dtype_bytes + 2 * lane_row + acc + outputs
    per_kv = 2 * 2 * d * dtype_bytes + 2 * SUBLANES * 4
    whole_block = lane_row if block_kv_compute == block_kv else 0
    tiles = SCORE_TILES.get(generation, SCORE_TILES_DEFAULT)
    return int(block_q * (per_q + whole_block) + block_kv * per_kv
               + tiles * 4 * block_q * block_kv)


# How far below the scoped VMEM limit a residual-returning kernel's bound must be for the
# planner to predict that the backend accepts it (compile_policy.backend_prediction); within it the
# sharding is compiled in full. The bound is above every total libtpu reported, by 1.5 % at
# the least on TPU7x (the point its SCORE_TILES term is fitted to) and 7 % at the least
# elsewhere; the margin, that 7 % rounded up, keeps a kernel as far outside the bound as
# the closest seen from being cleared (docs/planner.md, "Residual-returning kernels").
RESIDUAL_VMEM_MARGIN = 0.10


def backend_vmem(candidate, head_dim: int, batch: int, generation: str) -> tuple[int, int]:
    """(an upper bound of the candidate's attention kernel VMEM, the most it may be for the
    backend's verdict to be predicted), bytes: vmem_bytes against the scoped limit, or for
    a kernel that returns its residuals residual_vmem_bytes (with the samples a device
    holds: `batch` over data x fsdp) against the limit less RESIDUAL_VMEM_MARGIN."""
    c, limit = candidate, scoped_vmem_bytes()
    blocks = (c.block_q, c.block_kv, c.block_kv_compute)
    if not returns_residuals(c):
        return vmem_bytes(*blocks, head_dim, kernel=c.kernel), limit
    per_device = max(1, batch // (c.data * c.fsdp))
    return (residual_vmem_bytes(c.kernel, *blocks, head_dim, batch=per_device,
                                generation=generation),
            int(limit * (1 - RESIDUAL_VMEM_MARGIN)))


def scratch_bytes(block_q: int, block_kv: int, head_dim: int, dtype_bytes: int = 2) -> int:
    """The splash kernel's own scratch as libtpu reports it (exact for the triples of
    tests/python/test_kernels.py): per query row q and o double-buffered, the f32
    accumulator and the m, l rows (128 lanes of f32 each); per key row k and v
    double-buffered."""
    per_q_row = 2 * 2 * head_dim * dtype_bytes + 4 * head_dim + 2 * LANE * 4
    per_kv_row = 2 * 2 * head_dim * dtype_bytes
    return block_q * per_q_row + block_kv * per_kv_row


# What can bound a kernel call (compute/splash_kernel.h): the MXU, the online softmax on
# the VPU/EUP, the K/V DMA against HBM, or the fixed cost per grid step.
BOUNDS = ("mxu", "vpu/eup", "hbm-dma", "step-overhead")


@dataclass(frozen=True)
class DeviceFigures:
    """What the block search needs of one device (one TensorCore): peak FLOP/s, HBM
    bandwidth, the MXU tile edge, the fraction of the padded peak a matmul reaches, the
    VPU's f32 element-ops/s, the EUP's results/s and the fixed seconds of one grid step
    (0: that work costs nothing)."""

    peak_flops: float
    hbm_bandwidth: float
    mxu_size: int
    mxu_efficiency: float = 1.0
    vector_ops_per_second: float = 0.0
    transcendentals_per_second: float = 0.0
    grid_step_seconds: float = 0.0

    @classmethod
    def of(cls, spec: dict) -> "DeviceFigures":
        """From a topology's chip figures (Topology.spec), shared out between its cores."""
        cores = spec.get("cores_per_chip", 1)
        return cls(spec["peak_flops"] / cores, spec["hbm_bandwidth"] / cores,
                   int(spec.get("mxu_size", LANE)), float(spec.get("mxu_efficiency", 1.0)),
                   spec.get("vector_ops_per_second", 0.0) / cores,
                   spec.get("transcendentals_per_second", 0.0) / cores,
                   float(spec.get("grid_step_seconds", 0.0)))

    @classmethod
    def of_topology(cls, name: str) -> "DeviceFigures":
        """From a catalog slice name such as "v6e:2x4" (its generation's shipped profile)."""
        from aoizora import _core

        return cls.of(_core.make_topology(name).spec)


@dataclass(frozen=True)
class BlockCost:
    """One block triple priced on one call shape: padded lengths, the kernel model's FLOPs,
    HBM bytes and seconds for all `calls` of one sample on one device, its scoped VMEM, its
    grid steps per call and the resource that bounds each step (one of BOUNDS)."""

    block_q: int
    block_kv: int
    block_kv_compute: int
    q_pad: int
    kv_pad: int
    flops: float
    bytes: float
    seconds: float
    vmem: int
    steps: int = 0
    bound: str = ""

    @property
    def blocks(self) -> tuple[int, int, int]:
        return self.block_q, self.block_kv, self.block_kv_compute


def clamp_blocks(q_len: int, kv_len: int,
                 blocks: tuple[int, int, int]) -> tuple[int, int, int]:
    """Blocks no longer than the (128-padded) lengths they tile, block_kv_compute dividing
    block_kv (the kernel refuses any other): what a kernel call runs with
    (models/splash.py). A block_kv clamped to a length the compute block does not divide
    (a ring shard of 2432 keys under 512) computes the whole block at once."""
    bq = min(blocks[0], round_up(q_len, LANE))
    bkv = min(blocks[1], round_up(kv_len, LANE))
    bkc = min(blocks[2], bkv)
    return bq, bkv, bkc if bkv % bkc == 0 else bkv


def price_blocks(shape: KernelShape, blocks: tuple[int, int, int],
                 device: DeviceFigures) -> BlockCost:
    """The kernel model's cost of `blocks` on `shape` (lengths padded to the blocks), per
    grid step as Stage 1 and the simulator price it, and the resource that bounds it."""
    from aoizora import _core

    bq, bkv, bkc = clamp_blocks(shape.q_len, shape.kv_len, blocks)
    q_pad, kv_pad = round_up(shape.q_len, bq), round_up(shape.kv_len, bkv)
    # The per-grid-step model Stage 1 and the simulator price the kernel with.
    c = _core.splash_kernel_cost(shape.heads, q_pad, kv_pad, shape.head_dim, shape.head_dim,
                                 bq, bkv, bkc, 2, dataclasses.asdict(device))
    return BlockCost(bq, bkv, bkc, q_pad, kv_pad, shape.calls * c["flops"],
                     shape.calls * c["bytes"], shape.calls * c["seconds"],
                     vmem_bytes(bq, bkv, bkc, shape.head_dim, kernel=shape.kernel,
                                residuals=shape.residuals),
                     int(c["steps"]), c["bound"])


def legal_triples(shape: KernelShape, align: int):
    """Every (block_q, block_kv, block_kv_compute) of the ladders whose VMEM fits."""
    limit = scoped_vmem_bytes()
    kv_ladder = block_ladder(shape.kv_len, align)
    for bq in block_ladder(shape.q_len, align):
        for bkv in kv_ladder:
            for bkc in sorted({min(DEFAULT_BLOCK, bkv), bkv}):
                if (bkv % bkc == 0 and vmem_bytes(bq, bkv, bkc, shape.head_dim,
                                                  kernel=shape.kernel,
                                                  residuals=shape.residuals) <= limit):
                    yield bq, bkv, bkc


def _from_default(blocks: tuple[int, int, int]) -> float:
    """How far blocks are from MaxDiffusion's default, in powers of two summed."""
    return sum(abs(math.log2(b / DEFAULT_BLOCK)) for b in blocks)


def choose_blocks(shape: KernelShape, device: DeviceFigures) -> tuple[BlockCost, int]:
    """The cheapest legal block triple for `shape` by the kernel model (per grid step:
    price_blocks), and how many were legal. Among triples the model prices alike the one
    nearest MaxDiffusion's default (512 each, in powers of two) wins, then the smaller score
    tile: large tiles compile slowly (Mosaic, libtpu 0.0.42.1, one call: 512 x 512 3.6 s,
    4096 x 512 23 s, 9472 x 512 80 s). Raises KernelUnsupported when none fits VMEM."""
    align = max(LANE, device.mxu_size)
    priced = [price_blocks(shape, t, device) for t in legal_triples(shape, align)]
    if not priced:
        raise KernelUnsupported(f"no splash block sizes fit {scoped_vmem_bytes() >> 10} KiB "
                                f"of VMEM for q {shape.q_len}, kv {shape.kv_len}")
    best = min(priced, key=lambda c: (c.seconds, _from_default(c.blocks),
                                      c.block_q * c.block_kv_compute, c.blocks))
    return best, len(priced)


def published_blocks(generation: str, n_devices: int, tag: str) -> tuple[int, int, int]:
    """MaxDiffusion's blocks for a baseline recipe: its tuned profile where one is
    published for the slice, else its default of 512 each."""
    return PUBLISHED_BLOCKS.get((generation, n_devices, tag), (DEFAULT_BLOCK,) * 3)


def with_kernel(candidate, model, workload, platform: str,
                device: DeviceFigures | str | None = None, *,
                blocks: tuple[int, int, int] | None = None):
    """The candidate with its form's attention kernel on `platform` (kernel_for) and its
    block sizes: `blocks` when given (a published recipe: not checked against the VMEM
    bound, which is conservative; the compile decides), else choose_blocks on `device`
    (DeviceFigures, or a catalog slice name; needed on TPU).
    Raises KernelUnsupported (one line, naming the candidate) when its shards cannot run
    the kernel."""
    kernel = kernel_for(candidate.form, platform)
    if kernel == "blockwise" or not hasattr(model, "padded_len"):
        return dataclasses.replace(candidate, kernel="blockwise", block_q=0, block_kv=0,
                                   block_kv_compute=0)
    shape = attention_shapes(candidate, model, workload, kernel)
    if shape.q_len % LANE or shape.kv_len % LANE:
        raise KernelUnsupported(f"{candidate.name}: {kernel} needs sequence lengths that are "
                                f"multiples of {LANE}, got q {shape.q_len}, kv {shape.kv_len}")
    if isinstance(device, str):
        device = DeviceFigures.of_topology(device)
    if blocks is None:
        if device is None:
            raise ValueError("with_kernel on a TPU target needs the device figures")
        try:
            blocks = choose_blocks(shape, device)[0].blocks
        except KernelUnsupported as e:
            raise KernelUnsupported(f"{candidate.name}: {e}") from None
    bq, bkv, bkc = clamp_blocks(shape.q_len, shape.kv_len, blocks)
    bound = price_blocks(shape, (bq, bkv, bkc), device).bound if device is not None else ""
    return dataclasses.replace(candidate, kernel=kernel, block_q=bq, block_kv=bkv,
                               block_kv_compute=bkc, kernel_bound=bound)


def describe(candidate) -> dict:
    """The kernel record of a candidate, as the plan shows it."""
    out = {"kernel": candidate.kernel}
    if candidate.kernel in SPLASH_KERNELS:
        out["block_sizes"] = {"block_q": candidate.block_q, "block_kv": candidate.block_kv,
                              "block_kv_compute": candidate.block_kv_compute}
        out["bound"] = candidate.kernel_bound
    return out


def pad_multiple_for(kernel: str, shard_multiple: int) -> int:
    """The per-shard padding multiple the kernel needs (splash tiles shards by 128)."""
    return math.lcm(shard_multiple, LANE) if kernel in SPLASH_KERNELS else shard_multiple
