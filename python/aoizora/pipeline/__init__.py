"""The stages of one video around the transformer loop, planned and priced: the text encoder,
the image conditioning of image to video and the VAE decode under several shardings each
(stage_specs), compiled for the slice's TPU and simulated (price), the reshards between
stages (reshard), and seconds per video of a sharding-placement pair (plan_video, which the
planner runs once per setting). Every figure is simulated.

    from aoizora.pipeline import plan_video
    stages = plan_video.price_stages(model, workload, Stage2.for_topology("v5e:2x4"))
    video = plan_video.VideoModel(model, workload, stage2, steps=30, stages=stages)
    video.seconds(plan_video.plan_pair(plan_dict)), video.parts(pair)
"""
