"""Serving a model on rented TPU slices: the splits of a slice into replicas (splits.py), the
price of a chip-hour (prices.py, prices.json), and the frontier of latency per video against
videos per hour and cost per video (frontier.py), each replica shape planned by the planner
(survey.py). `aoizora serve` prints it; docs/serving.md says what is simulated."""
