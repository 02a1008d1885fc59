#!/usr/bin/env python3
"""Code checks anyone can run (and scripts/test.sh does): Python import cycles in
python/aoizora, functions over MAX_FUNCTION_LINES in the files listed below, and
Result<bool> in the C++ sources (a Status says "success without a value").

Usage: scripts/check_code.py [--baseline FILE | --no-baseline] [--update-baseline]

Import cycles and long functions that are known are recorded in the baseline file; the run
fails only on findings missing from it (new ones) and on any Result<bool>, so the known
debts stay visible without blocking CI. Standard library only, so it runs in seconds before
anything is built.
"""

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "aoizora"
DEFAULT_BASELINE = ROOT / "scripts" / "check_code_baseline.txt"

MAX_FUNCTION_LINES = 80
# The files whose long functions were called out; every function in them is measured.
LONG_FUNCTION_FILES = (
    "cpp/aoizora/shlo/parser.cpp",        # parse_op
    "cpp/aoizora/cost/q2.cpp",            # the Q2Evaluator constructor
    "cpp/aoizora/hlo/replica_groups.cpp",  # parse_mesh
    "python/aoizora/planning/planner.py",          # _result
)
# Where Result<bool> must not appear.
CPP_DIRS = ("cpp", "tests/cpp", "fuzz")
CPP_SUFFIXES = (".h", ".hpp", ".cc", ".cpp")


# ---- import cycles ----

def module_name(path):
    """aoizora.x.y for python/aoizora/x/y.py; a package is named by its __init__.py."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules():
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imported_modules(tree, module, is_package, modules):
    """(module, line) of every import of the package's own modules anywhere in the file,
    inside functions too: a cycle kept importable by an import inside a function is still a
    cycle. `from pkg import sub` depends on pkg.sub only when sub is a module (the package's
    __init__ runs first, but that is every submodule's order, not a cycle)."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - (node.level - 1)] + ([base] if base else []))
            for a in node.names:
                sub = f"{base}.{a.name}"
                yield (sub if sub in modules else base), node.lineno


def import_graph(modules):
    """{module: {imported module: first line}} over the package's own modules."""
    graph = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        edges = graph.setdefault(name, {})
        for target, line in imported_modules(tree, name, path.name == "__init__.py", modules):
            if target in modules and target != name:
                edges.setdefault(target, line)
    return graph


def strongly_connected(graph):
    """Tarjan's components with more than one module (the import cycles), iteratively."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        m = stack.pop()
                        on_stack.discard(m)
                        component.append(m)
                        if m == node:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(graph[child])))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return out


def shortest_path(graph, members, start, goal):
    """The shortest import path from start to goal inside one component (it exists)."""
    paths = {start: [start]}
    frontier = [start]
    while goal not in paths:
        reached = []
        for m in frontier:
            for t in graph[m]:
                if t in members and t not in paths:
                    paths[t] = paths[m] + [t]
                    reached.append(t)
        frontier = reached
    return paths[goal]


def import_cycles(modules):
    """One finding per import that closes a cycle ("a -> b"), with a cycle it lies on; an
    edge is stable under unrelated edits, so the baseline can name it."""
    graph = import_graph(modules)
    findings = []
    for component in strongly_connected(graph):
        members = set(component)
        for a in component:
            for b, line in sorted(graph[a].items()):
                if b not in members:
                    continue
                cycle = [a] + shortest_path(graph, members, b, a)
                where = f"{modules[a].relative_to(ROOT)}:{line}"
                findings.append((f"import-cycle {a} -> {b}",
                                 f"{where}; cycle {' -> '.join(cycle)}"))
    return findings


# ---- long functions ----

def python_functions(path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node.name, node.lineno, node.end_lineno


def blank_cpp(text):
    """The text with comments, string and character literals turned to spaces (newlines
    kept), so braces inside them do not count and line numbers stay right."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|R"(\w*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"'
                         r"|'(?:\\.|[^'\\\n])*'|^[ \t]*#[^\n]*", re.S | re.M)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


SCOPE_HEADER = re.compile(r"\b(namespace|class|struct|union|enum)\b[^()=]*$")
FUNCTION_NAME = re.compile(
    r"(operator\s*\(\s*\)|operator[^\s(]+|~?[A-Za-z_][\w:~]*)\s*(?:<[^()]*>)?\s*\(")
NOT_FUNCTIONS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype"}


def cpp_functions(path):
    """(name, first line, last line) of each function defined at namespace or class scope.
    A '{' there opens a scope (namespace, class...), a function (its header has a
    parenthesis and no '='), or data (an initialiser), which is skipped whole."""
    text = blank_cpp(path.read_text())
    kinds, header_start = [], 0
    for i, ch in enumerate(text):
        in_scope = all(k == "scope" for k in kinds)
        if ch == "{":
            kind = "other"
            if in_scope:
                header = text[header_start:i]
                kind = "scope" if SCOPE_HEADER.search(header) else "other"
                match = FUNCTION_NAME.search(header)
                if kind == "other" and match and match.group(1) not in NOT_FUNCTIONS \
                        and "=" not in header[: match.start()]:
                    kind = ("function", match.group(1), header_start + match.start())
            kinds.append(kind)
            header_start = i + 1
        elif ch == "}" and kinds:
            kind = kinds.pop()
            if isinstance(kind, tuple):
                yield kind[1], text.count("\n", 0, kind[2]) + 1, text.count("\n", 0, i) + 1
            header_start = i + 1
        elif ch == ";" and in_scope:
            header_start = i + 1
        elif ch == ":" and in_scope and text[i - 1] != ":" and text[i + 1 : i + 2] != ":":
            # "public:" ends a header; a constructor's initialiser list follows its ')'.
            if not text[header_start:i].rstrip().endswith(")"):
                header_start = i + 1


def long_functions():
    findings = []
    for rel in LONG_FUNCTION_FILES:
        path = ROOT / rel
        functions = python_functions(path) if rel.endswith(".py") else cpp_functions(path)
        for name, first, last in functions:
            lines = last - first + 1
            if lines > MAX_FUNCTION_LINES:
                findings.append((f"long-function {rel} {name}", f"{rel}:{first}: {lines} lines"))
    return findings


# ---- Result<bool> ----

def result_bool_uses():
    findings = []
    for d in CPP_DIRS:
        for path in sorted((ROOT / d).rglob("*")):
            if path.suffix not in CPP_SUFFIXES:
                continue
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if "Result<bool>" in line:
                    rel = path.relative_to(ROOT)
                    findings.append((f"result-bool {rel}:{n}", "use Status: " + line.strip()))
    return findings


# ---- the run ----

def read_baseline(path):
    if path is None or not path.exists():
        return set()
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return {line for line in lines if line}


def write_baseline(path, findings):
    keys = sorted(key for key, _ in findings if not key.startswith("result-bool"))
    header = ("# Known findings of scripts/check_code.py: CI fails only on ones not listed here.\n"
              "# Remove a line when its finding is fixed; regenerate with --update-baseline.\n")
    path.write_text(header + "".join(k + "\n" for k in keys))


def report(title, findings, known):
    print(f"== {title}: {len(findings)}")
    new = 0
    for key, detail in findings:
        is_new = key not in known
        new += is_new
        print(f"  {'NEW   ' if is_new else 'known '} {key}  ({detail})")
    return new


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, default=DEFAULT_BASELINE,
                        help="file of known findings (default: %(default)s)")
    parser.add_argument("--no-baseline", action="store_true", help="treat every finding as new")
    parser.add_argument("--update-baseline", action="store_true",
                        help="write the current cycles and long functions to the baseline")
    args = parser.parse_args(argv)

    cycles = import_cycles(package_modules())
    long, result_bool = long_functions(), result_bool_uses()
    if args.update_baseline:
        write_baseline(args.baseline, cycles + long)
    known = set() if args.no_baseline else read_baseline(args.baseline)
    new = report("Python import cycles (imports inside functions counted)", cycles, known)
    new += report(f"functions over {MAX_FUNCTION_LINES} lines in the listed files", long, known)
    new += report("Result<bool> uses (use Status)", result_bool, set())
    stale = sorted(known - {key for key, _ in cycles + long})
    for key in stale:
        print(f"  fixed: {key} is in the baseline but no longer found; remove it")
    print(f"check_code: {new} new finding(s)" if new else "check_code: ok")
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
