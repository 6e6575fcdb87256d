"""The public API is annotated: every parameter and the return of every public function
and of every public method of a public class (mypy, run by ``make test``, checks that the
annotations are right; this test checks that none is missing).

The public API: ``warprec.__all__`` (resolved through its lazy table), and for every
public module (``warprec.<name>`` without a leading underscore) the names of its
``__all__``, or its public functions and classes when it has none; for every class found,
the public methods (and ``__init__`` and properties) of it and of its warprec base
classes, such as ``FactorRecommender`` behind ``WARPFactorizer``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = None

import warprec

#: Unannotated public functions: the Numba kernels re-exported by warprec.losses
#: (_kernels/losses.py, whose signatures Numba types when it compiles them). Remove a name
#: when it is annotated: the test fails on a name listed here that is annotated or gone,
#: and on any other unannotated one.
PENDING = frozenset({
    # warprec/_kernels/losses.py (re-exported by warprec.losses)
    "warprec._kernels.losses.ordinal_loss_grad",
    "warprec._kernels.losses.ordinal_loss_grad_unit",
    "warprec._kernels.losses.preference_loss_grad",
})

#: Where the PENDING names may come from (the files owned by others).
PENDING_MODULES = ("warprec.model.", "warprec.tuning.", "warprec._dask_fit.",
                   "warprec._kernels.")

#: Public modules not yet in pyproject.toml's strict mypy list (``disallow_untyped_defs``:
#: their private helpers are not all annotated). Remove a name when the module is listed;
#: the test fails on a name listed here that is strict, and on any other public module
#: that is not.
NOT_STRICT = frozenset({"warprec.tuning"})

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

#: Methods checked besides the public ones.
SPECIAL_METHODS = ("__init__", "__call__")


def _public_modules():
    for info in pkgutil.iter_modules(warprec.__path__):
        if not info.name.startswith("_"):
            yield importlib.import_module(f"warprec.{info.name}")


def _module_objects(module):
    """The public objects of a module: its ``__all__``, or its own public names."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return [getattr(module, name) for name in names]
    return [value for name, value in vars(module).items()
            if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__]


def _function(obj):
    """The Python function behind ``obj`` (a Numba dispatcher's ``py_func``), or None."""
    obj = getattr(obj, "py_func", obj)
    return obj if inspect.isfunction(obj) else None


def _class_functions(cls):
    """The public methods (and properties' getters) of ``cls`` and its warprec bases."""
    for klass in cls.__mro__:
        if not klass.__module__.startswith("warprec"):
            continue
        for name, member in vars(klass).items():
            if name.startswith("_") and name not in SPECIAL_METHODS:
                continue
            if isinstance(member, property):
                member = member.fget
            elif isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            function = _function(member)
            if function is not None:
                yield function


def public_functions():
    """Every function of the public API, by qualified name."""
    objects = [getattr(warprec, name) for name in warprec.__all__]
    for module in _public_modules():
        objects += _module_objects(module)
    functions = {}
    for obj in objects:
        found = list(_class_functions(obj)) if inspect.isclass(obj) else [_function(obj)]
        for function in found:
            if function is not None and function.__module__.startswith("warprec"):
                functions[f"{function.__module__}.{function.__qualname__}"] = function
    return functions


def missing_annotations(function):
    """The parameters (``self``/``cls`` aside) and the return without an annotation."""
    signature = inspect.signature(function)
    missing = [name for position, (name, parameter) in enumerate(signature.parameters.items())
               if parameter.annotation is inspect.Parameter.empty
               and not (position == 0 and name in ("self", "cls"))]
    if signature.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def unannotated():
    return {name: missing for name, function in public_functions().items()
            if (missing := missing_annotations(function))}


def test_the_walk_finds_the_public_api():
    names = public_functions()
    for expected in ("warprec._base.FactorRecommender.recommend",   # inherited
                     "warprec._base.FactorRecommender.n_users_",    # a property
                     "warprec.model.WARPFactorizer.load",           # a classmethod
                     "warprec.baselines.PopularityRecommender.__init__",
                     "warprec.exceptions.DivergenceError.__init__",
                     "warprec.datasets.make_ratings", "warprec.cli.main",
                     "warprec.scoring.topk_items", "warprec.weights.RankWeighting.loss",
                     "warprec._kernels.losses.ordinal_loss_grad",  # a Numba kernel
                     "warprec.dask.recommend"):
        assert expected in names
    assert not any(name.split(".")[-1].startswith("_") and
                   name.split(".")[-1] not in SPECIAL_METHODS for name in names)


def test_every_public_function_is_annotated():
    missing = {name: params for name, params in unannotated().items() if name not in PENDING}
    assert not missing, ("public functions without annotations (annotate them: "
                         f"parameter or 'return'): {missing}")


def test_pending_lists_only_unannotated_functions_of_others():
    stale = sorted(PENDING - set(unannotated()))
    assert not stale, f"annotated or gone now: remove them from PENDING: {stale}"
    assert all(name.startswith(PENDING_MODULES) for name in PENDING)


def test_the_check_reports_what_is_missing():
    def bare(self, x, *args, y=1, **kwargs):
        return x

    def partial(x: int, y) -> int:
        return x

    def whole(x: int, *args: int, **kwargs: str) -> None:
        return None

    assert missing_annotations(bare) == ["x", "args", "y", "kwargs", "return"]
    assert missing_annotations(partial) == ["y"]
    assert missing_annotations(whole) == []


def test_type_checkers_see_the_lazy_names():
    """``warprec/__init__.py`` imports the names of its lazy table in a TYPE_CHECKING
    block (so that mypy types ``warprec.WARPFactorizer`` instead of taking module
    ``__getattr__``'s Any); that block and the table must agree."""
    tree = ast.parse(Path(warprec.__file__).read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    imported = {alias.name: f"warprec.{node.module}" for node in block.body
                if isinstance(node, ast.ImportFrom) and node.level == 1
                for alias in node.names}
    assert imported == warprec._LAZY


@pytest.mark.parametrize("name", sorted(warprec._LAZY))
def test_lazy_names_resolve(name):
    assert getattr(warprec, name) is getattr(importlib.import_module(warprec._LAZY[name]), name)


def _mypy_overrides():
    if tomllib is None or not PYPROJECT.is_file():
        pytest.skip("needs tomllib (Python >= 3.11) and the source tree's pyproject.toml")
    config = tomllib.loads(PYPROJECT.read_text())
    for override in config["tool"]["mypy"].get("overrides", []):
        modules = override["module"]
        yield ([modules] if isinstance(modules, str) else modules), override


def test_public_modules_are_strict():
    """Every public module is in the strict list (all its functions annotated), save
    those of NOT_STRICT."""
    strict = {module for modules, override in _mypy_overrides()
              if override.get("disallow_untyped_defs") for module in modules}
    public = {module.__name__ for module in _public_modules()} | {"warprec"}
    assert not NOT_STRICT & strict, f"strict now: remove from NOT_STRICT: {NOT_STRICT & strict}"
    missing = sorted(public - strict - NOT_STRICT)
    assert not missing, f"public modules missing from mypy's strict list: {missing}"


def test_no_module_of_the_package_is_exempt_from_checking():
    """py.typed ships over checked code: no override of pyproject.toml ignores the errors
    of a warprec module or leaves the bodies of its unannotated functions unchecked."""
    exempt = [modules for modules, override in _mypy_overrides()
              if any(m == "warprec" or m.startswith("warprec.") for m in modules)
              and (override.get("ignore_errors") or override.get("check_untyped_defs") is False)]
    assert not exempt, f"warprec modules exempt from mypy's checks: {exempt}"
