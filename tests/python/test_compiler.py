"""Lowering (StableHLO) and deviceless TPU compilation of the two-block 14B proxy at 720p 81
frames on v5e:2x4, one candidate per strategy kind; device order; the cache; batches that
survive failures; the generic FunctionSpec path.

The four TPU compiles are analysis compiles (XLA's TPU HLO passes, deviceless: what the
planner runs for every candidate), seconds each; the TPU backend's full compile of the 14B
proxy is test_planner's (the plan's sharding) and test_backend_checks' (5.5 minutes here for
these four, quiet, where the analysis takes 8 s). They go through the on-disk cache
($AOIZORA_CACHE or ~/.cache/aoizora)."""

import re

import jax
import jax.numpy as jnp
import pytest

from aoizora.compile import compiler as C
from aoizora.planning import kernels
from aoizora.planning import strategies as S
from aoizora.compile.batch import run_jobs
from aoizora.compile.cache import Cache, cache_key
from aoizora.compile.jobs import Job, job_key
from aoizora.models import base, get_model, get_workload
from aoizora.hardware.probes import count_collectives

TARGET = "v5e:2x4"
# data + allgather_kv, fsdp + ring + tensor, data + ulysses, ulysses x ring: every kind.
PICK = {"dp2-ag4w": ("all_gather", "all-gather"),
        "fsdp2-ring2-tp2": ("collective_permute", "collective-permute"),
        "dp2-uly4": ("all_to_all", "all-to-all"),
        "dp2-usp2x2": ("all_to_all", "collective-permute")}


@pytest.fixture(scope="module")
def proxy():
    cfg, w = get_model("wan2.1-t2v-14b", blocks=2), get_workload("720p", 81)
    by = {c.name: c for c in S.enumerate_candidates(cfg, w, 8)}
    return cfg, w, by


def test_picked_candidates_cover_every_kind(proxy):
    kinds = {k for n in PICK for k in proxy[2][n].kinds}
    assert kinds == {"data", "fsdp", "tensor", "context:allgather_kv", "context:ring",
                     "context:ulysses", "context:ulysses_ring"}


@pytest.mark.parametrize("name", sorted(PICK))
def test_lower_14b_proxy_to_stablehlo(proxy, name):
    cfg, w, by = proxy
    c = by[name]
    text = C.lower(c, cfg, w, TARGET)
    mesh = ", ".join(f'"{a}"={d}' for a, d in zip(c.axis_names, c.mesh_shape))
    assert f"sdy.mesh @mesh = <[{mesh}]>" in text
    assert "sdy.manual_computation" in text           # the shard_map attention
    assert PICK[name][0] in text                      # the form's collective, explicit
    assert "stablehlo.while" in text                  # blocks under lax.scan
    # the latent input: [2,16,21,90,160] bf16 with the batch on the CFG axes
    assert "tensor<2x16x21x90x160xbf16>" in text
    assert "tensor<5120x13824xbf16>" not in text or "2x5120x13824" in text  # stacked blocks


@pytest.fixture(scope="module")
def compiled(proxy):
    cfg, w, by = proxy
    jobs = [Job("analyze", by[n], cfg, w, TARGET) for n in sorted(PICK)]
    outs = run_jobs(jobs, workers=2, cache=Cache())
    return {n: o for n, o in zip(sorted(PICK), outs)}


@pytest.mark.parametrize("name", sorted(PICK))
def test_tpu_deviceless_compile_of_14b_proxy(compiled, name):
    out = compiled[name]
    assert out.ok, out.error
    hlo = out.text
    assert "num_partitions=8" in hlo
    assert re.search(r"-start\(", hlo)  # TPU: async collectives
    assert count_collectives(hlo).get(PICK[name][1], 0) >= 1


def test_device_order_is_the_placement():
    devs = C.resolve_devices(TARGET)
    order = [(x, y, 0) for y in range(4) for x in range(2)][::-1]
    placed = C.resolve_devices(TARGET, order)
    assert [tuple(d.coords) for d in placed] == order
    assert sorted(d.id for d in placed) == sorted(d.id for d in devs)
    with pytest.raises(C.CompileError, match="no device at"):
        C.resolve_devices(TARGET, [(5, 5, 0)] * 8)


def test_cache_hit_failure_values_and_keys(tmp_path):
    cfg, w = get_model("wan-tiny"), get_workload("tiny")
    good = next(c for c in S.enumerate_candidates(cfg, w, 4) if c.name == "dp2-ring2")
    # 8 heads do not split 3 ways for the Ulysses all-to-all (not in the legal space)
    bad = S.Candidate("bad-uly3", context=3, form="ulysses", ulysses=3)
    cache = Cache(str(tmp_path))
    seen = []
    jobs = [Job("lower", good, cfg, w, "cpu:4"), Job("lower", bad, cfg, w, "cpu:3")]
    first = run_jobs(jobs, workers=0, cache=cache, progress=lambda d, n, o: seen.append(d))
    assert seen == [1, 2]
    assert first[0].ok and not first[0].cached and "collective_permute" in first[0].text
    assert not first[1].ok and first[1].error.startswith("bad-uly3:")
    assert "\n" not in first[1].error
    again = run_jobs(jobs[:1], workers=0, cache=cache)
    assert again[0].cached and again[0].text == first[0].text and again[0].key == first[0].key
    assert not any(p.name.startswith(".tmp-") for p in tmp_path.rglob("*"))
    # the key changes with what changes the program
    k = lambda j: cache_key(job_key(j))
    assert k(jobs[0]) != k(Job("lower", good, cfg.replace(q_block=4), w, "cpu:4"))
    assert k(jobs[0]) != k(Job("compile", good, cfg, w, "cpu:4"))
    rev = ((3,), (2,), (1,), (0,))
    assert k(Job("compile", good, cfg, w, "cpu:4")) != k(Job("compile", good, cfg, w, "cpu:4",
                                                                order=rev))
    # lowering does not depend on the device order: same key, and truly the same text
    assert k(jobs[0]) == k(Job("lower", good, cfg, w, "cpu:4", order=rev))
    assert C.lower(good, cfg, w, "cpu:4", order=rev) == first[0].text


def test_generic_function_spec_lowers_and_compiles_on_cpu():
    def mlp(x, w1, w2):
        return jnp.dot(jax.nn.gelu(jnp.dot(x, w1)), w2)

    f32 = jnp.float32
    spec = base.FunctionSpec(
        "mlp", mlp,
        (jax.ShapeDtypeStruct((8, 64, 32), f32), jax.ShapeDtypeStruct((32, 128), f32),
         jax.ShapeDtypeStruct((128, 32), f32)),
        (("batch", "length", None), ("fsdp", "mlp"), ("mlp", "fsdp")),
        ("batch", "length", None))
    cands = {c.name: c for c in S.function_candidates(spec, 4)}
    assert "tp4" in cands and "dp4" in cands and "ag4" in cands and "dp2-tp2" in cands
    hlo = C.compile(cands["tp4"], spec, None, "cpu:4")
    assert "num_partitions=4" in hlo and count_collectives(hlo).get("all-reduce", 0) >= 1


def test_splash_kernel_lowers_for_tpu_as_an_opaque_custom_call(proxy):
    cfg, w, by = proxy
    splash = kernels.with_kernel(by["dp2-ag4w"], cfg, w, "tpu", "v5e:2x4")
    text = C.lower(splash, cfg, w, TARGET)
    assert 'stablehlo.custom_call @tpu_custom_call' in text
    assert cfg.padded_len(w, 4, kernel="splash") % (4 * 128) == 0  # shards tiled by 128
    with pytest.raises(C.CompileError, match="lowering failed"):
        C.lower(splash, cfg, w, "cpu:8")  # Mosaic kernels do not lower for CPU
