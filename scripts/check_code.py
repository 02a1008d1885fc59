#!/usr/bin/env python3
"""Code checks anyone can run (and scripts/test.sh does): Python import cycles and imports
that run up the layer order in python/aoizora, functions over MAX_FUNCTION_LINES in every
Python and C++ file, a bare `except ValueError` in planning code, and Result<bool> in the
C++ sources (a Status says "success without a value").

Usage: scripts/check_code.py [--baseline FILE | --no-baseline] [--update-baseline]

Known findings are recorded in the baseline file, one key a line followed by `# why it
stays`; the run fails on findings missing from it (new ones), on a baseline line without a
reason, and on any Result<bool>, so the known debts stay visible without blocking CI.
Standard library only, so it runs in seconds before anything is built.

Function length: Python functions are measured by ast (first line of the `def` to the last
line of its body, nested functions inside their parent). C++ functions by a brace-matching
scan of the text with comments, literals and preprocessor lines blanked (cpp_functions):
good enough for this code base's style, not a C++ parser (a macro that opens a brace, or a
function-like macro at namespace scope, can fool it).
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
# Where functions are measured: every file of both languages under these folders.
PYTHON_DIRS = ("python", "scripts", "bench", "tests/python")
CPP_DIRS = ("cpp", "tests/cpp", "fuzz", "bench")
CPP_SUFFIXES = (".h", ".hpp", ".cc", ".cpp")

# The layers of the Python package, lowest first; each name is a subpackage or a top-level
# module of aoizora ("__init__" is the package itself). A module may import its own layer and
# the layers before it; an import of a later layer (at module level or inside a function)
# runs up. docs/architecture.md states the same order: change both together.
LAYERS = (
    ("__init__", "errors", "atomic", "terminal"),   # what every layer uses
    ("models",),        # the Wan family, its stages, the model zoo
    ("inputs",),        # checks of user input before any work
    ("compile",),       # lowering and compiling jobs, and where they run
    ("hardware",),      # profiles, published measurements, calibration
    ("plan_format",),   # the aoizora.plan/1 document
    ("planning",),      # the sharding space, Stage 1, Stage 2, the planner
    ("pipeline",),      # seconds per video around the transformer
    ("progress", "plan_schema", "plan_summary", "report", "maxdiffusion", "launch",
     "evaluation", "measure", "serving"),           # what reads, shows or runs a plan
    ("commands",),      # one module per subcommand
    ("cli", "jaxenv"),  # the entry point; jaxenv is an alias of compile/jaxenv.py
)
# Where an `except ValueError` (alone or in a tuple) is a finding: it catches a bug in
# Python as readily as the expected failure, and turns it into a skipped candidate.
NO_VALUE_ERROR_DIRS = ("python/aoizora/planning",)


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


# ---- imports that run up the layer order ----

def layer_of(module):
    """The index in LAYERS of aoizora.x... (x its first component); None when unlisted."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    for i, layer in enumerate(LAYERS):
        if top in layer:
            return i
    return None


def upward_imports(modules):
    """One finding per module that imports a module of a later layer, and one per module
    whose layer is not listed (a new subpackage must be placed in LAYERS)."""
    findings = []
    for name, edges in sorted(import_graph(modules).items()):
        here = layer_of(name)
        if here is None:
            findings.append((f"unlayered {name}", "add its subpackage or module to LAYERS"))
            continue
        for target, line in sorted(edges.items()):
            there = layer_of(target)
            if there is not None and there > here:
                where = f"{modules[name].relative_to(ROOT)}:{line}"
                findings.append((f"upward-import {name} -> {target}",
                                 f"{where}; layer {here} imports layer {there}"))
    return findings


# ---- long functions ----

def python_functions(path):
    """(qualified name, first line, last line) of each def, decorators left out."""
    tree = ast.parse(path.read_text(), str(path))
    out = []

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + child.name
                if not isinstance(child, ast.ClassDef):
                    out.append((name, child.lineno, child.end_lineno))
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return out


def blank_cpp(text):
    """The text with comments, string and character literals turned to spaces (newlines
    kept), so braces inside them do not count and line numbers stay right."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|R"(\w*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"'
                         r"|'(?:\\.|[^'\\\n])*'|^[ \t]*#[^\n]*", re.S | re.M)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


SCOPE_HEADER = re.compile(r"\b(namespace|class|struct|union|enum)\b[^()=]*$")
FUNCTION_NAME = re.compile(
    r"(operator\s*\(\s*\)|operator[^\s(]+|~?[A-Za-z_][\w:~]*)\s*(?:<[^()]*>)?\s*\(")
GTEST_MACROS = {"TEST", "TEST_F", "TEST_P", "TYPED_TEST"}
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
                    name = match.group(1)
                    if name in GTEST_MACROS:  # TEST(Suite, Name): the case is the name
                        close = header.find(")", match.end())
                        name += "(" + re.sub(r"\s+", "", header[match.end() : close]) + ")"
                    kind = ("function", name, header_start + match.start())
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


def source_files(dirs, suffixes):
    """Every file under ROOT/dir for dir in dirs whose name ends in one of suffixes."""
    for d in dirs:
        for path in sorted((ROOT / d).rglob("*")):
            if path.suffix in suffixes and path.is_file():
                yield path


def long_functions():
    findings = []
    files = [(p, python_functions) for p in source_files(PYTHON_DIRS, (".py",))]
    files += [(p, cpp_functions) for p in source_files(CPP_DIRS, CPP_SUFFIXES)]
    for path, measure in files:
        rel = path.relative_to(ROOT).as_posix()
        for name, first, last in measure(path):
            lines = last - first + 1
            if lines > MAX_FUNCTION_LINES:
                findings.append((f"long-function {rel} {name}", f"{rel}:{first}: {lines} lines"))
    return findings


# ---- except ValueError in planning code ----

def catches_value_error(handler):
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id == "ValueError" for n in names)


def value_error_handlers():
    """One finding per `except ValueError` (alone or in a tuple), keyed by the function
    that holds it and its rank there, so that unrelated edits do not change the key."""
    findings = []
    for path in source_files(NO_VALUE_ERROR_DIRS, (".py",)):
        rel = path.relative_to(ROOT).as_posix()
        tree = ast.parse(path.read_text(), str(path))
        spans = sorted(python_functions(path), key=lambda f: f[2] - f[1])
        seen = {}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.ExceptHandler) and node.type is not None
                    and catches_value_error(node)):
                continue
            where = next((n for n, a, b in spans if a <= node.lineno <= b), "<module>")
            seen[where] = seen.get(where, 0) + 1
            findings.append((f"except-value-error {rel} {where}[{seen[where]}]",
                             f"{rel}:{node.lineno}: catch the named error"))
    return sorted(findings)


# ---- Result<bool> ----

def result_bool_uses():
    findings = []
    for path in source_files(CPP_DIRS, CPP_SUFFIXES):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if "Result<bool>" in line:
                rel = path.relative_to(ROOT).as_posix()
                findings.append((f"result-bool {rel}:{n}", "use Status: " + line.strip()))
    return findings


# ---- the run ----

def read_baseline(path):
    """{key: reason} from lines "key  # reason"; a key with no reason maps to ""."""
    if path is None or not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        key, _, reason = line.partition("#")
        if key.strip():
            out[key.strip()] = reason.strip()
    return out


def write_baseline(path, findings, reasons):
    """The findings' keys (Result<bool> is never baselined), each with its reason from
    `reasons` or a placeholder that the run refuses until someone writes the reason."""
    keys = sorted({key for key, _ in findings if not key.startswith("result-bool")})
    header = ("# Known findings of scripts/check_code.py: CI fails only on ones not listed here.\n"
              "# One a line: the key, then '# ' and why it stays. Remove a line when its finding\n"
              "# is fixed; --update-baseline rewrites the keys and keeps the reasons.\n")
    width = max((len(k) for k in keys), default=0)
    lines = [f"{k:<{width}}  # {reasons.get(k) or 'REASON NEEDED'}\n" for k in keys]
    path.write_text(header + "".join(lines))


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
                        help="write the current findings to the baseline, keeping the reasons")
    args = parser.parse_args(argv)

    modules = package_modules()
    sections = [
        ("Python import cycles (imports inside functions counted)", import_cycles(modules)),
        ("Python imports that run up the layer order (LAYERS)", upward_imports(modules)),
        (f"functions over {MAX_FUNCTION_LINES} lines", long_functions()),
        ("except ValueError in planning code", value_error_handlers()),
    ]
    baselined = [f for _, findings in sections for f in findings]
    if args.update_baseline:
        write_baseline(args.baseline, baselined, read_baseline(args.baseline))
    known = {} if args.no_baseline else read_baseline(args.baseline)
    new = sum(report(title, findings, known) for title, findings in sections)
    new += report("Result<bool> uses (use Status)", result_bool_uses(), {})
    for key, reason in sorted(known.items()):
        if not reason or reason == "REASON NEEDED":
            print(f"  no reason: {key} is in the baseline without '# why it stays'")
            new += 1
    for key in sorted(set(known) - {key for key, _ in baselined}):
        print(f"  fixed: {key} is in the baseline but no longer found; remove it")
    print(f"check_code: {new} new finding(s)" if new else "check_code: ok")
    return 1 if new else 0


if __name__ == "__main__":
    sys.exit(main())
