"""The UMT5 encoder in JAX against transformers' UMT5EncoderModel: random weights copied
from a torch model built from a config (nothing downloaded), float32, two sequence
lengths with padded prompts; the relative position buckets of Wan's 512 tokens; the
parameter count of the real UMT5-XXL config."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import torch
from transformers import UMT5Config as HFConfig
from transformers import UMT5EncoderModel

from aoizora.models import umt5

RTOL, ATOL = 1e-4, 1e-5
encode = jax.jit(umt5.encode, static_argnums=0)
text_context = jax.jit(umt5.text_context, static_argnums=0)


def hf_config(cfg: umt5.UMT5Config) -> HFConfig:
    return HFConfig(vocab_size=cfg.vocab, d_model=cfg.d_model, d_kv=cfg.d_kv, d_ff=cfg.d_ff,
                    num_layers=cfg.layers, num_heads=cfg.heads,
                    relative_attention_num_buckets=cfg.buckets,
                    relative_attention_max_distance=cfg.max_distance,
                    layer_norm_epsilon=cfg.eps, dropout_rate=0.0,
                    feed_forward_proj="gated-gelu", attn_implementation="eager")


def hf_model(cfg: umt5.UMT5Config, seed: int = 0) -> UMT5EncoderModel:
    """A float32 torch model with every weight random and O(1) in effect: norms away from 1,
    a position bias as large as the scores, so a swapped or missing tensor shows."""
    torch.manual_seed(seed)
    model = UMT5EncoderModel(hf_config(cfg)).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "layer_norm" in name:
                p.copy_(1 + 0.3 * torch.randn_like(p))
            elif "relative_attention_bias" in name or "embed" in name or "shared" in name:
                p.normal_(0.0, 1.0)
            else:
                p.normal_(0.0, p.shape[1] ** -0.5)
    return model


def params_from_hf(cfg: umt5.UMT5Config, model: UMT5EncoderModel):
    """The JAX parameter tree from the torch state dict; raises if a tensor is left over."""
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    used = {"shared.weight"}

    def take(key, transpose=True):
        used.add(key)
        return sd[key].T if transpose else sd[key]

    def layer(i):
        a, f = f"encoder.block.{i}.layer.0.", f"encoder.block.{i}.layer.1."
        return {"norm_attn": take(a + "layer_norm.weight", False),
                **{n: take(a + f"SelfAttention.{n}.weight") for n in "qkvo"},
                "rel_bias": take(a + "SelfAttention.relative_attention_bias.weight", False),
                "norm_ffn": take(f + "layer_norm.weight", False),
                **{n: take(f + f"DenseReluDense.{n}.weight") for n in ("wi_0", "wi_1", "wo")}}

    layers = [layer(i) for i in range(cfg.layers)]
    params = {"embedding": take("encoder.embed_tokens.weight", False),
              "layers": jax.tree.map(lambda *xs: np.stack(xs), *layers),
              "final_norm": take("encoder.final_layer_norm.weight", False)}
    assert set(sd) == used, f"tensors not copied: {sorted(set(sd) - used)}"
    np.testing.assert_array_equal(sd["shared.weight"], params["embedding"])  # tied
    return jax.tree.map(jnp.asarray, params)


def prompts(cfg, lengths, seq, seed=1):
    """Token ids [B,seq] and a mask with lengths[b] real tokens then padding (id 0)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, cfg.vocab, size=(len(lengths), seq))
    mask = (np.arange(seq)[None] < np.asarray(lengths)[:, None]).astype(np.int64)
    return ids * mask, mask


@pytest.fixture(scope="module")
def tiny():
    """(config, torch model, its weights as JAX parameters), built once for the module."""
    cfg = umt5.UMT5_TINY
    model = hf_model(cfg)
    return cfg, model, params_from_hf(cfg, model)


@pytest.mark.parametrize("seq,lengths", [(24, (24, 7)), (9, (5, 9))])
def test_encoder_equals_transformers_umt5(tiny, seq, lengths):
    cfg, model, params = tiny
    ids, mask = prompts(cfg, lengths, seq)
    with torch.no_grad():
        want = model(input_ids=torch.from_numpy(ids),
                     attention_mask=torch.from_numpy(mask)).last_hidden_state.numpy()
    got = np.asarray(encode(cfg, params, jnp.asarray(ids), jnp.asarray(mask)))
    assert got.shape == (2, seq, cfg.d_model)
    np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
    # Wan's context: the same on real tokens, zero on padding
    ctx = np.asarray(text_context(cfg, params, jnp.asarray(ids), jnp.asarray(mask)))
    np.testing.assert_allclose(ctx[mask == 1], want[mask == 1], rtol=RTOL, atol=ATOL)
    assert not ctx[mask == 0].any()


def test_padding_is_masked_out_of_the_real_tokens(tiny):
    """Changing padded token ids changes nothing on the real tokens (and the mask matters:
    without it they would)."""
    cfg, _, params = tiny
    ids, mask = prompts(cfg, (6, 6), 24)
    other = ids.copy()
    other[:, 6:] = 3
    a = np.asarray(encode(cfg, params, jnp.asarray(ids), jnp.asarray(mask)))
    b = np.asarray(encode(cfg, params, jnp.asarray(other), jnp.asarray(mask)))
    np.testing.assert_allclose(a[:, :6], b[:, :6], rtol=1e-6, atol=1e-6)
    full = np.ones_like(mask)
    c = np.asarray(encode(cfg, params, jnp.asarray(other), jnp.asarray(full)))
    assert np.abs(c[:, :6] - b[:, :6]).max() > 1e-2


def test_relative_buckets_of_wans_512_tokens_equal_transformers():
    cfg = umt5.UMT5_XXL
    small = cfg.replace(layers=1, vocab=8, d_model=8, heads=1, d_kv=8, d_ff=8)  # same buckets
    attn = UMT5EncoderModel(hf_config(small))
    attn = attn.encoder.block[0].layer[0].SelfAttention
    n = cfg.text_len
    rel = torch.arange(n)[None, :] - torch.arange(n)[:, None]
    want = attn._relative_position_bucket(rel).numpy()
    got = np.asarray(umt5.relative_buckets(cfg, n, n))
    np.testing.assert_array_equal(got, want)
    assert got.min() == 0 and got.max() == cfg.buckets - 1


def test_umt5_xxl_has_wans_shapes_and_transformers_parameter_count():
    cfg = umt5.UMT5_XXL
    assert (cfg.d_model, cfg.layers, cfg.heads, cfg.d_kv, cfg.d_ff, cfg.vocab) == \
        (4096, 24, 64, 64, 10240, 256384)
    with torch.device("meta"):
        want = sum(p.numel() for p in UMT5EncoderModel(hf_config(cfg)).parameters())
    n = cfg.param_count()  # abstract: nothing allocated
    assert n == want
    layer = 4 * 4096 * 4096 + 3 * 4096 * 10240 + 2 * 4096 + 32 * 64
    assert n == 256384 * 4096 + 24 * layer + 4096
    assert abs(n * 2 / 1e9 - 11.4) < 0.1  # bf16 bytes: 11.4 GB
    p = cfg.abstract_params()
    assert p["layers"]["rel_bias"].shape == (24, 32, 64)  # a position bias in every layer
    axes = cfg.param_axes()
    for leaf, ax in zip(jax.tree.leaves(p), jax.tree.leaves(axes, is_leaf=lambda a:
                                                             isinstance(a, tuple))):
        assert len(ax) == len(leaf.shape)
    assert math.prod(cfg.abstract_inputs()[0].shape) == 2 * 512
