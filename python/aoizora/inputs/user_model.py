"""Your own model on the command line: `aoizora plan --model path/to/module.py:make_spec` or
`--model pkg.mod:make_spec`.

`make_spec()` takes no arguments and returns either
  - a FunctionSpec (models/base.py): any JAX function, its abstract arguments
    (jax.ShapeDtypeStruct pytrees, weights included) and their logical axes; the planner
    tries data x fsdp x context x tensor shardings with GSPMD propagation
    (strategies.function_candidates), and the only baseline is the Alpa-style one (a
    function has no hand-tuned deployment); or
  - a ModelSpec with the interface the Wan presets have (models/base.py, e.g. a WanConfig of
    other sizes): planned like a preset, with --video and --frames.

Every mistake is one line (UserError) naming the reference and what to do: the file or
module does not exist, importing it or calling the function raises (with the file:line
that raised), the result is of the wrong type, or its axes do not match its arguments
(count, pytree structure, rank, unknown logical names, or the function does not trace on
its arguments).

    is_reference(text) -> bool     "module.py:fn" / "pkg.mod:fn" (presets have no colon)
    load(text) -> FunctionSpec | ModelSpec, checked
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import sys
import sysconfig
import traceback
from typing import Any

from aoizora.errors import UserError, one_line
from aoizora.models.base import FunctionSpec

# Logical axis names (models/base.py): those a Layout maps to mesh axes, and "layers", the
# stacked blocks of a scanned model, never sharded (the Wan presets use it). Any other name
# (a typo such as "seq") would be replicated without a word, so it is refused.
LOGICAL_AXES = ("batch", "length", "heads", "mlp", "fsdp", "layers")
# What the planner uses of a ModelSpec (the interface of the Wan presets).
MODEL_SPEC_NEEDS = ("name", "key", "heads", "dim", "sizes", "video", "abstract_params",
                    "param_axes", "abstract_inputs", "input_axes", "output_axes", "apply")


def is_reference(text: str | None) -> bool:
    return bool(text) and ":" in text


# Where code that is not the user's lives: the standard library, installed packages, aoizora.
_LIBRARIES = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "purelib", "platlib")}
                   | {os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})


def _where(e: BaseException) -> str:
    """' (file.py:12)': where the user's code raised: the innermost frame outside the
    standard library, installed packages and aoizora (else the innermost frame)."""
    frames = traceback.extract_tb(e.__traceback__)
    if not frames:
        return ""
    own = [f for f in frames if not os.path.abspath(f.filename).startswith(_LIBRARIES)]
    f = (own or frames)[-1]
    return f" ({os.path.basename(f.filename)}:{f.lineno})"


def _one_line(e: BaseException) -> str:
    """errors.one_line with where in the user's own code it was raised."""
    return f"{one_line(e)}{_where(e)}"


def _import(ref: str, target: str):
    """The module a reference names: a .py file (or a path) or a dotted module name."""
    if target.endswith(".py") or os.sep in target:
        if not os.path.isfile(target):
            raise UserError(f"--model {ref}: no such file {target}")
        name = "aoizora_user_model_" + hashlib.sha256(
            os.path.abspath(target).encode()).hexdigest()[:12]
        spec = importlib.util.spec_from_file_location(name, target)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and pickling look modules up by name
        try:
            spec.loader.exec_module(module)
        except Exception as e:  # noqa: BLE001 - the user's code: report it in one line
            del sys.modules[name]
            raise UserError(f"--model {ref}: importing {target} raised "
                            f"{_one_line(e)}") from None
        return module
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as e:
        if e.name and target.startswith(e.name):
            raise UserError(f"--model {ref}: no module named {e.name!r} (put its folder on "
                            "PYTHONPATH, or give a file path ending in .py)") from None
        raise UserError(f"--model {ref}: importing {target} raised {_one_line(e)}") from None
    except Exception as e:  # noqa: BLE001 - the user's code
        raise UserError(f"--model {ref}: importing {target} raised {_one_line(e)}") from None


def _source_digest(module) -> str | None:
    path = getattr(module, "__file__", None)
    if not path or not os.path.isfile(path):
        return None
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def load(ref: str) -> Any:
    """The checked spec that `ref` ("file.py:fn" or "pkg.mod:fn") returns."""
    target, _, fn_name = ref.rpartition(":")
    if not target or not fn_name.isidentifier():
        raise UserError(f"--model {ref}: expected MODULE:FUNCTION, e.g. "
                        "examples/flux_dit.py:make_spec or mypkg.model:make_spec")
    module = _import(ref, target)
    fn = getattr(module, fn_name, None)
    if fn is None:
        raise UserError(f"--model {ref}: {target} has no {fn_name}")
    if not callable(fn):
        raise UserError(f"--model {ref}: {fn_name} is a {type(fn).__name__}, not a function")
    try:
        spec = fn()
    except Exception as e:  # noqa: BLE001 - the user's code
        raise UserError(f"--model {ref}: {fn_name}() raised {_one_line(e)}") from None
    if isinstance(spec, FunctionSpec):
        check_function_spec(spec, ref)
        spec.source = {"reference": ref, "sha256": _source_digest(module)}
        return spec
    missing = [a for a in MODEL_SPEC_NEEDS if not hasattr(spec, a)]
    if missing:
        raise UserError(f"--model {ref}: {fn_name}() returned {type(spec).__name__}: expected "
                        "a FunctionSpec or a ModelSpec (aoizora.models.base; a ModelSpec "
                        f"needs {', '.join(missing)})")
    check_model_spec(spec, ref)
    return spec


def _leaves(ref: str, what: str, values, axes) -> list[tuple[Any, tuple]]:
    """(array, axes) pairs of one argument; UserError when the structures differ."""
    import jax

    is_axes = lambda a: a is None or (  # noqa: E731
        isinstance(a, tuple) and all(x is None or isinstance(x, str) for x in a))
    arrays = jax.tree.leaves(values)
    names = jax.tree.leaves(axes, is_leaf=is_axes)
    if len(arrays) != len(names):
        raise UserError(f"--model {ref}: {what} has {len(arrays)} arrays but "
                        f"{len(names)} axes tuples: give one tuple of logical axes per array")
    out = []
    for x, a in zip(arrays, names):
        if not (hasattr(x, "shape") and hasattr(x, "dtype")):
            raise UserError(f"--model {ref}: {what} holds a {type(x).__name__}: expected "
                            "jax.ShapeDtypeStruct arrays")
        if a is None or not is_axes(a):
            raise UserError(f"--model {ref}: {what}: axes {a!r} are not a tuple of logical "
                            "axis names")
        out.append((x, a))
    return out


def _check_axes(ref: str, what: str, pairs: list[tuple[Any, tuple]]) -> None:
    for x, axes in pairs:
        if len(axes) != len(x.shape):
            raise UserError(f"--model {ref}: {what} {x.dtype}{list(x.shape)} has "
                            f"{len(x.shape)} dims but axes {axes} name {len(axes)}")
        unknown = [a for a in axes if a is not None and a not in LOGICAL_AXES]
        if unknown:
            raise UserError(f"--model {ref}: {what} axes {axes}: unknown logical axis "
                            f"{unknown[0]!r} (use {', '.join(LOGICAL_AXES)} or None)")


def check_function_spec(spec: FunctionSpec, ref: str) -> None:
    """Axes mirror the arguments and the output (traced once, abstractly: no compute)."""
    import jax

    if len(spec.args) != len(spec.arg_axes):
        raise UserError(f"--model {ref}: {spec.name} has {len(spec.args)} arguments but "
                        f"{len(spec.arg_axes)} axes entries: give one per argument")
    for i, (arg, axes) in enumerate(zip(spec.args, spec.arg_axes)):
        _check_axes(ref, f"argument {i}", _leaves(ref, f"argument {i}", arg, axes))
    try:
        out = jax.eval_shape(spec.fn, *spec.args)
    except Exception as e:  # noqa: BLE001 - the user's function
        raise UserError(f"--model {ref}: {spec.name} does not trace on its arguments: "
                        f"{_one_line(e)}") from None
    _check_axes(ref, "the output", _leaves(ref, "the output", out, spec.out_axes))


def check_model_spec(spec, ref: str) -> None:
    """Parameter axes mirror the abstract parameters."""
    pairs = _leaves(ref, "the parameters", spec.abstract_params(), spec.param_axes())
    _check_axes(ref, "a parameter", pairs)
