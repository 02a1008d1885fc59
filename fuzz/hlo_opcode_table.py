"""Asks XLA's HLO parser (jaxlib._hlo.hlo_module_from_text) which attributes each opcode
allows, how many operands it takes and which attribute it requires first, and prints the
rows of cpp/aoizora/hlo/opcode_table.cpp (kOpcodes) from its answers.

    .venv/bin/python fuzz/hlo_opcode_table.py > /tmp/rows.inc

For every opcode it parses `ROOT r = <shape> <opcode>(p, ...), zzzz=1` with 0-3 operands:
XLA answers `expects N operands` (a fixed count) or `unexpected attribute "zzzz". Allowed
attributes: ...`; then, with the right count and no attribute, `attribute X is expected but
not seen`. XLA's parser aborts the process on some of these probes, so they run in a child
process that is restarted after the probe it died on. Rerun it when jaxlib changes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

GENERIC = ["backend_config", "control-predecessors", "frontend_attributes", "metadata",
           "origin", "parameter_replication", "sharding", "statistics"]
EXC = {"Clz": "count-leading-zeros", "Cos": "cosine", "Exp": "exponential",
       "Expm1": "exponential-minus-one", "Log1p": "log-plus-one",
       "OptimizationBarrier": "opt-barrier", "PopulationCount": "popcnt", "Sin": "sine",
       "TopK": "topk"}

# Opcodes whose probes stop before XLA reads attributes (an async-update/-done needs an async
# operand, a conditional a scalar first operand): their attributes as XLA's parser lists them
# for well-formed operands.
KNOWN = {"async-update": {"async_execution_thread", "calls"},
         "async-done": {"async_execution_thread", "calls"},
         "conditional": {"branch_computations", "false_computation", "true_computation"}}

CHILD = r"""
import json, sys
from jaxlib import _hlo
for line in sys.stdin:
    text = json.loads(line)
    try:
        _hlo.hlo_module_from_text(text)
        out = "OK"
    except Exception as e:
        out = (str(e).splitlines() + ["", ""])[1]
    print(json.dumps(out), flush=True)
"""


def ask(texts: list[str]) -> list[str]:
    """XLA's first error line for each text ("OK" when accepted, "CRASH" when it aborted)."""
    answers: list[str] = []
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    while len(answers) < len(texts):
        todo = texts[len(answers):]
        proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                              text=True, input="".join(json.dumps(t) + "\n" for t in todo))
        got = [json.loads(line) for line in proc.stdout.splitlines()]
        answers += got
        if len(got) < len(todo):
            answers.append("CRASH")
    return answers


def opcodes() -> list[str]:
    from jaxlib import _hlo
    names = sorted(k[1:] for k in dir(_hlo.HloOpcode) if k.startswith("k"))
    return [EXC.get(k) or re.sub(r"(?<!^)(?=[A-Z])", "-", k).lower() for k in names]


def text(op: str, n: int, shape: str, attrs: str) -> str:
    args = "0" if op == "parameter" else "{1,2,3,4,5,6,7,8}" if op == "constant" else \
        ", ".join(["p"] * n)
    return (f"HloModule m\nENTRY e {{\n  p = f32[8] parameter(0)\n"
            f"  ROOT r = {shape} {op}({args}){attrs}\n}}\n")


def main() -> None:
    ops = opcodes()
    shapes = ("f32[8]", "((f32[8]), f32[8], s32[])", "(f32[8], f32[8], f32[8])")
    probes = [(op, n, s) for op in ops for n in range(6) for s in shapes]
    answers = ask([text(op, n, s, ", zzzz=1") for op, n, s in probes])
    allowed: dict[str, set[str]] = {}
    count: dict[str, int] = {}
    for (op, n, s), a in zip(probes, answers):
        m = re.search(r'unexpected attribute "zzzz"\. Allowed attributes: (.*)', a)
        if m:
            allowed.setdefault(op, set()).update(m.group(1).split(", "))
        m = re.search(r"expects (\d+) operands, but has", a)
        if m and op != "tuple":  # a tuple takes as many as its shape has elements
            count[op] = int(m.group(1))
    firsts = ask([text(op, count.get(op, 1), "((f32[8]), f32[8], s32[])"
                       if op.startswith("async") else "f32[8]", "") for op in ops])
    required = {}
    for op, a in zip(ops, firsts):
        m = re.search(r"attribute (\S+) is expected but not seen", a)
        if m:
            required[op] = m.group(1)
    for op in ops:
        own = sorted((allowed.get(op, set()) | KNOWN.get(op, set())) - set(GENERIC))
        print(f'    {{"{op}", {count.get(op, -1)}, "{" ".join(own)}", "{required.get(op, "")}"}},')


if __name__ == "__main__":
    main()
