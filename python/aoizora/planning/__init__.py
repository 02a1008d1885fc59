"""Planning: the sharding space, Stage 1 (Q1 and memory on StableHLO), the attention kernel's
blocks, Stage 2 (placements by Q2 on the compiled HLO), the baselines, and the planner that
runs them end to end (`aoizora.plan`)."""
