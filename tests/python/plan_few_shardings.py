"""`aoizora` with only the first three shardings enumerated (the baselines' as usual), so that
a plan of wan-tiny takes seconds, not a minute: test_executor_faults runs it as a process of
its own, whose workers, raylet and Ray cluster it kills.

    python plan_few_shardings.py plan --model wan-tiny ...   as `aoizora plan ...`
"""

import sys

from aoizora.planning import strategies

_all = strategies.enumerate_candidates
strategies.enumerate_candidates = lambda *a, **k: _all(*a, **k)[:3]

if __name__ == "__main__":   # spawned workers import this module too: they must not plan
    from aoizora import cli

    sys.exit(cli.main())
