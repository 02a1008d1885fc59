"""Differential test of our HLO parser against XLA's: rewrites real HLO the ways XLA's parser
allows and the ways it refuses, and checks that both parsers agree on accept/refuse and, where
both accept, on the number of computations, of instructions and the per-opcode histogram.

    PYTHONPATH=build/dev/pyroot:python .venv/bin/python fuzz/hlo_differential.py --n 2000 --seed 1

Seeds are the compiled fixtures (tests/data/hlo) and programs JAX compiles here for CPU
(--jax). tests/python/test_hlo_differential.py runs a small fixed-seed sample. XLA's side runs
in a child process (fuzz/hlo_corpus_run.py), restarted if XLA's parser aborts.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import random
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hlo_corpus_run  # noqa: E402

INSTR = re.compile(r"^(\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*)(\S.*)$")
DEF = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(\S+?)\s+([\w\-]+)\(")
INFERABLE = {"add", "multiply", "subtract", "maximum", "minimum", "negate", "tanh", "exponential",
             "tuple", "get-tuple-element", "compare", "select", "and", "or", "divide"}


def _outside_strings(line: str):
    """Yields (index, char) of `line` outside double-quoted strings."""
    quoted = False
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\" and quoted:
            i += 2
            continue
        if c == '"':
            quoted = not quoted
        elif not quoted:
            yield i, c
        i += 1


def wrap_attributes(text: str, rng: random.Random) -> str:
    out = []
    for line in text.split("\n"):
        if INSTR.match(line) and rng.random() < 0.5:
            cuts = [i for i, c in _outside_strings(line)
                    if c == "," and re.match(r",\s*[\w\-]+=", line[i:])]
            for i in reversed(cuts):
                lead = rng.choice([",\n      ", "\n      , "])
                line = line[:i] + lead + line[i + 1:].lstrip()
        out.append(line)
    return "\n".join(out)


def add_comments(text: str, rng: random.Random) -> str:
    out = []
    for line in text.split("\n"):
        m = INSTR.match(line)
        if m and rng.random() < 0.3:
            line = line + "  // a note"
        if m and rng.random() < 0.3:
            line = m.group(1) + "/* c */ " + m.group(2)
        out.append(line)
    return "\n".join(out)


def drop_shapes(text: str, rng: random.Random) -> str:
    out = []
    for line in text.split("\n"):
        m = DEF.match(line)
        if m and m.group(3) in INFERABLE and not m.group(2).startswith("(") and rng.random() < 0.5:
            line = line.replace(m.group(2) + " " + m.group(3) + "(", m.group(3) + "(", 1)
        out.append(line)
    return "\n".join(out)


def nest_operand(text: str, rng: random.Random) -> str:
    """Wraps one operand reference in an inline `shape copy(%x)`: one more instruction."""
    lines = text.split("\n")
    shapes: dict[str, str] = {}
    candidates = []
    for k, line in enumerate(lines):
        m = DEF.match(line)
        if not m:
            continue
        if m.group(3) not in ("parameter", "constant"):
            ops = re.search(re.escape(m.group(3)) + r"\((%[\w.\-]+)[,)]", line)
            if ops and ops.group(1)[1:] in shapes:
                candidates.append((k, ops.group(1)))
        shapes[m.group(1)] = m.group(2)
    if not candidates:
        return text
    k, name = rng.choice(candidates)
    lines[k] = lines[k].replace("(" + name, f"({shapes[name[1:]]} copy({name})", 1)
    return "\n".join(lines)


def entry_last(text: str, rng: random.Random) -> str:
    """Moves the ENTRY computation to the end (callees still come first)."""
    m = re.search(r"^ENTRY .*?^}\n?", text, re.M | re.S)
    if not m:
        return text
    return text[:m.start()] + text[m.end():].rstrip("\n") + "\n\n" + m.group(0)


def unknown_name(text: str, rng: random.Random) -> str:
    refs = list(re.finditer(r"\((%[\w.\-]+)", text))
    if not refs:
        return text
    r = rng.choice(refs)
    return text[:r.start(1)] + "%no_such_instruction" + text[r.end(1):]


def duplicate_computation(text: str, rng: random.Random) -> str:
    comps = list(re.finditer(r"^(?!ENTRY)%?[\w.\-]+ .*?^}\n", text, re.M | re.S))
    if not comps:
        return text
    c = rng.choice(comps)
    return text[:c.end()] + "\n" + c.group(0) + text[c.end():]


def truncate(text: str, rng: random.Random) -> str:
    return text[:rng.randrange(1, max(2, len(text)))]


def _instruction_lines(text: str) -> list[int]:
    lines = text.split("\n")
    return [k for k, line in enumerate(lines) if DEF.match(line)]


def unknown_attribute(text: str, rng: random.Random) -> str:
    """An attribute no opcode allows, after one instruction."""
    lines = text.split("\n")
    ks = _instruction_lines(text)
    if not ks:
        return text
    k = rng.choice(ks)
    lines[k] = re.sub(r"(\s*//.*)?$", r", no_such_attribute=1\1", lines[k], count=1)
    return "\n".join(lines)


def misspelt_opcode(text: str, rng: random.Random) -> str:
    lines = text.split("\n")
    ks = _instruction_lines(text)
    if not ks:
        return text
    k = rng.choice(ks)
    m = DEF.match(lines[k])
    op = m.group(3)
    lines[k] = lines[k].replace(" " + op + "(", " " + op + "x(", 1)
    return "\n".join(lines)


def bad_channel_id(text: str, rng: random.Random) -> str:
    ids = list(re.finditer(r"channel_id=(\d+)", text))
    if not ids:
        return unknown_attribute(text, rng)
    m = rng.choice(ids)
    return text[:m.start(1)] + rng.choice(["x", "1.5", "{1}"]) + text[m.end(1):]


def extra_operand(text: str, rng: random.Random) -> str:
    """A second operand for an instruction whose opcode takes one. (Not for a nested one:
    XLA's parser skips the operand count of an instruction nested in the operands of a
    fusion or custom-call, which ours does not; docs/hlo.md.)"""
    lines = text.split("\n")
    unary = re.compile(r"= *\S+ (?:convert|bitcast|copy|negate|reshape|transpose|broadcast)"
                       r"\(((?:[\w\[\]{},:()]+ )?%[\w.\-]+)\)")
    ks = [k for k, line in enumerate(lines) if unary.search(line)]
    if not ks:
        return unknown_attribute(text, rng)
    k = rng.choice(ks)
    r = unary.search(lines[k])
    lines[k] = lines[k][:r.end(1)] + ", " + r.group(1) + lines[k][r.end(1):]
    return "\n".join(lines)


ALLOWED = [wrap_attributes, add_comments, drop_shapes, nest_operand, entry_last]
REFUSED = [unknown_name, duplicate_computation, truncate, unknown_attribute, misspelt_opcode,
           bad_channel_id, extra_operand]


def variants(seeds: list[str], n: int, seed: int):
    """n rewritten texts: (names of the rewrites, text). Deterministic for a seed."""
    rng = random.Random(seed)
    for _ in range(n):
        text = rng.choice(seeds)
        steps = rng.sample(ALLOWED, rng.randint(1, 3))
        if rng.random() < 0.3:
            steps.append(rng.choice(REFUSED))
        for f in steps:
            text = f(text, rng)
        yield [f.__name__ for f in steps], text


def ours(text: str) -> dict:
    from aoizora import _core
    try:
        s = _core.hlo_module_summary(text)
    except _core.CoreError as e:
        return {"parse": False, "error": str(e)}
    return {"parse": True, **s}


def xla(texts: list[str]) -> list[dict]:
    with tempfile.TemporaryDirectory() as d:
        paths = []
        for i, t in enumerate(texts):
            paths.append(os.path.join(d, f"{i:06d}.hlo"))
            with open(paths[-1], "w") as fh:
                fh.write(t)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        res = hlo_corpus_run.run_robust(
            [sys.executable, "-c", hlo_corpus_run.XLA_WORKER,
             json.dumps(hlo_corpus_run.OPCODE_EXCEPTIONS)], paths, env)
        return [res[p] for p in paths]


def agree(o: dict, x: dict) -> bool:
    if x.get("crash"):
        return not o["parse"]  # XLA aborted; ours must at least not accept silently? count it
    if o["parse"] != x["parse"]:
        return False
    return not o["parse"] or all(o[k] == x[k] for k in ("computations", "instructions", "opcodes"))


def seed_texts(root: str, with_jax: bool) -> list[str]:
    texts = [open(p).read() for p in sorted(glob.glob(os.path.join(root, "tests/data/hlo/*.hlo")))]
    if with_jax:
        import jax
        import jax.numpy as jnp

        def f(x, w):
            y = jnp.tanh(x @ w)
            return jax.lax.fori_loop(0, 3, lambda i, a: a * 2 + 1, y).sum(axis=0)

        x = jax.ShapeDtypeStruct((8, 16), jnp.float32)
        w = jax.ShapeDtypeStruct((16, 4), jnp.float32)
        texts.append(jax.jit(f).lower(x, w).compile().as_text())
    return texts


def run(n: int, seed: int, with_jax: bool) -> dict:
    root = os.path.dirname(HERE)
    cases = list(variants(seed_texts(root, with_jax), n, seed))
    xs = xla([t for _, t in cases])
    stats = collections.Counter()
    classes = collections.Counter()
    for (steps, text), x in zip(cases, xs):
        o = ours(text)
        stats["tried"] += 1
        stats["xla_accepts"] += bool(x.get("parse"))
        ok = agree(o, x)
        stats["agree"] += ok
        if not ok:
            classes["+".join(steps) + (" (ours accepts)" if o["parse"] else " (ours refuses)")] += 1
    return {"stats": dict(stats), "disagreements": classes.most_common()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jax", action="store_true", help="also seed with a program JAX compiles")
    args = ap.parse_args()
    r = run(args.n, args.seed, args.jax)
    s = r["stats"]
    print(f"tried {s['tried']}, XLA accepts {s['xla_accepts']}, agree {s['agree']} "
          f"({100.0 * s['agree'] / max(s['tried'], 1):.2f} %)")
    for cls, k in r["disagreements"]:
        print(f"  {k:5d}  {cls}")
    return 0 if s["agree"] == s["tried"] else 1


if __name__ == "__main__":
    sys.exit(main())
