"""Feeds a folder of HLO texts (fuzz/hlo_corpus_extract.py) to XLA's parser and to ours, and
prints how far they agree: the held-aside corpus check of docs/hlo.md.

    python fuzz/hlo_corpus_run.py --corpus /work/hlo-corpus [--src DIR] [--sanitize] [--json F]

XLA's side is `jaxlib._hlo.hlo_module_from_text` (needs jaxlib; run with the project's venv);
its results are cached in <corpus>/xla.jsonl, since they do not depend on our code. Our side is
fuzz/hlo_corpus_driver.cpp compiled with g++ against the hlo/ and base/ sources under --src
(default: this checkout; give an extracted older tree to measure "before"), with ASan+UBSan
when --sanitize. Both run in child processes that are restarted after a crash or a hang, and
the text they died on is counted as a crash for that parser.

Figures: texts XLA accepts that ours accepts; where both accept, texts with the same number of
computations, of instructions and the same per-opcode histogram; texts with a collective
(by XLA's histogram) that our loader loads; texts XLA refuses that ours accepts; crashes. The
first error of each text we refuse but XLA accepts is grouped into classes (quoted parts
blanked) and the largest classes are listed.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import re
import select
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HANG_S = 120

# HloOpcode enum names whose printed opcode is not the kebab-case of the name.
OPCODE_EXCEPTIONS = {"Clz": "count-leading-zeros", "Cos": "cosine", "Exp": "exponential",
                     "Expm1": "exponential-minus-one", "Log1p": "log-plus-one",
                     "OptimizationBarrier": "opt-barrier", "PopulationCount": "popcnt",
                     "Sin": "sine", "TopK": "topk"}
COLLECTIVES = {"all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute",
               "collective-broadcast", "ragged-all-to-all", "all-gather-start",
               "all-reduce-start", "collective-permute-start"}

XLA_WORKER = r"""
import json, re, sys
from jaxlib import _hlo
EXC = json.loads(sys.argv[1])
def name(op):
    k = str(op).split(".")[-1][1:]
    return EXC.get(k) or re.sub(r"(?<!^)(?=[A-Z])", "-", k).lower()
for path in sys.stdin:
    path = path.rstrip("\n")
    text = open(path, encoding="utf-8", errors="replace").read()
    try:
        m = _hlo.hlo_module_from_text(text)
    except Exception as e:
        out = {"path": path, "parse": False, "error": str(e).splitlines()[1:3]}
    else:
        ops, n, comps = {}, 0, m.computations()
        for c in comps:
            for i in c.instructions():
                ops[name(i.opcode)] = ops.get(name(i.opcode), 0) + 1
                n += 1
        out = {"path": path, "parse": True, "computations": len(comps), "instructions": n,
               "opcodes": dict(sorted(ops.items()))}
    print(json.dumps(out), flush=True)
"""


def run_robust(cmd: list[str], paths: list[str], env=None) -> dict[str, dict]:
    """Runs `cmd` (one JSON line on stdout per path read from stdin, in order), restarting
    it after a crash or hang; the path it died on gets {"crash": True}."""
    results: dict[str, dict] = {}
    todo = list(paths)
    while todo:
        # The list goes through a file: a pipe would deadlock once both buffers fill.
        with tempfile.TemporaryFile("w+") as listing:
            listing.write("".join(p + "\n" for p in todo))
            listing.seek(0)
            proc = subprocess.Popen(cmd, stdin=listing, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True, env=env)
        done = 0
        while done < len(todo):
            ready, _, _ = select.select([proc.stdout], [], [], HANG_S)
            line = proc.stdout.readline() if ready else None
            if not line:
                break
            r = json.loads(line)
            results[r["path"]] = r
            done += 1
        if done < len(todo):
            proc.kill()
            results[todo[done]] = {"path": todo[done], "crash": True,
                                   "hang": not ready, "rc": proc.wait()}
            done += 1
            print(f"  crash or hang on {todo[done - 1]}", file=sys.stderr)
        else:
            proc.wait()
        todo = todo[done:]
    return results


def xla_results(corpus: str, paths: list[str]) -> dict[str, dict]:
    cache = os.path.join(corpus, "xla.jsonl")
    have: dict[str, dict] = {}
    if os.path.exists(cache):
        with open(cache) as fh:
            for line in fh:
                r = json.loads(line)
                have[r["path"]] = r
    missing = [p for p in paths if p not in have]
    if missing:
        print(f"XLA's parser on {len(missing)} texts...", file=sys.stderr)
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
        new = run_robust([sys.executable, "-c", XLA_WORKER, json.dumps(OPCODE_EXCEPTIONS)],
                         missing, env)
        have.update(new)
        with open(cache, "w") as fh:
            for p in sorted(have):
                fh.write(json.dumps(have[p]) + "\n")
    return have


def build_driver(src: str, sanitize: bool) -> str:
    sources = [os.path.join(HERE, "hlo_corpus_driver.cpp")]
    for d in ("hlo", "base"):
        folder = os.path.join(src, "cpp", "aoizora", d)
        sources += sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith(".cpp"))
    key = hashlib.sha1((src + str(sanitize)).encode()).hexdigest()[:10]
    exe = os.path.join("/tmp", f"hlo_corpus_driver.{key}")
    flags = ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"] \
        if sanitize else ["-O2"]
    newest = max(os.path.getmtime(s) for s in sources)
    if not os.path.exists(exe) or os.path.getmtime(exe) < newest:
        print(f"building {exe} from {src}...", file=sys.stderr)
        subprocess.run(["g++", "-std=c++20", *flags, "-I", os.path.join(src, "cpp"), *sources,
                        "-o", exe], check=True)
    return exe


def error_class(message: str) -> str:
    m = re.sub(r"^[^:]*:\d+:\d+: |^[^:]*:\d+: ", "", message)
    m = re.sub(r"'[^']*'", "'_'", m)
    return re.sub(r"\d+", "N", m)[:110]


def summarize(xla: dict[str, dict], ours: dict[str, dict]) -> dict:
    s = collections.Counter()
    classes = collections.Counter()
    load_classes = collections.Counter()
    disagree = []
    for p, x in xla.items():
        o = ours[p]
        s["texts"] += 1
        s["our_crashes"] += bool(o.get("crash"))
        s["xla_crashes"] += bool(x.get("crash"))
        if x.get("crash"):
            continue
        if not x["parse"]:
            s["xla_refuses"] += 1
            s["xla_refuses_ours_accepts"] += bool(o.get("parse"))
            continue
        s["xla_accepts"] += 1
        if not o.get("parse"):
            classes[error_class(o.get("error", "crash"))] += 1
            continue
        s["both_accept"] += 1
        same = (o["computations"] == x["computations"] and o["instructions"] == x["instructions"]
                and o["opcodes"] == x["opcodes"])
        s["both_agree"] += same
        if not same:
            disagree.append(p)
        if COLLECTIVES & set(x["opcodes"]):
            s["collective_texts"] += 1
            s["collective_loaded"] += bool(o.get("load"))
            if not o.get("load"):
                load_classes[error_class(o.get("load_error", ""))] += 1
    pct = lambda a, b: round(100.0 * s[a] / max(s[b], 1), 2)  # noqa: E731
    return {"counts": dict(s),
            "accepted_pct": pct("both_accept", "xla_accepts"),
            "agreement_pct": pct("both_agree", "both_accept"),
            "collective_loaded_pct": pct("collective_loaded", "collective_texts"),
            "refused_classes": classes.most_common(25),
            "load_refused_classes": load_classes.most_common(15),
            "disagreements": sorted(disagree)[:50]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--src", default=ROOT, help="tree whose cpp/aoizora/{hlo,base} to build")
    ap.add_argument("--sanitize", action="store_true")
    ap.add_argument("--json", help="write the summary here")
    args = ap.parse_args()
    paths = sorted(os.path.join(args.corpus, f) for f in os.listdir(args.corpus)
                   if f.endswith(".hlo"))
    xla = xla_results(args.corpus, paths)
    driver = build_driver(os.path.abspath(args.src), args.sanitize)
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=1")
    ours = run_robust([driver], paths, env)
    summary = summarize({p: xla[p] for p in paths}, ours)
    c = summary["counts"]
    print(f"texts {c['texts']}: XLA accepts {c.get('xla_accepts', 0)}, refuses "
          f"{c.get('xla_refuses', 0)}, crashes {c.get('xla_crashes', 0)}")
    print(f"XLA accepts, ours accepts: {c.get('both_accept', 0)} ({summary['accepted_pct']} %)")
    print(f"same computations/instructions/opcodes where both accept: {c.get('both_agree', 0)} "
          f"({summary['agreement_pct']} %)")
    print(f"collective texts loaded: {c.get('collective_loaded', 0)} of "
          f"{c.get('collective_texts', 0)} ({summary['collective_loaded_pct']} %)")
    print(f"XLA refuses, ours accepts: {c.get('xla_refuses_ours_accepts', 0)}")
    print(f"our crashes/hangs: {c.get('our_crashes', 0)}")
    print("largest classes of texts we refuse and XLA accepts:")
    for cls, n in summary["refused_classes"]:
        print(f"  {n:5d}  {cls}")
    print("largest classes of collective texts the loader refuses:")
    for cls, n in summary["load_refused_classes"]:
        print(f"  {n:5d}  {cls}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(summary, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
