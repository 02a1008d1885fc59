"""Evaluation against the paper: `aoizora eval --grid paper`. One module per job:

    grid.py           the settings (Setting, grid, select), the paper's figures, the halves
    stats.py          Spearman rho, geometric mean, Q1 order
    provenance.py     the git commit and settings each result was made with
    setting.py        one setting: plan, judge every placement, the figures (evaluate_setting)
    placement_gain.py what placements beyond axis orders gain; every device order of 8 chips
    recall.py         K chosen on one half of the settings, recall reported on the other
    q1_error.py       Q1 against the simulated step over every fitting candidate
    runner.py         the grid, one JSON per setting, resumable
    tables.py         results.md, results.csv, summary.json
    plots.py          the PNG plots

Every latency here is *simulated* on the chip generation's model; none is measured.
"""
