"""The attention kernel of a candidate (kernels.py): splash on TPU targets in every context
form but the ring (tokamax's ring kernel, test_tokamax_ring.py), blockwise on CPU; the block
sizes the plan records; the compiled programs."""

import dataclasses
import json
import pathlib

import pytest

from aoizora.compile import compiler as C
from aoizora.planning import kernels
from aoizora.planning import strategies as S
from aoizora.models import get_model, get_workload

MOSAIC = 'custom_call_target="tpu_custom_call"'


@pytest.fixture(scope="module")
def tiny():
    cfg, w = get_model("wan-tiny"), get_workload("tiny")
    return cfg, w, {c.name: c for c in S.enumerate_candidates(cfg, w, 8)}


def test_kernel_follows_the_compile_platform():
    assert kernels.kernel_for_platform("tpu") == "splash"
    assert kernels.kernel_for_platform("cpu") == "blockwise"
    with pytest.raises(ValueError, match="no attention kernel"):
        kernels.kernel_for_platform("gpu")


def test_block_ladder_gives_the_least_padding_for_each_block_count():
    # 75,776 = 296 x 256: k blocks of the smallest 256-multiple covering it.
    ladder = kernels.block_ladder(75776, 256)
    assert 9472 in ladder and 18944 in ladder and 75776 in ladder   # 8, 4, 1 blocks: no pad
    assert 12800 in ladder                                            # 6 blocks: 76,800
    assert {512, 1024, 2048, 4096} <= set(ladder)                     # the common sizes too
    assert all(b % 256 == 0 for b in ladder)
    assert kernels.block_ladder(384, 128) == [128, 256, 384]          # short: every count


# libtpu 0.0.42.1 reports the splash forward kernel's own scoped VMEM when a compile
# exceeds the limit: (q, kv, kv_compute) -> MiB, head dim 128 (bench/splash_vmem.py).
LIBTPU_KERNEL_SCRATCH_MIB = {(512, 512, 512): 1.75, (2048, 512, 512): 5.5,
                             (512, 2048, 2048): 3.25, (4096, 2048, 512): 12.0,
                             (9472, 1024, 512): 24.12}
# ... and the whole kernel (scratch and score tiles) where the scratch alone fit: jax's
# splash kernel on whole blocks (no segment ids), then with the keys padded (segment ids),
# then tokamax's ring kernel (segment ids and its residual outputs); heads of 128, 40 of
# them per call from the v5e 4736 x 2432 on (10 for v6e's 9472 x 1024 and 1024 x 9472), as
# bench/splash_vmem.py --kernel ... with SPLASH_VMEM_HEADS measures them.
LIBTPU_KERNEL_TOTAL_MIB = {("splash", "v6e", 9472, 1024, 512): 46.95,
                           ("splash", "tpu7x", 9472, 1024, 512): 45.98,
                           ("splash", "v5e", 9728, 9728, 512): 374.77,
                           ("splash", "v5e", 4736, 2432, 2432): 59.86,
                           ("splash-padded", "v5e", 2048, 512, 512): 9.76,
                           ("splash-padded", "v5e", 4096, 2048, 512): 37.92,
                           ("splash-padded", "v5e", 2048, 2048, 2048): 21.90,
                           ("tokamax_ring", "v5e", 2048, 512, 512): 12.28,
                           ("tokamax_ring", "v5e", 512, 2048, 2048): 6.93,
                           ("tokamax_ring", "v5e", 4096, 2048, 512): 49.94,
                           ("splash-padded", "v6e", 9472, 1024, 512): 46.16,
                           ("splash-padded", "v6e", 1024, 9472, 9472): 43.30,
                           ("splash-padded", "v6e", 512, 18944, 512): 49.55,
                           ("tokamax_ring", "v6e", 512, 18944, 512): 50.48,
                           ("tokamax_ring", "v5e", 4736, 2432, 2432): 69.10}


def test_vmem_model_is_libtpus_scratch_plus_a_bound_on_the_rest():
    for (bq, bkv, bkc), mib in LIBTPU_KERNEL_SCRATCH_MIB.items():
        assert kernels.scratch_bytes(bq, bkv, 128) / 2**20 == pytest.approx(mib, rel=0.01)
    for (kernel, _, bq, bkv, bkc), mib in LIBTPU_KERNEL_TOTAL_MIB.items():
        model = kernels.vmem_bytes(bq, bkv, bkc, 128,
                                   kernel="tokamax_ring" if kernel == "tokamax_ring"
                                   else "splash") / 2**20
        # An upper bound, never below libtpu, and not so loose that it rules out blocks
        # that compile (MaxDiffusion's v6e 9472 x 1024: 46 MiB, the bound 62 of 64).
        assert mib <= model <= 1.35 * mib, (kernel, bq, bkv, bkc, model)


def test_wan_14b_ring_blocks_libtpu_refused_are_over_the_ring_bound():
    """The blocks the search chose for Wan 14B's ring over 2 of v5e-4 at 480p 21f (4736 x
    2432): the splash bound said 57.9 MiB, libtpu refused the ring kernel at 66.79 of 64;
    the ring's bound rules them out, and the search keeps within it."""
    assert kernels.vmem_bytes(4736, 2432, 2432, 128, kernel="tokamax_ring") \
        > kernels.scoped_vmem_bytes() >= 64 * 2**20
    shape = kernels.KernelShape(heads=40, q_len=4736, kv_len=4736, head_dim=128, calls=2,
                                kernel="tokamax_ring")
    best, _ = kernels.choose_blocks(shape, kernels.DeviceFigures.of_topology("v5e:2x2"))
    assert best.vmem <= kernels.scoped_vmem_bytes()
    assert best.vmem == kernels.vmem_bytes(*best.blocks, 128, kernel="tokamax_ring")


def test_block_search_beats_the_default_where_512_is_hbm_bound():
    """A device of v6e's figures with a 128-wide MXU (no padding): 918 TFLOP/s over
    1.64 TB/s = 560 FLOP/byte; a 512-query block of 128-dim heads does 512 FLOP per K/V
    byte, so it is HBM-bound and larger blocks pay. (v6e's own 256-wide MXU pads Q K^T's
    128-deep contraction: 768 MXU FLOP per byte, compute-bound; see the next test.) At the
    roofline: the fitted v6e profile's mxu_efficiency (0.29) makes every block compute-bound."""
    shape = kernels.KernelShape(heads=10, q_len=75776, kv_len=75776, head_dim=128)
    v6e = dataclasses.replace(kernels.DeviceFigures.of_topology("v6e:2x4"), mxu_size=128,
                              mxu_efficiency=1.0)
    best, legal = kernels.choose_blocks(shape, v6e)
    default = kernels.price_blocks(shape, (512, 512, 512), v6e)
    # Pads under 1 %: fewer grid steps may pay for a little padding (2816 x 4736 here).
    assert legal > 100 and best.q_pad * best.kv_pad <= 1.01 * 75776**2
    assert default.bytes > default.flops / v6e.peak_flops * v6e.hbm_bandwidth   # HBM-bound
    assert best.seconds < 0.92 * default.seconds
    assert best.vmem <= kernels.scoped_vmem_bytes()
    # Every legal triple was priced: none beats the choice.
    for t in kernels.legal_triples(shape, 256):
        assert kernels.price_blocks(shape, t, v6e).seconds >= best.seconds


# A made-up device of round figures (one core): the two tests below price by hand.
_ROUND = kernels.DeviceFigures(peak_flops=1e12, hbm_bandwidth=1e12, mxu_size=128,
                               vector_ops_per_second=1e12, transcendentals_per_second=1e12,
                               grid_step_seconds=1e-6)


def test_the_step_cost_separates_two_padding_free_blocks_the_roofline_priced_alike():
    """1 head, 1024 x 1024 keys, 128-dim: 512s pad nothing and neither does one 1024 block.
    Both do 2 x 2 x 1024^2 x 128 = 536.870912 MFLOP of MXU work, 536.870912 us here, which
    bounds each (the old whole-call roofline priced them alike and kept the 512 default).
    512s take 4 grid steps of 134.217728 us + 1 us, plus the first K/V block's DMA
    (1,572,864 B / 4 = 0.393216 us); one 1024 block takes 1 step + 1 us + its DMA
    (1,048,576 B: 1.048576 us). The search now picks the single step."""
    shape = kernels.KernelShape(heads=1, q_len=1024, kv_len=1024, head_dim=128)
    small = kernels.price_blocks(shape, (512, 512, 512), _ROUND)
    whole = kernels.price_blocks(shape, (1024, 1024, 512), _ROUND)
    assert (small.q_pad, whole.q_pad, small.steps, whole.steps) == (1024, 1024, 4, 1)
    assert small.seconds == pytest.approx(4 * (134.217728e-6 + 1e-6) + 0.393216e-6, rel=1e-12)
    assert whole.seconds == pytest.approx(536.870912e-6 + 1e-6 + 1.048576e-6, rel=1e-12)
    assert small.bound == whole.bound == "mxu"
    best, _ = kernels.choose_blocks(shape, _ROUND)
    assert best.blocks == (1024, 1024, 512)   # ties with 1024 / 1024: nearer the default


def test_the_softmax_rescale_separates_compute_blocks_on_a_slow_vector_unit():
    """The same call on a VPU of 1e10 ops/s: 1024^2 scores x 7 ops plus,
    per 512-key sub-tile, 1024 rows x 128 x 2 rescale ops: 7,864,320 ops (786.432 us) with
    block_kv_compute 512, 7,602,176 (760.2176 us) with 1024; above the MXU's 536.87 us, so
    the VPU bounds both and the search takes the whole block as one sub-tile."""
    slow = dataclasses.replace(_ROUND, vector_ops_per_second=1e10)
    shape = kernels.KernelShape(heads=1, q_len=1024, kv_len=1024, head_dim=128)
    two = kernels.price_blocks(shape, (1024, 1024, 512), slow)
    one = kernels.price_blocks(shape, (1024, 1024, 1024), slow)
    assert two.seconds == pytest.approx(786.432e-6 + 1e-6 + 1.048576e-6, rel=1e-12)
    assert one.seconds == pytest.approx(760.2176e-6 + 1e-6 + 1.048576e-6, rel=1e-12)
    assert one.bound == two.bound == "vpu/eup"
    assert kernels.choose_blocks(shape, slow)[0].blocks == (1024, 1024, 1024)


def test_a_candidate_and_the_report_say_what_bounds_its_kernel():
    from aoizora.plan_format import Choice
    from aoizora.report.tables import BOUND_WORDS, kernel_text

    cfg, w = _MODEL_720P
    c = {c.name: c for c in S.enumerate_candidates(cfg, w, 8)}["dp2-uly4w"]
    k = kernels.with_kernel(c, cfg, w, "tpu", "v6e:2x4", blocks=(512, 512, 512))
    assert k.kernel_bound in kernels.BOUNDS
    assert kernels.describe(k)["bound"] == k.kernel_bound
    assert k.key() == kernels.with_kernel(c, cfg, w, "tpu", "v5e:2x4", blocks=(512, 512, 512)).key()
    choice = Choice(k.name, [8], ["c"], k.to_dict(), "jax-default", [])
    assert kernel_text(choice).startswith("splash q 512, kv 512 / 512; bound by ")
    # tokamax's ring kernel runs the splash kernel at every step: its blocks and bound too.
    ring = kernels.with_kernel({c.name: c for c in S.enumerate_candidates(cfg, w, 8)}["dp2-ring4w"],
                               cfg, w, "tpu", "v6e:2x4")
    assert ring.kernel == "tokamax_ring" and ring.kernel_bound in kernels.BOUNDS
    assert kernel_text(Choice(ring.name, [8], ["c"], ring.to_dict(), "jax-default", [])) == (
        f"tokamax ring, splash per step, q {ring.block_q}, kv {ring.block_kv} / "
        f"{ring.block_kv_compute}; bound by {BOUND_WORDS[ring.kernel_bound]}")


def test_padding_costs_flops_and_vmem_caps_the_blocks():
    shape = kernels.KernelShape(heads=20, q_len=37888, kv_len=37888, head_dim=128)
    dev = kernels.DeviceFigures.of_topology("tpu7x:2x2x1")
    tuned = kernels.price_blocks(shape, (6400, 2048, 1024), dev)      # MaxDiffusion's v7x-8
    assert (tuned.q_pad, tuned.kv_pad) == (38400, 38912)
    exact = kernels.price_blocks(shape, (9472, 1024, 512), dev)
    assert tuned.flops == pytest.approx(exact.flops * 38400 * 38912 / 37888**2)
    assert kernels.vmem_bytes(9472, 2048, 512, 128) > kernels.scoped_vmem_bytes()
    assert all(kernels.vmem_bytes(*t, 128) <= kernels.scoped_vmem_bytes()
               for t in kernels.legal_triples(shape, 256))


def test_published_blocks_are_taken_as_given():
    assert kernels.published_blocks("v6e", 8, "maxdiffusion-data2-ulysses") == (9472, 1024, 512)
    assert kernels.published_blocks("v6e", 16, "maxdiffusion-data2-ulysses") == (512, 512, 512)
    cfg, w = get_model("wan2.1-t2v-14b", blocks=2), get_workload("720p", 81)
    c = {c.name: c for c in S.enumerate_candidates(cfg, w, 8)}["dp2-usp2x2w"]
    k = kernels.with_kernel(c, cfg, w, "tpu", blocks=(6400, 2048, 1024))  # above the bound:
    assert (k.block_q, k.block_kv, k.block_kv_compute) == (6400, 2048, 1024)  # compile decides


def test_14b_720p_shapes_and_blocks_per_form():
    """Wan 2.1 14B, 720p 81 frames (75,600 tokens) on 8 devices: what one kernel call sees."""
    cfg, w = get_model("wan2.1-t2v-14b", blocks=2), get_workload("720p", 81)
    by = {c.name: c for c in S.enumerate_candidates(cfg, w, 8)}
    s = cfg.padded_len(w, 4, kernel="splash")
    assert s == 75776 and s % (4 * 128) == 0      # shards of 18,944 = 148 x 128
    cases = {"dp2-ag4w": (40, s // 4, s, 1), "dp2-uly4": (10, s, s, 1),
             "dp2-ring4w": (40, s // 4, s // 4, 4), "dp2-usp2x2": (20, s // 2, s // 2, 2)}
    for name, (h, sq, skv, calls) in cases.items():
        c = kernels.with_kernel(by[name], cfg, w, "tpu", "v5e:2x4")
        shape = kernels.attention_shapes(c, cfg, w)
        assert (shape.heads, shape.q_len, shape.kv_len, shape.calls) == (h, sq, skv, calls)
        assert c.kernel == ("tokamax_ring" if c.form == "ring" else "splash")
        assert shape.head_dim == 128
        assert c.block_q % 128 == 0 and c.block_kv % 128 == 0
        assert kernels.vmem_bytes(c.block_q, c.block_kv, c.block_kv_compute, 128) \
            <= kernels.scoped_vmem_bytes()
    cpu = kernels.with_kernel(by["dp2-ag4w"], cfg, w, "cpu")
    assert (cpu.kernel, cpu.block_q) == ("blockwise", 0)
    assert cpu.key() != kernels.with_kernel(by["dp2-ag4w"], cfg, w, "tpu", "v5e:2x4").key()  # cache


def test_candidate_with_kernel_round_trips_through_its_dict(tiny):
    cfg, w, by = tiny
    c = kernels.with_kernel(by["dp2-ring4"], cfg, w, "tpu", "v5e:2x4")
    assert S.Candidate.from_dict(c.to_dict()) == c
    assert S.Candidate.from_dict(c.to_dict()).kernel_bound == c.kernel_bound
    # The tiny model's calls are a few small steps: the fixed cost per step bounds them.
    assert kernels.describe(c) == {"kernel": "tokamax_ring", "block_sizes": {
        "block_q": c.block_q, "block_kv": c.block_kv, "block_kv_compute": c.block_kv_compute},
        "bound": "step-overhead"}


# Every context form (and none) compiled for the TPU holds the kernel, once per call.
FORMS = {"tp8": 1, "dp2-ag4": 1, "dp2-uly4": 1, "dp2-ring4": 4, "dp2-usp2x2": 2}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_tpu_compile_holds_the_pallas_kernel_in_every_form(tiny, name):
    cfg, w, by = tiny
    c = kernels.with_kernel(by[name], cfg, w, "tpu", "v5e:2x4")
    hlo = C.compile(c, cfg, w, "v5e:2x4")
    assert hlo.count(MOSAIC) == FORMS[name]
    assert f'\\"block_q\\": {c.block_q}, \\"block_kv\\": {c.block_kv}' in hlo  # its blocks
    if name in ("dp2-ring4", "dp2-usp2x2"):
        assert "_residuals" in hlo  # logsumexp per ring step
    assert ("_ring_attention" in hlo) == (name == "dp2-ring4")  # tokamax's ring kernel


def test_cpu_compile_stays_blockwise(tiny):
    cfg, w, by = tiny
    c = kernels.with_kernel(by["dp2-ring4"], cfg, w, "cpu")
    hlo = C.compile(c, cfg, w, "cpu:8")
    assert "tpu_custom_call" not in hlo and "collective-permute" in hlo
    with pytest.raises(C.CompileError, match="lowering failed"):  # Mosaic has no CPU lowering
        C.lower(kernels.with_kernel(by["dp2-ring4"], cfg, w, "tpu", "v5e:2x4"), cfg, w, "cpu:8")


_MODEL_720P = (get_model("wan2.1-t2v-14b", blocks=2), get_workload("720p", 81))


def _planned(topology: str):
    from types import SimpleNamespace

    from aoizora import _core
    from aoizora.planning import candidate_filter

    cfg, w = _MODEL_720P
    skipped = []
    run = SimpleNamespace(cfg=cfg, wl=w, target=SimpleNamespace(platform="tpu"),
                          stage2=SimpleNamespace(topology=_core.make_topology(topology)),
                          skip=lambda name, kind, why: skipped.append(name), searched_of={})
    out = {c.name: c for c in candidate_filter.with_kernels(run, S.enumerate_candidates(cfg, w, 8))}
    tags = [t for c in out.values() for t in c.baselines]
    assert len(tags) == len(set(tags)) and not skipped      # each tag on one candidate
    return out


def test_maxdiffusion_recipes_run_their_published_blocks_beside_the_searched_ones():
    """TPU7x-8, Wan 14B 720p 81f: the Ulysses 2 x ring 2 recipe runs MaxDiffusion's tuned
    6400/2048/1024 and the default recipe its 512s, each a candidate of its own carrying
    the baseline tag; the searched candidates keep the other tags."""
    out = _planned("tpu7x:2x2x1")
    tuned = out["dp2-usp2x2w-b6400x2048x1024"]
    assert tuned.baselines == ("maxdiffusion-data2-ulysses2-ring",)
    assert (tuned.block_q, tuned.block_kv, tuned.block_kv_compute) == (6400, 2048, 1024)
    assert "maxdiffusion-data2-ulysses2-ring" not in out["dp2-usp2x2w"].baselines
    assert out["ag8w-b512x512x512"].baselines == ("maxdiffusion-default",)
    assert out["uly8w"].baselines == ("wan-fsdp-ulysses",)


def test_the_ring_recipe_runs_maxdiffusions_blocks_too():
    """v6e-8, Wan 14B 720p 81f: MaxDiffusion's data2-ring recipe runs tokamax's ring kernel
    with its flash_block_sizes (the 512s), not the blocks the search gives the ring
    (512 / 18944 / 512): a candidate of its own, so the existing deployment is priced as
    it runs."""
    out = _planned("v6e:2x4")
    recipe = out["dp2-ring4w-b512x512x512"]
    assert recipe.kernel == "tokamax_ring"
    assert recipe.baselines == ("maxdiffusion-data2-ring",)
    assert "maxdiffusion-data2-ring" not in out["dp2-ring4w"].baselines
    assert (out["dp2-ring4w"].block_q, out["dp2-ring4w"].block_kv) == (512, 18944)


def test_a_recipe_whose_published_blocks_fail_is_shown_by_its_searched_twin():
    """TPU7x-8: MaxDiffusion's tuned v7x blocks need more VMEM than a core has and fail to
    compile. The recipe's row is then its sharding with the searched blocks, marked as a
    stand-in with the reason, and it can be the best existing deployment; a recipe that
    compiled keeps its own row."""
    from types import SimpleNamespace

    from aoizora.planning import baseline_pairs, plan_record
    from aoizora.planning.run_state import COMPILE, Run, Skip
    from aoizora.planning.settings import Progress, Settings
    from aoizora.plan_format import Choice

    out = _planned("tpu7x:2x2x1")
    tuned = "dp2-usp2x2w-b6400x2048x1024"
    base = {tag: c for c in out.values() for tag in c.baselines}
    run = Run(Settings(cache=None), Progress(), None, None, None, None,
              graphs={n: None for n in out if n != tuned},
              searched_of={n: n.split("-b")[0] for n in out if "-b" in n},
              skips=[Skip(tuned, COMPILE, "compile failed: scoped VMEM 66 MiB > 64 MiB")])
    fitting = [SimpleNamespace(candidate=c, fits=True) for c in out.values()]
    stand = baseline_pairs.stand_ins(run, fitting, base)
    assert {t: c.name for t, c in stand.items()} == {
        "maxdiffusion-data2-ulysses2-ring": "dp2-usp2x2w"}
    assert run.skip_reason(tuned) == "compile failed: scoped VMEM 66 MiB > 64 MiB"

    def pair(name, seconds):
        return SimpleNamespace(candidate=SimpleNamespace(name=name), simulated=seconds)

    stage2 = SimpleNamespace(choice=lambda p, label: Choice(
        p.candidate.name, [8], ["c"], {}, "jax-default", [], simulated_s=p.simulated,
        extra={"label": label}))
    pairs = {"maxdiffusion-data2-ulysses2-ring": pair("dp2-usp2x2w", 2.0),
             "maxdiffusion-default": pair("ag8w-b512x512x512", 3.0)}
    chosen = plan_record.baseline_choices(
        stage2, pairs, None, {"maxdiffusion-data2-ulysses2-ring": "compile failed: VMEM"}, {}, {})
    ring = chosen["maxdiffusion-data2-ulysses2-ring"]
    assert ring.extra["stand_in"] == {"published_blocks_failed": "compile failed: VMEM"}
    assert ring.label("maxdiffusion-data2-ulysses2-ring").endswith(
        "(searched blocks: the published ones fail to compile)")
    assert chosen["existing"].candidate == "dp2-usp2x2w"
    assert chosen["existing"].extra["label"] == "maxdiffusion-data2-ulysses2-ring"
    assert chosen["maxdiffusion-default"].label("maxdiffusion-default") == \
        "maxdiffusion-default"


def test_search_finds_maxdiffusions_v6e_blocks_and_says_what_bounds_tpu7x():
    """v6e-8, 720p 81f, Ulysses 4 (10 heads x 75,776 tokens a call): the per-step model picks
    MaxDiffusion's hand-tuned 9472 / 1024 / 512 itself (MXU-bound at v6e's fitted
    efficiency), so no separate recipe candidate is needed; the default 512s take
    10 x 148 x 148 = 219,040 grid steps against 5,920, (219,040 - 5,920) x 0.35 us = 74.6 ms
    more. On TPU7x, whose MXU per step is faster, the 512s are bound by that fixed cost
    itself, and the search leaves them for an MXU-bound triple (docs/results/kernel_blocks.md)."""
    out = _planned("v6e:2x4")
    c = out["dp2-uly4w"]
    assert (c.block_q, c.block_kv, c.block_kv_compute) == kernels.PUBLISHED_BLOCKS[
        ("v6e", 8, "maxdiffusion-data2-ulysses")]
    assert c.kernel_bound == "mxu" and "maxdiffusion-data2-ulysses" in c.baselines
    assert "dp2-uly4w-b9472x1024x512" not in out
    shape = kernels.attention_shapes(c, *_MODEL_720P)
    v6e = kernels.DeviceFigures.of_topology("v6e:2x4")
    default = kernels.price_blocks(shape, (512, 512, 512), v6e)
    tuned = kernels.price_blocks(shape, (9472, 1024, 512), v6e)
    assert default.steps == 219040 and tuned.steps == 10 * 8 * 74
    # Both MXU-bound with the same padded matmuls: the difference is the extra steps' cost.
    assert default.seconds - tuned.seconds == pytest.approx((219040 - 5920) * 0.35e-6, rel=0.01)
    seven = _planned("tpu7x:2x2x1")["dp2-uly4w"]
    assert seven.kernel_bound == "mxu"
    assert (seven.block_q, seven.block_kv, seven.block_kv_compute) != (512, 512, 512)
    tpu7x = kernels.DeviceFigures.of_topology("tpu7x:2x2x1")
    assert kernels.price_blocks(shape, (512, 512, 512), tpu7x).bound == "step-overhead"


def test_a_block_kv_clamped_to_its_length_keeps_a_compute_block_that_divides_it():
    # Wan 1.3B 480p 21f over a ring of 4: 2340 keys per shard, padded to 2432 = 19 x 128;
    # the kernel refuses block_kv_compute 512 there ("bkv=2432 must be a multiple of
    # bkv_compute=512"), which skipped every ring-4 sharding on v6e:2x4.
    assert kernels.clamp_blocks(9360, 2340, (512, 4096, 512)) == (512, 2432, 2432)
    assert kernels.clamp_blocks(9360, 2340, (512, 1024, 512)) == (512, 1024, 512)
    assert kernels.clamp_blocks(9360, 2340, (512, 4096, 4096)) == (512, 2432, 2432)


# libtpu's verdicts on the residual-returning kernels the grids compile (the ring steps:
# tokamax's ring kernel, jax's splash kernel with its logsumexp), one program per point
# (bench/residual_vmem.py; docs/planner.md, "Residual-returning kernels").
RESIDUAL_TABLE = pathlib.Path(__file__).parents[1] / "data" / "residual_vmem.json"


def _residual_points():
    return json.loads(RESIDUAL_TABLE.read_text())["points"]


def _residual_model(p) -> int:
    return kernels.residual_vmem_bytes(p["kernel"], p["block_q"], p["block_kv"],
                                       p["block_kv_compute"], p["head_dim"], batch=p["batch"],
                                       generation=p["generation"])


def test_the_residual_model_never_clears_a_kernel_libtpu_refuses():
    """Every point of the table the planner would predict to compile (the bound below the
    limit less the margin) libtpu compiles, as a kernel and, where one was compiled, as a
    whole program; and where libtpu reports a total, the bound is not below it."""
    most = kernels.scoped_vmem_bytes() * (1 - kernels.RESIDUAL_VMEM_MARGIN)
    points = _residual_points()
    assert len(points) >= 20 and any(not p["fits"] for p in points)
    for p in points:
        if _residual_model(p) <= most:
            assert p["fits"] and p.get("program_fits", True), p
        for total in (p.get("libtpu_mib"), p.get("program_libtpu_mib")):
            assert not total or _residual_model(p) / 2**20 >= total, p


def test_the_residual_model_counts_the_batch_libtpu_double_buffers():
    """TPU7x, jax's splash with residuals at 8192 x 1024 x 512: 60.41 MiB vmapped over one
    sample, 73.48 over two (libtpu's reports): its m, l and accumulator are outputs of a
    constant window, double-buffered once the batch is a grid axis (12 MiB here); tokamax
    keeps them in scratch and does not grow."""
    one = kernels.residual_vmem_bytes("splash", 8192, 1024, 512, 128, batch=1,
                                      generation="tpu7x")
    two = kernels.residual_vmem_bytes("splash", 8192, 1024, 512, 128, batch=2,
                                      generation="tpu7x")
    assert two - one == 8192 * (2 * 128 * 4 + 4 * 128) == 12 * 2**20
    assert kernels.residual_vmem_bytes("tokamax_ring", 8192, 1024, 512, 128, batch=2) == \
        kernels.residual_vmem_bytes("tokamax_ring", 8192, 1024, 512, 128, batch=1)


def _prediction(candidate, topology="v5e:2x4"):
    from types import SimpleNamespace

    from aoizora import _core
    from aoizora.planning import compile_policy
    from aoizora.planning.run_state import Run
    from aoizora.planning.settings import Progress, Settings

    cfg, w = get_model("wan2.1-t2v-1.3b"), get_workload("480p", 21)
    run = Run(Settings(cache=None), Progress(), cfg, w,
                       SimpleNamespace(topology=_core.make_topology(topology)),
                       SimpleNamespace(platform="tpu"), hbm_of={candidate.name: 2**30})
    return compile_policy.backend_prediction(run, candidate)


def test_a_residual_sharding_far_below_the_limit_is_predicted_and_one_near_it_compiled():
    """MaxDiffusion's ring recipe (tokamax, 512s: 4.5 MiB by the bound) is predicted to
    compile; tokamax's ring at 4352 x 2176 x 2176 (the search's blocks for Wan 1.3B's ring
    of 2 at 480p 41f on v5e: 63.9 MiB by the bound, within the margin of 64) goes to the
    full compile, as does one over the limit."""
    cfg, w = get_model("wan2.1-t2v-1.3b"), get_workload("480p", 21)
    ring = {c.name: c for c in S.enumerate_candidates(cfg, w, 8)}["dp2-ring4w"]

    def at(blocks):
        return dataclasses.replace(ring, kernel="tokamax_ring", block_q=blocks[0],
                                   block_kv=blocks[1], block_kv_compute=blocks[2])

    why = _prediction(at((512, 512, 512)))
    assert why is not None and "residuals returned: predicted below 57.6" in why
    near, most = kernels.backend_vmem(at((4352, 2176, 2176)), 128, 2, "v5e")
    assert most < near < kernels.scoped_vmem_bytes()
    assert _prediction(at((4352, 2176, 2176))) is None
    assert _prediction(at((4736, 2432, 2432))) is None       # libtpu: 69.10 MiB, refused
