"""The stages of one video around the transformer loop, planned and priced: the text encoder
and the VAE decode under several shardings each (stage_specs), compiled for the slice's TPU
and simulated (price), and the reshards between stages (reshard). Every figure is simulated.

    from aoizora.pipeline import seconds_per_video
    price = seconds_per_video(model, workload, "v5e:2x4", steps=30, plan=plan_dict)
    price.text_encoder.simulated_s, price.vae_decode.sharding, price.total_s
"""

from aoizora.pipeline.price import (StagePrice, VideoPrice, best, price_stage,  # noqa: F401
                                    seconds_per_video)
