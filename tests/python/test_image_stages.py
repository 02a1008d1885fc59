"""aoizora.pipeline's image to video stages: which presets need the image encoder (CLIP) and
the VAE encode of which clip, the shapes they take and give, and one sharding of each on the
tiny configs lowered and compiled for 4 CPU devices (one session-scoped batch, in process)."""

import jax
import pytest

from aoizora.models import clip_image, get_model, umt5, wan_vae
from aoizora.models.base import LocalLayout
from aoizora.models.video import TINY_VIDEO
from aoizora.pipeline import stage_specs


def _pick(options, name):
    (option,) = [o for o in options if o.name == name]
    return option


def test_each_preset_conditions_on_what_diffusers_pipeline_encodes():
    stages = {name: [(s, c.name, getattr(c, "image_only", None))
                     for s, c in stage_specs.image_stages_for(get_model(name))]
              for name in ("wan2.1-i2v-14b", "wan2.2-i2v-a14b", "wan2.2-ti2v-5b",
                           "wan2.1-t2v-14b", "wan2.2-t2v-a14b", "wan-tiny")}
    assert stages == {
        # CLIP's tokens and the image + zero frames through Wan 2.1's VAE
        "wan2.1-i2v-14b": [("image_encoder", "clip-vit-h-14", None),
                           ("vae_encode", "wan2.1-vae", False)],
        # no image encoder (its transformers have no image_dim); the same clip
        "wan2.2-i2v-a14b": [("vae_encode", "wan2.1-vae", False)],
        # expand_timesteps: the image alone through Wan 2.2's VAE
        "wan2.2-ti2v-5b": [("vae_encode", "wan2.2-vae", True)],
        "wan2.1-t2v-14b": [], "wan2.2-t2v-a14b": [], "wan-tiny": []}


@pytest.mark.parametrize("model,video,shapes", [
    ("wan2.1-i2v-14b", ("480p", 81), ((1, 3, 81, 480, 832), (1, 16, 21, 60, 104))),
    ("wan2.2-i2v-a14b", ("720p", 81), ((1, 3, 81, 720, 1280), (1, 16, 21, 90, 160))),
    ("wan2.2-ti2v-5b", ("720p", 121), ((1, 3, 1, 704, 1280), (1, 48, 1, 44, 80)))])
def test_the_vae_encode_takes_the_presets_clip_and_gives_its_latent_grid(model, video, shapes):
    cfg = get_model(model)
    workload = cfg.video(*video)
    (_, clip), = [s for s in stage_specs.image_stages_for(cfg) if s[0] == "vae_encode"]
    spec = stage_specs.VaeEncodeStage(clip, ())
    (inp,) = spec.abstract_inputs(workload)
    out = jax.eval_shape(lambda p, x: spec.apply(p, x, workload=workload, layout=LocalLayout()),
                         spec.abstract_params(), inp)
    assert (inp.shape, out.shape) == shapes
    assert spec.output_shape(workload) == out.shape
    if not clip.image_only:  # the image's latents sit beside the noise: the same grid
        assert out.shape[2:] == workload.latent_shape()


def test_the_image_encoder_gives_wans_257_tokens_of_one_image():
    spec = stage_specs.ImageEncoderStage(stage_specs.clip_for(get_model("wan2.1-i2v-14b")), ())
    (inp,) = spec.abstract_inputs(None)
    out = jax.eval_shape(lambda p, x: spec.apply(p, x, workload=None, layout=LocalLayout()),
                         spec.abstract_params(), inp)
    assert inp.shape == (1, 3, 224, 224)
    assert out.shape == spec.output_shape(None) == (1, 257, 1280)


def test_the_tensor_degree_divides_vit_h14s_16_heads():
    names = {n: [o.name for o in stage_specs.image_encoder_options(n)] for n in (1, 8, 32)}
    assert names == {1: ["ie-replicated"],
                     8: ["ie-replicated", "ie-tensor8", "ie-fsdp8"],
                     32: ["ie-replicated", "ie-tensor16", "ie-fsdp32"]}
    tensor16 = _pick(stage_specs.image_encoder_options(32), "ie-tensor16")
    assert tensor16.candidate.n_chips == 32 and tensor16.candidate.tensor == 16


def test_spec_builds_each_stage_by_its_name():
    clip = stage_specs.ConditioningClip(wan_vae.WAN21_VAE_TINY)
    for option, cfg, cls in (
            (stage_specs.image_encoder_options(4)[0], clip_image.CLIP_TINY,
             stage_specs.ImageEncoderStage),
            (stage_specs.vae_encode_options(4)[0], clip, stage_specs.VaeEncodeStage),
            (stage_specs.vae_options(4)[0], wan_vae.WAN21_VAE_TINY, stage_specs.VaeDecodeStage),
            (stage_specs.text_encoder_options(4)[0], umt5.UMT5_TINY,
             stage_specs.TextEncoderStage)):
        spec = option.spec(cfg)
        assert type(spec) is cls and spec.stage == option.stage


# ---- compiled for CPU devices ----------------------------------------------------------------

@pytest.fixture(scope="session")
def compiled():
    """One image encoder sharding (heads over 4) and one VAE encode sharding (width over 4) of
    the tiny configs, compiled for cpu:4 in this process (no cache): name -> Outcome."""
    from aoizora.compile.batch import run_jobs
    from aoizora.compile.jobs import Job

    ie = _pick(stage_specs.image_encoder_options(4, clip_image.CLIP_TINY), "ie-tensor4")
    enc = _pick(stage_specs.vae_encode_options(4), "vae-encode-width4")
    clip = stage_specs.ConditioningClip(wan_vae.WAN21_VAE_TINY)  # 9 frames, 48 x 64
    jobs = [Job("compile", ie.candidate, ie.spec(clip_image.CLIP_TINY), None, "cpu:4"),
            Job("compile", enc.candidate, enc.spec(clip), TINY_VIDEO, "cpu:4")]
    return dict(zip(("image_encoder", "vae_encode"),
                    run_jobs(jobs, workers=0, cache=None)))


def test_the_image_encoder_split_over_heads_compiles_and_reduces_its_projections(compiled):
    out = compiled["image_encoder"]
    assert out.ok, out.error
    assert "num_partitions=4" in out.text
    assert "all-reduce" in out.text  # the row-parallel out-projection and fc2 (Megatron)


def test_the_width_split_vae_encode_compiles_and_exchanges_halos(compiled):
    out = compiled["vae_encode"]
    assert out.ok, out.error
    assert "num_partitions=4" in out.text
    assert "collective-permute" in out.text  # the 3x3 convolutions' halos
