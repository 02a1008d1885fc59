"""`aoizora measure`: timing collectives and planned programs on real devices.

    platform.py       which devices run (a TPU slice, or CPU devices as a harness check) and
                      the provenance every measurement carries
    local_slice.py    the slice the devices form (a catalog topology) and its group shapes
    timing.py         one compiled call timed with block_until_ready: median over repeats
    sizes.py          byte sizes as the command line spells them ("1KiB..64MiB")
    collectives.py    the collective sweep, in the format `aoizora calibrate` reads
    random_args.py    random arrays for a program's abstract arguments (no weights read)
    plan_run.py       a plan's choice and baselines run and timed beside their simulated time

On CPU devices the figures time the harness and XLA's CPU runtime, never a TPU; every output
says so.
"""
