"""The CLIP ViT image encoder in JAX against transformers' CLIPVisionModel: random weights
copied from a torch model built from a config (nothing downloaded), float32, eager
attention. Wan's context is hidden_states[-2] with no post-LN; the activation is the
config's (ViT-H/14: exact GELU, not CLIP's default quick_gelu); the real config's
parameter count equals transformers'."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from transformers import CLIPVisionConfig as HFConfig
from transformers import CLIPVisionModel

from aoizora.models import clip_image
from aoizora.models.layers import layer_norm

RTOL, ATOL = 1e-4, 1e-5
hidden_state = jax.jit(clip_image.hidden_state, static_argnums=(0, 3))
image_context = jax.jit(clip_image.image_context, static_argnums=0)


def hf_config(cfg: clip_image.CLIPVisionConfig) -> HFConfig:
    return HFConfig(hidden_size=cfg.width, intermediate_size=cfg.mlp,
                    num_hidden_layers=cfg.layers, num_attention_heads=cfg.heads,
                    image_size=cfg.image_size, patch_size=cfg.patch, hidden_act=cfg.act,
                    layer_norm_eps=cfg.eps, attn_implementation="eager")


def hf_model(cfg: clip_image.CLIPVisionConfig, seed: int = 0) -> CLIPVisionModel:
    """A float32 torch model with every weight random and O(1) in effect: norms and biases
    away from 1 and 0, position embeddings as large as the patches, so a swapped, skipped or
    misordered tensor shows."""
    torch.manual_seed(seed)
    model = CLIPVisionModel(hf_config(cfg)).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith("weight"):
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.normal_(0.0, 0.3)
            elif "embedding" in name and p.ndim <= 2:
                p.normal_(0.0, 1.0)
            else:
                p.normal_(0.0, math.prod(p.shape[1:]) ** -0.5)
    return model


def params_from_hf(cfg: clip_image.CLIPVisionConfig, model: CLIPVisionModel):
    """The JAX parameter tree from the torch state dict; raises if a tensor is left over."""
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    used = set()

    def take(key, transpose=False):
        used.add(key)
        return sd[key].T if transpose else sd[key]

    def affine(prefix, transpose=False):
        return {"w": take(prefix + ".weight", transpose), "b": take(prefix + ".bias")}

    def layer(i):
        a = f"encoder.layers.{i}."
        return {"norm1": affine(a + "layer_norm1"), "norm2": affine(a + "layer_norm2"),
                **{n: affine(a + f"self_attn.{n}_proj", True) for n in "qkv"},
                "o": affine(a + "self_attn.out_proj", True),
                "fc1": affine(a + "mlp.fc1", True), "fc2": affine(a + "mlp.fc2", True)}

    layers = [layer(i) for i in range(cfg.layers)]
    params = {"patch_embedding": take("embeddings.patch_embedding.weight").transpose(2, 3, 1, 0),
              "class_embedding": take("embeddings.class_embedding"),
              "position_embedding": take("embeddings.position_embedding.weight"),
              "pre_norm": affine("pre_layrnorm"),
              "layers": jax.tree.map(lambda *xs: np.stack(xs), *layers),
              "post_norm": affine("post_layernorm")}
    assert set(sd) == used, f"tensors not copied: {sorted(set(sd) - used)}"
    return jax.tree.map(jnp.asarray, params)


def images(cfg, batch=2, seed=1):
    s = cfg.image_size
    return np.random.default_rng(seed).standard_normal((batch, 3, s, s)).astype(np.float32)


@pytest.fixture(scope="module", params=["gelu", "quick_gelu"])
def tiny(request):
    """(config, torch model, its weights as JAX parameters, torch outputs), once per
    activation."""
    cfg = clip_image.CLIP_TINY.replace(act=request.param)
    model = hf_model(cfg)
    with torch.no_grad():
        out = model(pixel_values=torch.from_numpy(images(cfg)), output_hidden_states=True)
    return cfg, model, params_from_hf(cfg, model), out


def test_wans_image_context_is_transformers_penultimate_hidden_state(tiny):
    cfg, _, params, out = tiny
    want = out.hidden_states[-2].numpy()
    got = np.asarray(image_context(cfg, params, jnp.asarray(images(cfg))))
    assert got.shape == (2, cfg.tokens, cfg.width) == want.shape
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    # the last layer's output is far from it: the index is tested, not the tolerance
    assert np.abs(out.hidden_states[-1].numpy() - want).max() > 0.1


@pytest.mark.parametrize("index", [0, 1, -1])
def test_every_hidden_state_equals_transformers(tiny, index):
    """0: the embeddings after the pre-LN (no layer run); -1: last_hidden_state."""
    cfg, _, params, out = tiny
    got = np.asarray(hidden_state(cfg, params, jnp.asarray(images(cfg)), index))
    np.testing.assert_allclose(got, out.hidden_states[index].numpy(), rtol=RTOL, atol=ATOL)


def test_the_post_layernorm_is_the_pooled_output_only(tiny):
    """Our post_norm is transformers' post_layernorm (the pooled class token), and Wan's
    context is not normed by it."""
    cfg, _, params, out = tiny
    last = hidden_state(cfg, params, jnp.asarray(images(cfg)), -1)
    n = params["post_norm"]
    pooled = np.asarray(layer_norm(last[:, 0], cfg.eps, n["w"], n["b"]))
    np.testing.assert_allclose(pooled, out.pooler_output.numpy(), rtol=RTOL, atol=ATOL)
    ctx = image_context(cfg, params, jnp.asarray(images(cfg)))
    normed = np.asarray(layer_norm(ctx, cfg.eps, n["w"], n["b"]))
    assert np.abs(normed - out.hidden_states[-2].numpy()).max() > 0.1


def test_gelu_and_quick_gelu_give_different_contexts(tiny):
    """The activation matters beyond the tolerance: the other one's context is far off."""
    cfg, _, params, out = tiny
    other = cfg.replace(act="quick_gelu" if cfg.act == "gelu" else "gelu")
    got = np.asarray(image_context(other, params, jnp.asarray(images(cfg))))
    assert np.abs(got - out.hidden_states[-2].numpy()).max() > 1e-2


def test_hidden_state_index_out_of_range_is_refused():
    cfg = clip_image.CLIP_TINY
    assert clip_image.layers_run(cfg, -2) == cfg.layers - 1
    assert clip_image.layers_run(cfg, -cfg.layers - 1) == 0
    with pytest.raises(IndexError, match="hidden state 4 of a 3-layer encoder"):
        clip_image.layers_run(cfg, 4)


def test_vit_h14_has_wans_shapes_and_transformers_parameter_count():
    cfg = clip_image.CLIP_VIT_H14
    assert (cfg.width, cfg.layers, cfg.heads, cfg.mlp, cfg.image_size, cfg.patch, cfg.act,
            cfg.eps, cfg.hidden_index) == (1280, 32, 16, 5120, 224, 14, "gelu", 1e-5, -2)
    with torch.device("meta"):
        want = sum(p.numel() for p in CLIPVisionModel(hf_config(cfg)).parameters())
    n = cfg.param_count()  # abstract: nothing allocated
    assert n == want
    d, f = 1280, 5120
    layer = 4 * (d * d + d) + (d * f + f) + (f * d + d) + 4 * d
    assert n == 3 * 14 * 14 * d + d + 257 * d + 4 * d + 32 * layer  # 630,766,080
    ctx = jax.eval_shape(lambda p, x: clip_image.image_context(cfg, p, x),
                         cfg.abstract_params(), *cfg.abstract_inputs())
    assert ctx.shape == (1, 257, 1280) and cfg.tokens == 257
    assert clip_image.layers_run(cfg, cfg.hidden_index) == 31
    axes = cfg.param_axes()
    for leaf, ax in zip(jax.tree.leaves(cfg.abstract_params()),
                        jax.tree.leaves(axes, is_leaf=lambda a: isinstance(a, tuple))):
        assert len(ax) == len(leaf.shape)
