"""scripts/check_code.py finds what it claims to: a cycle closed by an import inside a
function, a long C++ function whose braces hide in strings and comments, Result<bool>."""

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
