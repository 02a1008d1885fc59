"""Extracts HLO module texts from a git snapshot of XLA (openxla/xla or a mirror of it) into a
folder, for the held-aside corpus that `fuzz/hlo_corpus_run.py` feeds to both parsers.

    python3 fuzz/hlo_corpus_extract.py --git-dir /work/.mirror/ROCm+xla/repo --ref main \
        --out /work/hlo-corpus

Sources, read with `git show` (no work tree needed):
  - `*.hlo` files, whole (lit tests keep their `// RUN:` / `// CHECK` comments; a file holding
    several modules separated by `// -----` gives one text per module);
  - `*.txt` files that contain an `HloModule` line (benchmark and test dumps);
  - raw string literals `R"(...)"` / `R"delim(...)delim"` in `*_test.cc` that hold a module:
    an `HloModule` line or an `ENTRY` line, and no FileCheck directive.
Texts are deduplicated by content; each is written as `<sha1[:16]>.hlo`, and `index.json` maps
every file name to where it came from (path, and the literal's index in the file). The output
is deterministic for a given ref. Nothing here is tuned to individual texts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys

RAW = re.compile(r'R"([^()\\ ]{0,16})\(')
LINE_START = re.compile(r"^\s*(HloModule\b|ENTRY\b)", re.M)
CHECK = re.compile(r"\b(CHECK|CHECK-NEXT|CHECK-SAME|CHECK-DAG|CHECK-NOT)\b")


def git(git_dir: str, *args: str) -> bytes:
    return subprocess.run(["git", "--git-dir", git_dir, *args], check=True,
                          capture_output=True).stdout


def raw_strings(source: str):
    """Yields the contents of every C++ raw string literal in `source`, in order."""
    pos = 0
    while True:
        m = RAW.search(source, pos)
        if m is None:
            return
        end_token = ")" + m.group(1) + '"'
        end = source.find(end_token, m.end())
        if end < 0:
            return
        yield source[m.end():end]
        pos = end + len(end_token)


def looks_like_module(text: str) -> bool:
    return LINE_START.search(text) is not None and CHECK.search(text) is None


def split_lit(text: str) -> list[str]:
    # FileCheck lines are `//` comments here, which both parsers skip.
    parts = re.split(r"^// -----\s*$", text, flags=re.M)
    return [p for p in parts if LINE_START.search(p)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--git-dir", required=True)
    ap.add_argument("--ref", default="HEAD")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    names = git(args.git_dir, "ls-tree", "-r", "--name-only", args.ref).decode().splitlines()
    wanted = [n for n in names if n.endswith((".hlo", ".txt", "_test.cc"))]
    os.makedirs(args.out, exist_ok=True)
    index: dict[str, dict] = {}
    counts = {"hlo": 0, "txt": 0, "test.cc": 0}
    for path in wanted:
        try:
            text = git(args.git_dir, "show", f"{args.ref}:{path}").decode("utf-8")
        except (subprocess.CalledProcessError, UnicodeDecodeError):
            continue
        if path.endswith(".hlo"):
            found, kind = split_lit(text), "hlo"
        elif path.endswith(".txt"):
            found = [text] if re.search(r"^HloModule\b", text, re.M) else []
            kind = "txt"
        else:
            found = [s for s in raw_strings(text) if looks_like_module(s)]
            kind = "test.cc"
        for i, t in enumerate(found):
            name = hashlib.sha1(t.encode()).hexdigest()[:16] + ".hlo"
            if name in index:
                continue
            with open(os.path.join(args.out, name), "w") as fh:
                fh.write(t)
            index[name] = {"path": path, "literal": i, "kind": kind}
            counts[kind] += 1
    with open(os.path.join(args.out, "index.json"), "w") as fh:
        json.dump({"ref": git(args.git_dir, "rev-parse", args.ref).decode().strip(),
                   "texts": dict(sorted(index.items()))}, fh, indent=0)
    print(f"{len(index)} texts ({counts}) in {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
