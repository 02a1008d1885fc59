"""The Wan presets by name, each with the sizes and default workloads it is made for.

Shapes and counts are diffusers' WanTransformer3DModel configs (scripts/
convert_wan_to_diffusers.py) and Wan-Video/Wan2.2 wan/configs; docs/model.md lists them with
their parameter counts (tests/python/test_models_wan_family.py checks every count).
"""

from __future__ import annotations

from aoizora.models.experts import WanExperts
from aoizora.models.wan import WanConfig

_14B = dict(dim=5120, ffn_dim=13824, heads=40, layers=40)
_WAN21 = (("480p", 81), ("720p", 81))  # Wan's frame_num 81 at 16 fps (5 s)

PRESETS: dict[str, WanConfig] = {
    "wan2.1-t2v-1.3b": WanConfig("wan2.1-t2v-1.3b", dim=1536, ffn_dim=8960, heads=12, layers=30,
                                 workloads=(("480p", 81),)),
    "wan2.1-t2v-14b": WanConfig("wan2.1-t2v-14b", **_14B, workloads=_WAN21),
    # Image to video: 36 input channels (noise 16 + mask 4 + image latents 16), CLIP ViT-H/14
    # image tokens (257 x 1280) with their own K/V in every cross-attention.
    "wan2.1-i2v-14b": WanConfig("wan2.1-i2v-14b", **_14B, in_dim=36, image_dim=1280,
                                workloads=_WAN21),
    # Two 14B experts switched at t = 875 (T2V) / 900 (I2V), both resident by default.
    "wan2.2-t2v-a14b": WanExperts("wan2.2-t2v-a14b", **_14B, workloads=_WAN21,
                                  boundary_ratio=0.875),
    "wan2.2-i2v-a14b": WanExperts("wan2.2-i2v-a14b", **_14B, in_dim=36, workloads=_WAN21,
                                  boundary_ratio=0.900),
    # Text/image to video 5B: the Wan 2.2 VAE (4,16,16) with 48 latent channels, 704x1280
    # only, 121 frames at 24 fps; a timestep per token (the image's first frame is at t = 0).
    "wan2.2-ti2v-5b": WanConfig("wan2.2-ti2v-5b", dim=3072, ffn_dim=14336, heads=24, layers=30,
                                in_dim=48, out_dim=48, vae_stride=(4, 16, 16),
                                per_token_time=True, sizes=(("720p", (704, 1280)),),
                                workloads=(("720p", 121),), fps=24),
    # Tests: every structural feature (RoPE 3-way split, 8 heads, text, CFG), fp32, tiny blocks
    # so the blockwise attention really loops.
    "wan-tiny": WanConfig("wan-tiny", dim=128, ffn_dim=256, heads=8, layers=2, text_dim=32,
                          text_len=16, freq_dim=32, dtype="float32", q_block=8, kv_block=8,
                          seq_multiple=1, shard_multiple=1),
}
