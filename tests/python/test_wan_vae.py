"""Wan's VAE decoders and encoders in JAX against diffusers' AutoencoderKLWan: random
weights copied from a torch model built from a config (nothing downloaded), float32.
diffusers decodes latent frame by frame and encodes 1 frame, then 4 at a time, with its
feature cache; ours runs the whole clip with causal padding, so equality at 1 and 9 video
frames is also the check that the two are the same function. Wan 2.1 (stride (4, 8, 8)) and
Wan 2.2 TI2V-5B (stride (4, 16, 16), residual up and down blocks, 2 x 2 patch); the real
configs' parameter counts against diffusers'."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from diffusers import AutoencoderKLWan

from aoizora.models import wan_vae

RTOL, ATOL = 1e-4, 5e-5  # the video lies in [-1, 1]
decode = jax.jit(wan_vae.decode, static_argnums=0)


def diffusers_config(cfg: wan_vae.WanVAEConfig) -> dict:
    return dict(base_dim=cfg.base_dim, decoder_base_dim=cfg.decoder_base_dim, z_dim=cfg.z_dim,
                dim_mult=list(cfg.dim_mult), num_res_blocks=cfg.num_res_blocks,
                temperal_downsample=list(cfg.temporal_downsample), is_residual=cfg.is_residual,
                in_channels=cfg.out_channels, out_channels=cfg.out_channels,
                patch_size=cfg.patch_size, scale_factor_spatial=cfg.stride[1],
                latents_mean=list(cfg.latents_mean), latents_std=list(cfg.latents_std))


def diffusers_vae(cfg: wan_vae.WanVAEConfig, seed: int = 0) -> AutoencoderKLWan:
    """diffusers' model with its own random init, the norms' gammas moved away from 1 (so a
    swapped or skipped norm shows)."""
    torch.manual_seed(seed)
    model = AutoencoderKLWan(**diffusers_config(cfg)).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("gamma"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
    return model


def params_from_diffusers(cfg: wan_vae.WanVAEConfig, model: AutoencoderKLWan, encoder=False):
    """Our decoder's (or encoder's) parameter tree filled from the state dict: module paths as
    keys, list indices for ModuleLists, kernels [out,in,*k] -> [*k,in,out]. Raises if a
    tensor has no place or a parameter is left unfilled."""
    if encoder:
        prefixes = ("encoder.", "quant_conv.")
        tree = wan_vae.abstract_encoder_params(cfg)
    else:
        prefixes, tree = ("decoder.", "post_quant_conv."), cfg.abstract_params()
    params = jax.tree.map(lambda a: a, tree)
    filled = 0
    for key, value in model.state_dict().items():
        if not key.startswith(prefixes):
            continue
        path = key.replace("resample.1.", "resample.").split(".")
        node = params
        for k in path[:-1]:
            node = node[int(k)] if isinstance(node, list) else node[k]
        name = {"weight": "w", "bias": "b"}.get(path[-1], path[-1])
        v = value.detach().numpy()
        if name == "w":
            v = v.transpose(*range(2, v.ndim), 1, 0)
        assert v.size == node[name].size, key
        node[name] = jnp.asarray(v.reshape(node[name].shape))
        filled += 1
    assert filled == len(jax.tree.leaves(params))
    assert not any(isinstance(a, jax.ShapeDtypeStruct) for a in jax.tree.leaves(params))
    return params


def reference_decode(cfg, model, latents):
    """diffusers' WanPipeline: latents / (1 / std) + mean, then vae.decode (frame by frame)."""
    mean = torch.tensor(cfg.latents_mean).view(1, -1, 1, 1, 1)
    inv_std = 1.0 / torch.tensor(cfg.latents_std).view(1, -1, 1, 1, 1)
    with torch.no_grad():
        return model.decode(torch.from_numpy(latents) / inv_std + mean).sample.numpy()


@pytest.fixture(scope="module", params=["wan2.1", "wan2.2"])
def vae(request):
    cfg = {"wan2.1": wan_vae.WAN21_VAE_TINY, "wan2.2": wan_vae.WAN22_VAE_TINY}[request.param]
    model = diffusers_vae(cfg)
    return cfg, model, params_from_diffusers(cfg, model)


@pytest.mark.parametrize("batch,frames", [(1, 1), (2, 3)])
def test_decoder_equals_diffusers_frame_by_frame(vae, batch, frames):
    cfg, model, params = vae
    h, w = 3, 5  # not square: a swapped height and width shows
    latents = np.random.default_rng(frames).standard_normal(
        (batch, cfg.z_dim, frames, h, w)).astype(np.float32)
    want = reference_decode(cfg, model, latents)
    got = np.asarray(decode(cfg, params, jnp.asarray(latents)))
    st, sh, sw = cfg.stride
    assert want.shape == (batch, 3, 1 + st * (frames - 1), sh * h, sw * w)
    assert got.shape == want.shape
    assert (np.abs(want) >= 1).mean() < 0.01  # the clamp leaves the comparison its values
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("version", ["wan2.1", "wan2.2"])
@pytest.mark.parametrize("frames", [1, 9])
def test_encoder_equals_diffusers_chunked_encode(version, frames):
    """Image to video conditioning encodes the first frame (TI2V-5B, Wan 2.2's VAE) or it
    and zero frames (Wan 2.1 I2V and Wan 2.2 I2V A14B: 81 frames, Wan 2.1's VAE); diffusers
    encodes 1 frame, then 4 at a time, with its cache. Frame 0 and the rest differ (random)."""
    cfg = {"wan2.1": wan_vae.WAN21_VAE_TINY, "wan2.2": wan_vae.WAN22_VAE_TINY}[version]
    model = diffusers_vae(cfg)
    params = params_from_diffusers(cfg, model, encoder=True)
    s = cfg.stride[1]
    video = np.random.default_rng(frames).uniform(-1, 1, (1, 3, frames, 3 * s, 5 * s))
    video = video.astype(np.float32)
    mean = torch.tensor(cfg.latents_mean).view(1, -1, 1, 1, 1)
    inv_std = 1.0 / torch.tensor(cfg.latents_std).view(1, -1, 1, 1, 1)
    with torch.no_grad():  # WanImageToVideoPipeline: (mode - mean) * (1 / std)
        mu = model.encode(torch.from_numpy(video)).latent_dist.mode()
        want = ((mu - mean) * inv_std).numpy()
    got = np.asarray(jax.jit(wan_vae.encode, static_argnums=0)(cfg, params, jnp.asarray(video)))
    assert want.shape == (1, cfg.z_dim, 1 + (frames - 1) // 4, 3, 5) == got.shape
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)


def test_real_configs_have_diffusers_shapes_and_parameter_counts():
    from diffusers.models.autoencoders.autoencoder_kl_wan import WanCausalConv3d

    expect = {"wan2.1-vae": ((4, 8, 8), (81, 480, 832), (21, 60, 104)),
              "wan2.2-vae": ((4, 16, 16), (121, 704, 1280), (31, 44, 80))}
    for cfg in (wan_vae.WAN21_VAE, wan_vae.WAN22_VAE):
        with torch.device("meta"):
            model = AutoencoderKLWan(**diffusers_config(cfg))
        decoder = list(model.decoder.parameters()) + list(model.post_quant_conv.parameters())
        assert cfg.param_count() == sum(p.numel() for p in decoder)
        stride, video, latent = expect[cfg.name]
        assert cfg.stride == stride and cfg.video_shape(latent) == video
        assert isinstance(model.decoder.conv_in, WanCausalConv3d)
    assert wan_vae.WAN21_VAE.param_count() == 73_295_603  # decoder + post_quant_conv
    with torch.device("meta"):
        model = AutoencoderKLWan(**diffusers_config(wan_vae.WAN21_VAE))
    for cfg in (wan_vae.WAN21_VAE, wan_vae.WAN22_VAE):
        with torch.device("meta"):
            model = AutoencoderKLWan(**diffusers_config(cfg))
        encoder = wan_vae.abstract_encoder_params(cfg)
        assert sum(a.size for a in jax.tree.leaves(encoder)) == sum(
            p.numel() for p in list(model.encoder.parameters())
            + list(model.quant_conv.parameters()))
