"""The private Numba APIs warprec relies on still exist, with the signatures it calls.

warprec's kernels use a few Numba internals: the ``_nrt`` compile option
(``warprec/_kernels/_flags.py``), ``numba.np.arrayobj`` to build borrowed array views
(``_kernels/borrow.py``), ``numba.core.cgutils`` and the target context's code-generation
methods in the intrinsics (``_kernels/atomic.py``, ``_kernels/prefetch.py``), and the
compile events of ``numba.core.event`` (``_trainer.CompileWatch``; documented in Numba's
developer manual). None of these
is covered by Numba's deprecation policy, which is why pyproject.toml caps numba. When a new
Numba release is tried, these tests name what disappeared before the kernels fail to
compile somewhere less obvious.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import numba
import numpy as np
import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "warprec"

#: Numba modules that are public API; functions from any other ``numba.*`` module are
#: private and must be listed in PRIVATE_IMPORTS.
PUBLIC_MODULES = {"numba", "numba.extending", "numba.types", "numba.typed"}

#: module -> {name: parameters warprec passes by name or position, in order}
PRIVATE_IMPORTS = {
    "numba.core.event": {
        "install_listener": ("kind", "listener"),
        "Listener": (),
    },
    "numba.np.arrayobj": {
        "make_array": ("array_type",),
        "populate_array": ("array", "data", "shape", "strides", "itemsize", "meminfo"),
    },
    "numba.core.cgutils": {
        "get_item_pointer": ("context", "builder", "aryty", "ary", "inds"),
        "get_or_insert_function": ("module", "fnty", "name"),
    },
}

#: Methods of the target context that the intrinsics' code generators call.
CONTEXT_METHODS = ("make_array", "cast", "get_constant", "get_dummy_value")


def _missing(what):
    return (f"numba {numba.__version__} no longer provides {what}, a private API that "
            f"warprec uses; adapt warprec/_kernels before allowing this numba version in "
            f"pyproject.toml")


def _is_module(dotted):
    try:
        importlib.import_module(dotted)
    except ImportError:
        return False
    return True


def _private_uses_in_package():
    """{(module, name)} of every private Numba function used under warprec/: names
    imported from a private module (``from numba.np.arrayobj import make_array``), and
    attributes of an imported private module (``from numba.core import cgutils`` then
    ``cgutils.get_item_pointer``)."""
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = {}  # local name -> private module imported under it
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module \
                    and node.module.split(".")[0] == "numba":
                for alias in node.names:
                    dotted = f"{node.module}.{alias.name}"
                    if dotted not in PUBLIC_MODULES and _is_module(dotted):
                        modules[alias.asname or alias.name] = dotted
                    elif node.module not in PUBLIC_MODULES:
                        found.add((node.module, alias.name))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("numba.") and alias.name not in PUBLIC_MODULES:
                        modules[alias.asname or alias.name] = alias.name
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in modules:
                found.add((modules[node.value.id], node.attr))
    return found


def test_the_list_covers_every_private_function_used():
    listed = {(module, name) for module, names in PRIVATE_IMPORTS.items() for name in names}
    found = _private_uses_in_package()
    assert found == listed, (
        f"private Numba functions used under warprec/ {sorted(found)} differ from the ones "
        f"this file checks {sorted(listed)}; update PRIVATE_IMPORTS")


@pytest.mark.parametrize("module, name", [(m, n) for m, names in PRIVATE_IMPORTS.items()
                                          for n in names])
def test_private_function_exists_with_its_parameters(module, name):
    try:
        mod = importlib.import_module(module)
    except ImportError:
        pytest.fail(_missing(f"the module {module}"))
    function = getattr(mod, name, None)
    assert callable(function), _missing(f"{module}.{name}")
    parameters = list(inspect.signature(function).parameters)
    expected = list(PRIVATE_IMPORTS[module][name])
    assert parameters[:len(expected)] == expected, _missing(
        f"{module}.{name}{tuple(expected)} (its parameters are now {tuple(parameters)})")


def test_target_context_methods_exist():
    from numba.core.base import BaseContext

    for method in CONTEXT_METHODS:
        assert callable(getattr(BaseContext, method, None)), _missing(
            f"BaseContext.{method} (the target context of intrinsics)")


def test_nrt_option_compiles_without_reference_counting():
    """``_nrt=False`` is accepted, switches NRT off for the function, and leaves no
    reference-count call in its code (the reason warprec uses it)."""
    from numba.core.cpu import CPUTargetOptions

    assert hasattr(CPUTargetOptions, "_nrt"), _missing("the _nrt compile option")

    def first_row_sum(matrix):
        row = matrix[0]
        return row[0] + row[1]

    try:
        without = numba.njit(_nrt=False)(first_row_sum)
        assert without(np.ones((2, 3))) == 2.0
    except KeyError as exc:  # "Unrecognized options: {'_nrt'}"
        pytest.fail(_missing(f"the _nrt compile option ({exc})"))
    with_nrt = numba.njit(first_row_sum)
    assert with_nrt(np.ones((2, 3))) == 2.0
    compiled = without.overloads[without.signatures[0]]
    assert not compiled.target_context.enable_nrt, _missing("_nrt=False (NRT stayed on)")
    code = "".join(without.inspect_llvm().values())
    assert "NRT_decref" not in code, _missing("_nrt=False (the code still counts references)")
    # the check above is meaningful: the same function with NRT does count references
    assert "NRT_decref" in "".join(with_nrt.inspect_llvm().values())


def test_warprec_intrinsics_compile_and_run():
    """The intrinsics built on those APIs, compiled afresh (no cache): a borrowed view
    reads the array's data, and fetch_add returns the old value."""
    from warprec._kernels.atomic import fetch_add
    from warprec._kernels.borrow import borrow

    @numba.njit(cache=False)
    def probe(matrix, counter):
        view = borrow(matrix)
        before = fetch_add(counter, 0, 5)
        return view[1, 2] + view.shape[0] + before

    counter = np.array([3], dtype=np.int64)
    assert probe(np.arange(6.0).reshape(2, 3), counter) == 5.0 + 2 + 3
    assert counter[0] == 8


def test_inlined_helpers_are_inlined_into_the_compiled_function_only():
    """``_kernels._flags.inlined`` relies on Numba calling an inlining cost model with the
    caller's ``FunctionIR``, whose ``func_id.func`` is the caller's Python function: a
    helper's own helpers are then inlined into the compiled function, not into the
    helper first. (A cost model is public API; ``func_id.func`` is not.)"""
    from numba.core import ir

    from warprec._kernels._flags import inlined

    callers = []

    def recording(expr, caller, callee):
        assert isinstance(caller, ir.FunctionIR) and isinstance(callee, ir.FunctionIR)
        callers.append(caller.func_id.func.__name__)
        return inlined_model(expr, caller, callee)

    @inlined
    def inner(x):
        return x + 1

    inlined_model = inner.targetoptions["inline"]
    inner_recorded = numba.njit(inline=recording)(inner.py_func)

    @inlined
    def outer(x):
        return inner_recorded(x) * 2

    @numba.njit(cache=False)
    def compiled(x):
        return outer(x)

    assert compiled(3) == 8
    # inner's call was first seen inside outer (declined), then inside compiled (inlined)
    assert callers == ["outer", "compiled"]
