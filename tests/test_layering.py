"""The package's layering rules, checked on the source with :mod:`ast` (nothing is imported).

(a) No module reaches into another module's private names: ``from .data import _codes``,
    ``from warprec.scoring import _as_csr`` and ``data._codes`` (an attribute of an
    imported warprec module) are violations. Importing a private *module* is fine
    (``from . import _validation``, ``from ._inputs import IdMap``,
    ``from ._kernels import _flags``), and so are dunder names (``__version__``). A
    helper that several modules share is a public name (no leading underscore) of an
    internal module, documented there as internal API.

(b) ``warprec/_kernels/`` is the bottom layer. Its modules import only

    * NumPy and Numba (any of their submodules) and llvmlite (Numba's code generator,
      which the intrinsics of ``_kernels/prefetch.py`` use);
    * the standard-library modules ``__future__``, ``functools``, ``math`` and ``typing``;
    * each other: relative imports that resolve inside ``warprec._kernels``.

    Nothing else: no other part of warprec (``from .. import``, ``import warprec...``),
    no SciPy, pandas or tqdm, no other standard-library module.

Numba's own private API is checked separately (tests/test_numba_private_api.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "warprec"

#: What modules under _kernels/ may import from outside warprec._kernels (top-level names).
KERNEL_THIRD_PARTY = frozenset({"numpy", "numba", "llvmlite"})
KERNEL_STDLIB = frozenset({"__future__", "functools", "math", "typing"})


# --------------------------------------------------------------------------------------
# the package's modules
# --------------------------------------------------------------------------------------
def _module_name(relative: Path) -> str:
    parts = ["warprec", *relative.with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def package_modules(root: Path = PACKAGE) -> dict[str, Path]:
    """{dotted module name: path} of every module and package of warprec."""
    return {_module_name(path.relative_to(root)): path for path in sorted(root.rglob("*.py"))}


MODULES = package_modules()


def _is_package(relative: str) -> bool:
    return relative == "__init__.py" or relative.endswith("/__init__.py")


def _resolve(module: str, relative: str, node: ast.ImportFrom) -> str:
    """The absolute name of the module an ``ImportFrom`` in ``module`` reads from."""
    if node.level == 0:
        return node.module or ""
    package = module.split(".")
    if not _is_package(relative):
        package = package[:-1]
    base = package[:len(package) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _in_warprec(module: str) -> bool:
    return module == "warprec" or module.startswith("warprec.")


# --------------------------------------------------------------------------------------
# rule (a): no private names of other modules
# --------------------------------------------------------------------------------------
def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr}"
    return None


def private_reaches(relative: str, source: str, modules=MODULES) -> list[str]:
    """Every reach of the module at ``relative`` (path under warprec/, '/'-separated) into
    another warprec module's private names, as ``"line N: module.name"``."""
    module = _module_name(Path(relative))
    tree = ast.parse(source)
    found = []
    bound = {}  # local name -> warprec module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _resolve(module, relative, node)
            if not _in_warprec(target):
                continue
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                if submodule in modules:
                    bound[alias.asname or alias.name] = submodule
                elif _is_private(alias.name) and target != module:
                    found.append(f"line {node.lineno}: {target}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _in_warprec(alias.name):
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound[alias.name.split(".")[0]] = alias.name.split(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            head = _dotted(node.value)
            if head is None or head.split(".")[0] not in bound:
                continue
            first, _, rest = head.partition(".")
            target = bound[first] + ("." + rest if rest else "")
            if target in modules and target != module and f"{target}.{node.attr}" not in modules:
                found.append(f"line {node.lineno}: {target}.{node.attr}")
    return sorted(set(found), key=lambda text: int(text.split(":")[0].split()[1]))


def _relative(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


@pytest.mark.parametrize("path", sorted(MODULES.values()), ids=_relative)
def test_no_module_reaches_into_private_names_of_another(path):
    relative = _relative(path)
    reaches = private_reaches(relative, path.read_text(encoding="utf-8"))
    assert not reaches, (
        f"warprec/{relative} uses private names of other modules: {reaches}. Make each a "
        f"public name (no leading underscore) of an internal module, documented there as "
        f"internal API, and import that.")


@pytest.mark.parametrize("relative, source, expected", [
    ("_base.py", "from .data import _codes\n", ["line 1: warprec.data._codes"]),
    ("dask.py", "from warprec.scoring import topk_items, _as_csr\n",
     ["line 1: warprec.scoring._as_csr"]),
    ("cli.py", "def f():\n    from .data import _check_path as check\n",
     ["line 2: warprec.data._check_path"]),
    ("_kernels/ccl.py", "from .train import _close_slice\n",
     ["line 1: warprec._kernels.train._close_slice"]),
    ("_kernels/ccl.py", "from ..data import _codes\n", ["line 1: warprec.data._codes"]),
    ("splitting.py", "from . import data\nx = data._codes\n", ["line 2: warprec.data._codes"]),
    ("splitting.py", "import warprec.data\nx = warprec.data._codes(1)\n",
     ["line 2: warprec.data._codes"]),
    ("splitting.py", "from ._kernels import metrics as km\nx = km._private\n",
     ["line 2: warprec._kernels.metrics._private"]),
    # allowed: private modules, public names of private modules, dunders, own names
    ("model.py", "from . import _validation, __version__\n", []),
    ("model.py", "from ._inputs import IdMap\nfrom ._kernels import _flags\n", []),
    ("model.py", "from ._kernels._flags import JIT\nimport warprec._inputs\n", []),
    ("model.py", "from . import _validation\nx = _validation.holdout\n", []),
    ("model.py", "import numpy as np\nx = np._NoValue\n", []),
    ("model.py", "class A:\n    def f(self):\n        return self._x\n", []),
])
def test_private_reaches_finds_violations(relative, source, expected):
    """The checker itself: it must flag each kind of reach and nothing allowed."""
    assert private_reaches(relative, source) == expected


# --------------------------------------------------------------------------------------
# rule (b): _kernels/ is the bottom layer
# --------------------------------------------------------------------------------------
def kernel_import_violations(relative: str, source: str) -> list[str]:
    """Imports of the module at ``relative`` (under warprec/_kernels/) that rule (b)
    forbids, as ``"line N: module"``."""
    module = _module_name(Path(relative))
    allowed = KERNEL_THIRD_PARTY | KERNEL_STDLIB
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            targets = [_resolve(module, relative, node)]
        else:
            continue
        for target in targets:
            top = target.split(".")[0]
            if target == "warprec._kernels" or target.startswith("warprec._kernels."):
                continue
            if top in allowed and not _in_warprec(target):
                continue
            found.append(f"line {node.lineno}: {target}")
    return found


KERNEL_FILES = sorted((PACKAGE / "_kernels").rglob("*.py"))


def test_kernels_exist():
    assert len(KERNEL_FILES) > 10  # the glob found the kernel layer


@pytest.mark.parametrize("path", KERNEL_FILES, ids=_relative)
def test_kernels_import_only_numpy_numba_and_each_other(path):
    relative = _relative(path)
    violations = kernel_import_violations(relative, path.read_text(encoding="utf-8"))
    assert not violations, (
        f"warprec/{relative} imports {violations}; _kernels/ may import only "
        f"{sorted(KERNEL_THIRD_PARTY)}, the standard-library modules "
        f"{sorted(KERNEL_STDLIB)} and its own modules.")


@pytest.mark.parametrize("source, expected", [
    ("from .. import data\n", ["line 1: warprec"]),
    ("from ..scoring import topk_items\n", ["line 1: warprec.scoring"]),
    ("from warprec._inputs import check_k\n", ["line 1: warprec._inputs"]),
    ("import warprec\n", ["line 1: warprec"]),
    ("import scipy.sparse as sp\n", ["line 1: scipy.sparse"]),
    ("def f():\n    import pandas\n", ["line 2: pandas"]),
    ("import os\n", ["line 1: os"]),
    # allowed
    ("import numpy as np\nfrom numba import njit\nfrom numba.core import cgutils\n", []),
    ("from llvmlite import ir\nimport math\nfrom typing import NamedTuple\n", []),
    ("from __future__ import annotations\nimport functools\n", []),
    ("from .rng import mix64\nfrom . import config\nfrom ._flags import JIT\n", []),
    ("from warprec._kernels.rng import mix64\n", []),
])
def test_kernel_import_violations_finds_violations(source, expected):
    """The checker itself: it must flag each forbidden import and nothing allowed."""
    assert kernel_import_violations("_kernels/train.py", source) == expected
