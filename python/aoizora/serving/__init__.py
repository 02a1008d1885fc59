"""Serving a model on rented TPU slices: the splits of a slice into replicas (splits.py), the
price of a chip-hour (prices.py, prices.json), and the frontier of latency per video against
videos per hour and cost per video (frontier.py), each replica shape planned by the planner
(survey.py). Under load: arrivals (arrivals.py) queued for each split's replicas in a
discrete-event simulation (queue_sim.py), the figures and the pick under a p99 bound
(load.py), as text and a chart (load_table.py, load_chart.py). `aoizora serve` prints it;
docs/serving.md says what is simulated."""
