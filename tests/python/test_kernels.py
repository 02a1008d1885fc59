"""The attention kernel of a candidate (kernels.py): splash on TPU targets in every context
form, blockwise on CPU; the block sizes the plan records; the compiled programs."""

import pytest

from aoizora import compiler as C
from aoizora import kernels
from aoizora import strategies as S
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


def test_legal_blocks_are_multiples_of_128_dividing_the_length():
    assert kernels.legal_blocks(1536) == [128, 256, 384, 512, 768, 1536]
    assert kernels.default_block(1536) == 512
    assert kernels.default_block(384) == 384
    assert kernels.default_block(640) == 128   # 640 = 5 x 128: no legal block 256..512
    with pytest.raises(kernels.KernelUnsupported, match="multiple of 128"):
        kernels.default_block(200)


def test_14b_720p_shapes_and_blocks_per_form():
    """Wan 2.1 14B, 720p 81 frames (75,600 tokens) on 8 devices: what one kernel call sees."""
    cfg, w = get_model("wan2.1-t2v-14b", blocks=2), get_workload("720p", 81)
    by = {c.name: c for c in S.enumerate_candidates(cfg, w, 8)}
    s = cfg.padded_len(w, 4, kernel="splash")
    assert s == 75776 and s % (4 * 128) == 0      # shards of 18,944 = 148 x 128
    cases = {"dp2-ag4w": (40, s // 4, s, 1), "dp2-uly4": (10, s, s, 1),
             "dp2-ring4w": (40, s // 4, s // 4, 4), "dp2-usp2x2": (20, s // 2, s // 2, 2)}
    for name, (h, sq, skv, calls) in cases.items():
        c = kernels.with_kernel(by[name], cfg, w, "tpu")
        shape = kernels.attention_shapes(c, cfg, w)
        assert (shape.heads, shape.q_len, shape.kv_len, shape.calls) == (h, sq, skv, calls)
        assert c.kernel == "splash" and shape.head_dim == 128
        assert shape.q_len % c.block_q == 0 and shape.kv_len % c.block_kv == 0
        assert c.block_q <= 512 and c.block_kv <= 512 and c.block_q % 128 == 0
    cpu = kernels.with_kernel(by["dp2-ag4w"], cfg, w, "cpu")
    assert (cpu.kernel, cpu.block_q) == ("blockwise", 0)
    assert cpu.key() != kernels.with_kernel(by["dp2-ag4w"], cfg, w, "tpu").key()  # cache


def test_candidate_with_kernel_round_trips_through_its_dict(tiny):
    cfg, w, by = tiny
    c = kernels.with_kernel(by["dp2-ring4"], cfg, w, "tpu")
    assert S.Candidate.from_dict(c.to_dict()) == c
    assert kernels.describe(c) == {"kernel": "splash", "block_sizes": {
        "block_q": c.block_q, "block_kv": c.block_kv, "block_kv_compute": c.block_kv_compute}}


# Every context form (and none) compiled for the TPU holds the kernel, once per call.
FORMS = {"tp8": 1, "dp2-ag4": 1, "dp2-uly4": 1, "dp2-ring4": 4, "dp2-usp2x2": 2}


@pytest.mark.parametrize("name", sorted(FORMS))
def test_tpu_compile_holds_the_pallas_kernel_in_every_form(tiny, name):
    cfg, w, by = tiny
    c = kernels.with_kernel(by[name], cfg, w, "tpu")
    hlo = C.compile(c, cfg, w, "v5e:2x4")
    assert hlo.count(MOSAIC) == FORMS[name]
    assert f'\\"block_q\\": {c.block_q}, \\"block_kv\\": {c.block_kv}' in hlo  # its blocks
    if name in ("dp2-ring4", "dp2-usp2x2"):
        assert "splash_mha_fwd_segmented_residuals" in hlo  # logsumexp per ring step


def test_cpu_compile_stays_blockwise(tiny):
    cfg, w, by = tiny
    c = kernels.with_kernel(by["dp2-ring4"], cfg, w, "cpu")
    hlo = C.compile(c, cfg, w, "cpu:8")
    assert "tpu_custom_call" not in hlo and "collective-permute" in hlo
    with pytest.raises(C.CompileError, match="lowering failed"):  # Mosaic has no CPU lowering
        C.lower(kernels.with_kernel(by["dp2-ring4"], cfg, w, "tpu"), cfg, w, "cpu:8")
