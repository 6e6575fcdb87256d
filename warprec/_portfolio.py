"""The tuner's zero-shot start: strong configurations ranked by the data's shape.

A search that draws configurations at random spends its first rungs on configurations no
data set has ever liked. :func:`warprec.tune` instead starts with a small portfolio of
configurations that each won on some set of the family warprec's defaults are measured on
(``benchmarks/results/ablation.md``), in the order that the family set most like the
data ranks them (nearest neighbour on :func:`shape`, as FLAML's zero-shot AutoML chooses
configurations from a portfolio by the data's meta-features: Kayali & Wang 2022, "Mining
robust default configurations for resource-constrained AutoML").
Only the order of the trials comes from the table: every configuration still competes
on the data's own validation split, so a wrong guess costs time, never quality.
"""

from __future__ import annotations

import math
import types
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["PORTFOLIO", "FAMILY", "shape", "matrix_shape", "nearest", "ranked"]

#: The portfolio: name -> parameters (the others keep the estimator's defaults). Each
#: beat the defaults on some set of the family.
PORTFOLIO: Mapping[str, Mapping[str, Any]] = types.MappingProxyType({
    "ccl, d=128, dropout": types.MappingProxyType(
        {"loss": "ccl", "n_components": 128, "dropout": 0.1}),
    "d=128, violators": types.MappingProxyType(
        {"n_components": 128, "max_violators": 10, "max_sampled": 300}),
    "violators": types.MappingProxyType({"max_violators": 10}),
    "softmax": types.MappingProxyType({"loss": "softmax"}),
})

#: The family: name -> ``(users, items, positives)`` of its training matrix and the
#: NDCG@10 of each portfolio configuration over the defaults' (mean of seeds 1 and 2,
#: benchmarks/results/ablation.md; absent where not measured).
FAMILY: Mapping[str, tuple[tuple[int, int, int], Mapping[str, float]]] = \
    types.MappingProxyType({
        "ml100k": ((942, 1_416, 44_679), {
            "ccl, d=128, dropout": 1.017, "d=128, violators": 1.026, "violators": 1.027,
            "softmax": 1.048}),
        "ml-latest-small": ((609, 5_742, 39_105), {
            "ccl, d=128, dropout": 0.964, "d=128, violators": 0.965, "violators": 0.968,
            "softmax": 1.025}),
        "amazon-book": ((70_679, 24_915, 652_514), {
            "ccl, d=128, dropout": 1.281, "d=128, violators": 1.082, "violators": 1.046,
            "softmax": 0.978}),
        "synthetic-longtail": ((8_000, 25_000, 83_237), {
            "ccl, d=128, dropout": 0.982, "d=128, violators": 1.057, "violators": 0.969,
            "softmax": 0.667}),
        "synthetic-dense": ((20_000, 2_000, 408_034), {
            "ccl, d=128, dropout": 0.974, "d=128, violators": 1.004, "violators": 1.000,
            "softmax": 0.932}),
        "synthetic-short": ((60_000, 10_000, 504_180), {
            "ccl, d=128, dropout": 0.984, "d=128, violators": 1.040, "violators": 1.014}),
    })


def shape(users: int, items: int, positives: int) -> np.ndarray:
    """The meta-features of a training matrix: ``log10`` of its users, of its positives per
    user and of its positives per item (its items and density follow from these)."""
    users, items, positives = max(users, 1), max(items, 1), max(positives, 1)
    return np.log10([users, positives / users, positives / items])


def matrix_shape(matrix: sp.csr_matrix) -> np.ndarray:
    """:func:`shape` of the users and items that have positives in ``matrix`` (CSR)."""
    users = int(np.count_nonzero(np.diff(matrix.indptr)))
    items = int(np.unique(matrix.indices).size)
    return shape(users, items, int(matrix.nnz))


def nearest(point: np.ndarray) -> str:
    """The family set whose :func:`shape` is closest (Euclidean) to ``point``."""
    return min(FAMILY, key=lambda name: float(np.linalg.norm(shape(*FAMILY[name][0]) - point)))


def ranked(matrix: sp.csr_matrix, space: Sequence[Mapping[str, Any]],
           allowed: Any) -> list[dict[str, Any]]:
    """The portfolio's configurations that ``space`` can give (``allowed(params, sub)``
    says whether sub-space ``sub`` holds them), best first by the ratios of the
    :func:`nearest` family set (a configuration it has no ratio for comes after those it
    has, by its mean ratio over the family)."""
    ratios = FAMILY[nearest(matrix_shape(matrix))][1]

    def order(name: str) -> tuple[float, float]:
        known = [r[name] for _, r in FAMILY.values() if name in r]
        mean = sum(known) / len(known) if known else math.nan
        return (-ratios.get(name, -math.inf), -mean)

    return [dict(PORTFOLIO[name]) for name in sorted(PORTFOLIO, key=order)
            if any(allowed(PORTFOLIO[name], sub) for sub in space)]
