"""scripts/check_code.py finds what it claims to: a cycle closed by an import inside a
function, an import up the layer order, a long function in either language (a C++ one whose
braces hide in strings and comments), `except ValueError` in planning code, Result<bool>;
and the run fails on a finding the baseline does not list with a reason."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "check_code.py"


@pytest.fixture(scope="module")
def check():
    spec = importlib.util.spec_from_file_location("check_code", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_import_inside_a_function_closes_a_cycle(check, tmp_path, monkeypatch):
    pkg = tmp_path / "aoizora"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from aoizora.sub import b\n")  # package order only
    (pkg / "a.py").write_text("from aoizora.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import a\n")
    (pkg / "c.py").write_text("import aoizora.a\n")  # into the cycle, not on it
    monkeypatch.setattr(check, "PACKAGE", pkg)
    monkeypatch.setattr(check, "ROOT", tmp_path)
    findings = check.import_cycles(check.package_modules())
    assert sorted(key for key, _ in findings) == [
        "import-cycle aoizora.a -> aoizora.sub.b", "import-cycle aoizora.sub.b -> aoizora.a"]
    assert "aoizora/sub/b.py:2" in dict(findings)["import-cycle aoizora.sub.b -> aoizora.a"]


def test_cpp_functions_are_measured_from_name_to_closing_brace(check, tmp_path):
    body = "\n".join(f'  x += "{{ // {i}";' for i in range(85))
    source = tmp_path / "f.cpp"
    source.write_text(
        "namespace n {\n"
        "const int kTable[] = {1, 2};\n"              # data, not a function
        "struct S {\n"
        " public:\n"
        "  S(int a) : a_(a), b_{a} {}\n"              # constructor with an initialiser list
        "  int a_, b_;\n"
        "};\n"
        "// int fake() {\n"
        "std::string long_one(int x) {\n"
        f"{body}\n"
        "  if (x) { return \"}\"; }\n"
        "  auto f = [](int y) { return y; };\n"
        "  return {};\n"
        "}\n"
        "}  // namespace n\n")
    functions = {name: (first, last) for name, first, last in check.cpp_functions(source)}
    assert functions == {"S": (5, 5), "long_one": (9, 98)}


def test_result_bool_is_found_in_the_cpp_tree(check, tmp_path, monkeypatch):
    (tmp_path / "cpp").mkdir()
    (tmp_path / "cpp" / "x.h").write_text("Status ok();\nResult<bool> old();\n")
    monkeypatch.setattr(check, "ROOT", tmp_path)
    monkeypatch.setattr(check, "CPP_DIRS", ("cpp",))
    assert [key for key, _ in check.result_bool_uses()] == ["result-bool cpp/x.h:2"]


def _package(tmp_path, files):
    pkg = tmp_path / "python" / "aoizora"
    for rel, text in {"__init__.py": "", **files}.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    return pkg


def test_an_upward_import_inside_a_function_is_found(check, tmp_path, monkeypatch):
    pkg = _package(tmp_path, {
        "errors.py": "",
        "low/__init__.py": "",
        "low/a.py": "import aoizora.errors\ndef f():\n    from aoizora.high import b\n",
        "high/__init__.py": "",
        "high/b.py": "from aoizora.low import a\nfrom ..errors import x\n",  # downward: fine
        "stray/c.py": "",
    })
    monkeypatch.setattr(check, "PACKAGE", pkg)
    monkeypatch.setattr(check, "ROOT", tmp_path)
    monkeypatch.setattr(check, "LAYERS", (("__init__", "errors"), ("low",), ("high",)))
    findings = dict(check.upward_imports(check.package_modules()))
    assert set(findings) == {"upward-import aoizora.low.a -> aoizora.high.b",
                             "unlayered aoizora.stray.c"}
    assert "python/aoizora/low/a.py:3" in findings["upward-import aoizora.low.a -> aoizora.high.b"]


def test_the_package_layers_name_every_subpackage(check):
    listed = {name for layer in check.LAYERS for name in layer}
    tops = {p.stem if p.is_file() else p.name for p in check.PACKAGE.iterdir()
            if (p.suffix == ".py" or (p / "__init__.py").exists())}
    assert tops <= listed, tops - listed


def test_long_python_functions_are_found_in_every_folder_by_qualified_name(check, tmp_path,
                                                                           monkeypatch):
    body = "".join(f"        x = {i}\n" for i in range(80))
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "s.py").write_text(
        f"class C:\n    @staticmethod\n    def long(x):\n{body}        return x\n"
        "    def short(self):\n        return 1\n")
    monkeypatch.setattr(check, "ROOT", tmp_path)
    monkeypatch.setattr(check, "PYTHON_DIRS", ("scripts",))
    monkeypatch.setattr(check, "CPP_DIRS", ())
    assert dict(check.long_functions()) == {
        "long-function scripts/s.py C.long": "scripts/s.py:3: 82 lines"}


def test_except_value_error_is_found_alone_or_in_a_tuple_by_its_function(check, tmp_path,
                                                                         monkeypatch):
    (tmp_path / "planning").mkdir()
    (tmp_path / "planning" / "p.py").write_text(
        "def f():\n"
        "    try:\n        g()\n    except ValueError:\n        pass\n"
        "    try:\n        g()\n    except (KeyError, ValueError) as e:\n        pass\n"
        "    try:\n        g()\n    except CoreError:\n        pass\n")
    monkeypatch.setattr(check, "ROOT", tmp_path)
    monkeypatch.setattr(check, "NO_VALUE_ERROR_DIRS", ("planning",))
    assert [key for key, _ in check.value_error_handlers()] == [
        "except-value-error planning/p.py f[1]", "except-value-error planning/p.py f[2]"]


def test_the_run_fails_on_a_new_finding_and_on_a_baseline_line_without_reason(
        check, tmp_path, monkeypatch, capsys):
    pkg = _package(tmp_path, {"low.py": "def f():\n    import aoizora.high\n", "high.py": ""})
    monkeypatch.setattr(check, "PACKAGE", pkg)
    monkeypatch.setattr(check, "ROOT", tmp_path)
    monkeypatch.setattr(check, "LAYERS", (("__init__", "low"), ("high",)))
    for name in ("PYTHON_DIRS", "CPP_DIRS", "NO_VALUE_ERROR_DIRS"):
        monkeypatch.setattr(check, name, ())
    baseline = tmp_path / "baseline.txt"
    key = "upward-import aoizora.low -> aoizora.high"
    assert check.main(["--baseline", str(baseline)]) == 1          # new
    baseline.write_text(key + "\n")
    assert check.main(["--baseline", str(baseline)]) == 1          # listed, no reason
    baseline.write_text(f"{key}  # why it stays\n")
    assert check.main(["--baseline", str(baseline)]) == 0
    check.main(["--baseline", str(baseline), "--update-baseline"])  # keeps the reason
    assert baseline.read_text().splitlines()[-1] == f"{key}  # why it stays"
    capsys.readouterr()


def test_docs_state_the_checkers_layer_order(check):
    doc = (check.ROOT / "docs" / "architecture.md").read_text()
    block = doc.split("## The Python package's layers")[1].split("```")[1]
    layers, names = [], []
    for line in block.strip().splitlines():
        number, _, rest = line.partition(" ")
        if number.isdigit():
            names = []
            layers.append(names)
        listed = (rest if number.isdigit() else line).strip()
        names += [n.strip(" /") for n in listed.split("  ")[0].split(",") if n.strip()]
    assert [tuple(layer) for layer in layers] == list(check.LAYERS)
