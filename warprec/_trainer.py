"""The trainer: the kernel's inputs built in one place, and the epoch loop.

:func:`kernel_inputs` turns training positives and a :class:`~warprec._plan.TrainingConfig`
into the training kernel's typed tuples (``warprec._kernels.train``); ``fit``,
``partial_fit``, ``fold_in`` and the tests that drive the kernel build them here and
nowhere else. :class:`Trainer` runs the epochs of a fit: the epoch order, the kernel call
on the model's threads, the divergence check, the history, validation checks, early
stopping with its best-epoch restore, learning-rate drops on a plateau, the callback and the
progress bar. :func:`compile_kernel` compiles a fit's epoch kernel before its first epoch
(and the tuner's before its clock starts); :class:`CompileWatch` tells the user when
Numba compiles (a cache miss: the first use of a kernel variant on a machine).

The trainer works on the estimator's public fitted attributes (``epochs_done_``,
``history_``, ``validation_scores_``, ``learning_rate_drops_``, ``best_epoch_``, the factor
arrays) and on a :class:`Target` the estimator hands it: the arrays an epoch updates and how
to refresh derived arrays after an update (the hybrid model's sums of feature rows).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import scipy.sparse as sp
from numba.core import event as numba_event

from . import _validation
from ._defaults import MAX_LEARNING_RATE_DROPS, PREFETCH_ABOVE_BYTES, UNIT_NORM_TOLERANCE
from ._kernels import negatives as _negatives
from ._kernels import order as _order
from ._kernels import train as _train
from ._kernels.aligned import aligned_full
from ._kernels.scores import score_bound
from ._loss_specs import LossSpec
from ._plan import TrainingConfig
from ._threads import run_in_threads
from .exceptions import DivergenceError
from .weights import RankWeighting, resolve_rank_weighting

__all__ = ["COMPILE_MESSAGE", "CompileWatch", "KernelInputs", "Target", "Trainer",
           "compile_configuration", "compile_kernel", "kernel_inputs", "kernel_mode",
           "kernel_settings", "outgrows_cache",
           "sample_weights", "grades", "negative_cdf",
           "epoch_order", "fold_in_epochs", "usable", "finite", "unit_rows", "record_epoch"]

log = logging.getLogger(__name__)
_F32_MAX = float(np.finfo(np.float32).max)

#: What a progress bar and the log say while Numba compiles a kernel.
COMPILE_MESSAGE = "compiling kernels (once)"
#: The description of fit's progress bar.
PROGRESS_DESC = "warprec fit"


@dataclass(frozen=True)
class KernelInputs:
    """Everything one training-kernel call takes but the parameters and the order."""

    mode: _train.Mode
    positives: _train.Positives
    settings: _train.Settings
    work: _train.Work


def kernel_positives(matrix: sp.csr_matrix, weights: np.ndarray, grades: np.ndarray,
                     neg_cdf: np.ndarray) -> _train.Positives:
    """The kernel's view of CSR training positives (int64 row pointers whatever scipy
    chose, so that every data size runs one compiled specialisation)."""
    indptr = matrix.indptr.astype(np.int64)
    users = np.repeat(np.arange(matrix.shape[0], dtype=np.int32), np.diff(indptr))
    filt = _negatives.positive_filter(
        indptr, matrix.indices, matrix.shape[1],
        _negatives.filter_words(matrix.shape[0], matrix.shape[1]))
    return _train.Positives(indptr, matrix.indices, users, weights, grades, neg_cdf, filt)


def kernel_settings(config: TrainingConfig, *, learning_rate: float, alpha: float,
                    negative_weight: float, dropout: float, weighting: RankWeighting,
                    seed: int) -> _train.Settings:
    """The kernel's :class:`~warprec._kernels.train.Settings` of a fit (or fold-in): the
    resolved rates, the configuration and the rank weighting, its random streams keyed by
    ``seed``."""
    return _train.Settings(
        learning_rate=np.float32(learning_rate), alpha=np.float32(alpha),
        max_norm=np.float32(config.max_norm), max_sampled=config.max_sampled,
        max_violators=config.max_violators, n_negatives=config.n_negatives,
        margin=np.float32(config.margin), negative_weight=np.float32(negative_weight),
        dropout=np.float32(dropout), temperature=np.float32(config.temperature),
        kos_k=config.kos_k, kos_n=config.kos_n, rank_table=weighting.table,
        top_fraction=float(weighting.top_fraction), normalize=bool(weighting.normalize),
        seed=seed, negative_sharing=config.negative_sharing,
        feature_negatives=float(config.feature_negatives))


def outgrows_cache(n_users: int, n_items: int, d: int,
                   limit: int = PREFETCH_ABOVE_BYTES) -> bool:
    """Whether float32 factors of ``d`` components for ``n_users`` users and ``n_items``
    items, with their Adagrad state, exceed ``limit`` bytes (then the kernel prefetches
    rows, see :func:`kernel_mode`)."""
    return 2 * 4 * d * (n_users + n_items) > limit


def kernel_mode(config: TrainingConfig, *, prefetch: bool = False, features: bool = False,
                freeze_items: bool = False) -> _train.Mode:
    """The kernel variant of a fit (``train.Mode``; ``train.epoch_kernel`` compiles it):
    the configuration's loss, rank estimate, schedule, max-norm and violators, and
    ``prefetch`` (the parameters outgrow the caches; for the losses that have it),
    ``features`` (the hybrid kernel) and ``freeze_items`` (fold-in); the cosine losses
    with ``negative_sharing > 1`` run the shared-negatives kernel."""
    spec = config.loss
    return _train.Mode(loss=spec.code, exact_rank=config.exact_rank, adagrad=config.adagrad,
                       clip=bool(config.max_norm),
                       prefetch=prefetch and spec.prefetch,
                       freeze_items=freeze_items, features=features,
                       violators=config.violators,
                       shared=spec.sphere and config.negative_sharing > 1)


def kernel_inputs(config: TrainingConfig, matrix: sp.csr_matrix, d: int, *,
                  weights: np.ndarray, grades: np.ndarray, neg_cdf: np.ndarray,
                  settings: _train.Settings, n_threads: int, prefetch: bool = False,
                  features: bool = False, freeze_items: bool = False) -> KernelInputs:
    """The kernel's mode, positives, settings and work arrays for training factors of
    ``d`` components on ``matrix`` with ``n_threads`` threads (``prefetch``: the
    parameters outgrow the caches; ``features``: the hybrid kernel; ``freeze_items``:
    fold-in, the item side read only)."""
    if features and config.violators:
        raise ValueError("max_violators > 1 is not available with side features yet; "
                         "set max_violators=1 or fit without features.")
    if config.feature_negatives > 0 and not features and not freeze_items:
        raise ValueError(f"feature_negatives={config.feature_negatives} draws negatives "
                         f"among items that share an item feature, which needs item side "
                         f"features: fit(..., item_features=...), or feature_negatives=0.")
    mode = kernel_mode(config, prefetch=prefetch, features=features,
                       freeze_items=freeze_items)
    positives = kernel_positives(matrix, weights, grades, neg_cdf)
    try:
        work = _train.make_work(mode, n_threads, d, matrix.shape[1],
                                config.work_entries, config.kos_n, config.negative_sharing)
    except MemoryError:
        raise ValueError(
            f"max_sampled={config.max_sampled} is too large: the training kernel's work "
            f"arrays hold max_sampled entries per thread and do not fit in memory. Lower "
            f"max_sampled (a few hundred draws estimate ranks among catalogues of tens of "
            f"thousands of items).") from None
    return KernelInputs(mode, positives, settings, work)


_WATCHES = threading.local()   # .active: the CompileWatch objects open in this thread


class CompileWatch(numba_event.Listener):
    """Watches Numba's compilations (``numba.core.event``'s ``"numba:compile"`` events,
    which fire on a cache miss only) while installed (``with watch:``): at the start of
    the first one it logs :data:`COMPILE_MESSAGE` at INFO (unless it runs inside another
    watch of the same thread, which has logged it) and shows it as the
    ``progress`` bar's description (``desc + ": " + COMPILE_MESSAGE``); when the
    compilations in progress have ended the description is ``desc`` again.
    ``seconds`` sums the wall time of the outermost compilations."""

    def __init__(self, progress: Any = None, desc: str = "") -> None:
        self.progress, self.desc = progress, desc
        self.seconds = 0.0
        self.compiled = False
        self._depth = 0
        self._tic = 0.0
        self._installed: Any = None
        self._outermost = True

    def on_start(self, event: Any) -> None:
        if self._depth == 0:
            if not self.compiled and self._outermost:
                log.info("%s", COMPILE_MESSAGE)
            self.compiled = True
            self._tic = time.perf_counter()
            if self.progress is not None:
                self.progress.set_description(f"{self.desc}: {COMPILE_MESSAGE}")
        self._depth += 1

    def on_end(self, event: Any) -> None:
        self._depth -= 1
        if self._depth == 0:
            self.seconds += time.perf_counter() - self._tic
            if self.progress is not None:
                self.progress.set_description(self.desc)

    def __enter__(self) -> CompileWatch:
        # (a watch inside another in this thread, e.g. the tuner's tiny fit, logs nothing)
        self._outermost = not getattr(_WATCHES, "active", 0)
        _WATCHES.active = getattr(_WATCHES, "active", 0) + 1
        self._installed = numba_event.install_listener("numba:compile", self)
        self._installed.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._installed.__exit__(*exc)
        self._installed = None
        _WATCHES.active -= 1


def compile_kernel(inputs: KernelInputs, params: Any) -> None:
    """Compile (or load from Numba's cache) the epoch kernel of ``inputs.mode`` for the
    types of these inputs, without training (``train.compile_kernel``: a slice on an
    empty order)."""
    _train.compile_kernel(inputs.mode, params, inputs.positives, inputs.settings,
                          inputs.work)


def compile_configuration(config: TrainingConfig, d: int, *, prefetch: bool = False,
                          features: bool = False, n_threads: int = 1) -> None:
    """Compile (or load) the epoch kernel a fit of ``config`` with ``d`` components
    (``prefetch``, ``features``: see :func:`kernel_mode`) will run, on tiny inputs built
    as a fit's are: the tuner compiles its search's variants this way before its clock
    starts."""
    n_users, n_items = 2, 3
    matrix = sp.csr_matrix(np.array([[1, 0, 1], [0, 1, 0]], dtype=np.float32))
    settings = kernel_settings(
        config, learning_rate=0.01, alpha=0.0, negative_weight=1.0, dropout=0.0,
        weighting=resolve_rank_weighting("harmonic", n_items), seed=0)
    inputs = kernel_inputs(config, matrix, d, weights=sample_weights(matrix, None),
                           grades=grades(matrix, config.loss),
                           neg_cdf=negative_cdf(matrix, "uniform"),
                           settings=settings, n_threads=n_threads, prefetch=prefetch,
                           features=features)
    ones = [aligned_full(shape, 1.0, np.float32) for shape in (
        (n_users, d), (n_items, d), (n_items,), (n_users, d), (n_items, d), (n_items,))]
    params: Any = _train.Parameters(*ones)
    if features:
        # (each user and item its indicator alone: the types of any hybrid model's)
        U, V = (sp.identity(n, dtype=np.float32, format="csr") for n in (n_users, n_items))
        params = _train.FeatureParameters(
            U.indptr.astype(np.int64), U.indices.astype(np.int32), U.data,
            V.indptr.astype(np.int64), V.indices.astype(np.int32), V.data, ones[0],
            ones[1], ones[2], ones[3], ones[4], ones[5], np.ones(n_users, np.float32),
            np.ones(n_items, np.float32), True, True, True, True)
    compile_kernel(inputs, params)


def epoch_order(sample_order: str, matrix: sp.csr_matrix, seed: int, epoch: int,
                out: np.ndarray | None = None, indptr: np.ndarray | None = None) -> np.ndarray:
    """Positions of ``matrix``'s positives in the order epoch ``epoch`` visits them
    (``"positives"`` or ``"users"``, see ``_kernels.order``), written into ``out`` if given;
    ``indptr``: ``matrix.indptr`` as int64, if the caller has it."""
    if out is None:
        out = np.empty(matrix.nnz, np.int64)
    if sample_order == "users":
        if indptr is None:
            indptr = matrix.indptr.astype(np.int64)
        users = np.empty(matrix.shape[0], np.int64)
        _order.shuffle(seed, epoch, users)
        _order.user_grouped_order(indptr, users, seed, epoch, out)
    else:
        _order.shuffle(seed, epoch, out)
    return out


def sample_weights(matrix: sp.csr_matrix, sample_weight: Any) -> np.ndarray:
    """``fit``'s ``sample_weight`` as one float32 weight per positive of ``matrix`` (in
    row-major order), or a clear error."""
    if sample_weight is None:
        return np.ones(matrix.nnz, dtype=np.float32)
    if isinstance(sample_weight, str):
        if sample_weight != "values":
            raise ValueError("sample_weight must be None, 'values', an array or a sparse "
                             f"matrix (got {sample_weight!r}).")
        w = matrix.data.astype(np.float64)
    elif sp.issparse(sample_weight):
        W = sp.csr_matrix(cast(Any, sample_weight), dtype=np.float64)
        if W.shape != matrix.shape:
            raise ValueError(f"sample_weight has shape {W.shape} but X has {matrix.shape}.")
        W.sum_duplicates()
        rows = np.repeat(np.arange(matrix.shape[0]), np.diff(matrix.indptr))
        w = np.asarray(W[rows, matrix.indices]).ravel()
        if W.nnz != matrix.nnz or np.count_nonzero(w) != np.count_nonzero(W.data):
            raise ValueError("sample_weight must have a value at exactly the positions of "
                             "X's positives (same sparsity pattern).")
    else:
        try:
            w = np.asarray(sample_weight, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError("sample_weight must be None, 'values', a 1-D array of numbers "
                            "or a sparse matrix (got a "
                            f"{type(sample_weight).__name__} that is not numeric).") \
                from None
        if w.shape != (matrix.nnz,):
            raise ValueError(f"sample_weight has shape {w.shape}; expected ({matrix.nnz},), "
                             "one weight per positive in row-major order.")
    bad = ~np.isfinite(w) | (w < 0) | (w > np.finfo(np.float32).max)
    if bad.any():
        raise ValueError("sample_weight must be finite and >= 0 (and below 3.4e38, float32) "
                         f"({int(bad.sum())} bad value(s)).")
    return w.astype(np.float32)


def grades(matrix: sp.csr_matrix, spec: LossSpec) -> np.ndarray:
    """The ordinal loss's grades (``matrix``'s values, whole numbers >= 1), else empty."""
    if spec.code != _train.LOSS_ORDINAL:
        return np.zeros(0, dtype=np.int64)
    grades = np.rint(matrix.data).astype(np.int64)
    if not np.allclose(grades, matrix.data) or grades.min() < 1:
        raise ValueError("loss='ordinal' needs graded positives: X's values must be whole "
                         "numbers >= 1 (e.g. ratings 1-5; unobserved items get grade 0). "
                         "Scale half-star ratings by 2 first.")
    return grades


def negative_cdf(matrix: sp.csr_matrix, negative_sampling: str) -> np.ndarray:
    """The cumulative item probabilities of popularity-drawn negatives (item counts + 1),
    else empty (uniform draws)."""
    if negative_sampling != "popularity":
        return np.zeros(0, dtype=np.float64)
    counts = np.bincount(matrix.indices, minlength=matrix.shape[1]).astype(np.float64) + 1.0
    cdf = np.cumsum(counts)
    return cdf / cdf[-1]


def fold_in_epochs(inputs: KernelInputs, params: _train.Parameters, n_epochs: int, seed: int,
                   n_threads: int) -> int | None:
    """Fold-in's epochs: row by row, each row's positives in an order of its own (so that
    the first row's draws and order do not depend on the rows after it); returns the
    epoch that diverged, or None."""
    indptr = inputs.positives.indptr
    n_rows = indptr.size - 1
    order = np.empty(inputs.positives.indices.size, np.int64)
    rows = np.arange(n_rows, dtype=np.int64)
    for epoch in range(n_epochs):
        _order.user_grouped_order(indptr, rows, seed, epoch, order)
        ok = _train.train_epoch(inputs.mode, params, inputs.positives, inputs.settings,
                                inputs.work, order, epoch, run_in_threads)
        if not ok:
            return epoch
    return None


def finite(U: np.ndarray, V: np.ndarray, b: np.ndarray) -> bool:
    """Whether factors and biases are all finite."""
    return bool(np.isfinite(U).all() and np.isfinite(V).all() and np.isfinite(b).all())


def usable(U: np.ndarray, V: np.ndarray, b: np.ndarray) -> bool:
    """Finite parameters whose float32 scores cannot overflow: the bound ``d max|U| max|V|
    + max|b|`` on ``|f(u, i)|`` is below float32's maximum (a NaN or infinite parameter
    makes the bound NaN or inf, which never compares below it)."""
    U, V, b = (np.ascontiguousarray(a, dtype=np.float32) for a in (U, V, b))
    return float(score_bound(U, V, b)) < _F32_MAX


def unit_rows(matrix: np.ndarray, tolerance: float = 0.0) -> None:
    """Rescale to unit norm, in place, the non-zero rows of a float32 matrix whose norm is
    off by more than ``tolerance``. After a cosine loss's epoch (``UNIT_NORM_TOLERANCE``):
    Hogwild threads that update one row at the same time can leave it off unit (each
    writes a unit row, their elements interleave); rows the kernel left at unit norm are
    not touched, so one-thread fits stay bit for bit."""
    norms = np.linalg.norm(matrix, axis=1)
    off = np.flatnonzero((np.abs(norms - 1.0) > tolerance) & (norms > 0))
    if off.size:
        matrix[off] /= norms[off, None]


def record_epoch(model: Any, info: dict[str, Any]) -> None:
    """Count one more epoch trained on ``model`` and append its statistics ``info`` (the
    entry is the same dict object, so what is added to it later is in ``history_`` too).
    The one place the epoch count advances: the trainer here and the Dask driver
    (:mod:`warprec._dask_fit`) call it."""
    model.epochs_done_ += 1
    model.history_.append(info)


@dataclass(frozen=True)
class Target:
    """What the trainer trains: ``arrays()`` the arrays an epoch updates, by fitted
    attribute name (what early stopping snapshots and restores); ``parameters()`` the
    kernel's view of them; ``refresh()`` recomputes derived arrays after they change (the
    hybrid model's factors as sums of feature rows), None when there are none."""

    arrays: Callable[[], dict[str, np.ndarray]]
    parameters: Callable[[], Any]
    refresh: Callable[[], None] | None = None


class Trainer:
    """The epoch loop of a fit: ``config.epochs`` epochs (fewer with early stopping or a
    callback that returns False) on ``model``.

    Parameters
    ----------
    model : WARPFactorizer
        Its fitted attributes are read and updated as training goes (a callback sees the
        model of the epoch just trained).
    config : TrainingConfig
        With ``epochs``, ``early_stopping`` and ``validation_interval`` resolved.
    inputs : KernelInputs
    target : Target
    matrix : scipy.sparse.csr_matrix
        The positives trained on (after any validation hold-out).
    monitor : warprec._validation.Monitor or None
        Scores the validation positives; None without validation.
    """

    def __init__(self, model: Any, config: TrainingConfig, inputs: KernelInputs,
                 target: Target, matrix: sp.csr_matrix,
                 monitor: _validation.Monitor | None) -> None:
        self.model, self.config, self.inputs = model, config, inputs
        self.target, self.matrix, self.monitor = target, matrix, monitor

    def run(self, callback: Callable[[Any, dict], Any] | None, progress: Any) -> None:
        """Train; raises :class:`~warprec.exceptions.DivergenceError` on divergence.

        The epoch kernel is compiled (or loaded from Numba's cache) before the first
        epoch, so that no epoch's ``seconds`` include it; while Numba compiles anything
        (the kernel, or the validation's kernels at the first check) ``progress`` says so
        (:class:`CompileWatch`)."""
        with CompileWatch(progress, PROGRESS_DESC) as watch:
            self._compile()
            if watch.compiled:
                log.debug("compiled the %s training kernels in %.1f s",
                         self.config.loss.name, watch.seconds)
                progress.reset()   # (the bar's rate counts from here)
            self._epochs(callback, progress)

    def _compile(self) -> None:
        """Compile (or load) the kernels of an epoch: the epoch kernel, the epoch order's
        and the divergence check's, on empty or tiny inputs (nothing trains)."""
        model = self.model
        compile_kernel(self.inputs, self.target.parameters())
        epoch_order(model.sample_order_, self.matrix[:0], 0, 0,
                    indptr=np.zeros(1, np.int64))
        usable(model.user_factors_[:1], model.item_factors_[:1], model.item_biases_[:1])

    def _epochs(self, callback: Callable[[Any, dict], Any] | None, progress: Any) -> None:
        model, config, monitor = self.model, self.config, self.monitor
        inputs = self.inputs
        best = _validation.BestSnapshot()
        stopping = monitor is not None and bool(config.early_stopping)
        order = None
        interval = config.validation_interval   # (an int when there is a monitor)
        drops_left = (MAX_LEARNING_RATE_DROPS if stopping and model.learning_rate_drop_ < 1
                      else 0)
        replay = dict(config.drop_epochs)
        settings = self._dropped_rate(inputs.settings)
        for done in range(1, int(config.epochs) + 1):
            epoch = model.epochs_done_
            if epoch in replay:   # the refit's replay of the validated pass
                model.learning_rate_drops_.append((epoch, replay[epoch]))
                settings = self._dropped_rate(settings)
            order = epoch_order(model.sample_order_, self.matrix, model.seed_, epoch, order,
                                inputs.positives.indptr)
            params = self.target.parameters()
            tic = time.perf_counter()
            ok = _train.train_epoch(inputs.mode, params, inputs.positives, settings,
                                    inputs.work, order, epoch, run_in_threads)
            if self.target.refresh is not None:
                self.target.refresh()
            if config.loss.sphere:   # (rows two threads wrote at once)
                unit_rows(model.user_factors_, UNIT_NORM_TOLERANCE)
                unit_rows(model.item_factors_, UNIT_NORM_TOLERANCE)
            seconds = time.perf_counter() - tic
            if not ok or not usable(model.user_factors_, model.item_factors_,
                                    model.item_biases_):
                raise self._divergence(epoch, ok)
            info = epoch_info(epoch, seconds, inputs.work.stats)
            info["learning_rate"] = float(settings.learning_rate)
            record_epoch(model, info)
            # (a check every ``interval`` epochs of this call, and after its last epoch)
            checked = monitor is not None and (done % int(interval) == 0
                                               or done == config.epochs)
            if checked and monitor is not None:
                info["validation"] = monitor(model.user_factors_, model.item_factors_,
                                             model.item_biases_, epochs=model.epochs_done_)
                model.validation_scores_.append(info["validation"])
                if stopping:
                    best.offer(info["validation"], model.epochs_done_, self.target.arrays())
            progress.update(1)
            if model.verbose:
                postfix = dict(loss=f"{info['loss']:.4g}",
                               trials=f"{info['mean_trials']:.2f}")
                if model.validation_scores_ and monitor is not None:
                    postfix[monitor.key] = f"{model.validation_scores_[-1]:.4f}"
                progress.set_postfix(postfix)
            log.debug("epoch %d: %s", epoch, info)
            if callback is not None and callback(model, info) is False:
                break
            if checked and stopping and \
                    model.epochs_done_ - best.epochs >= config.n_iter_no_change:
                if not drops_left:
                    if model.epochs_done_ >= config.min_epochs:
                        break
                    continue   # (a validated pass that must reach min_epochs)
                # a plateau: on from the best epoch at a lower rate
                drops_left -= 1
                self._restore(best)
                model.learning_rate_drops_.append(
                    (best.epochs, self._rate_now() * model.learning_rate_drop_))
                settings = self._dropped_rate(settings)
        if stopping and best.epochs is not None:
            self._restore(best)
            model.best_epoch_ = best.epochs
            # (a drop after which no epoch scored better is undone with the restore)
            model.learning_rate_drops_ = [(e, rate) for e, rate in model.learning_rate_drops_
                                          if e < best.epochs]

    def _restore(self, best: _validation.BestSnapshot) -> None:
        """Back to the arrays of ``best`` and its epoch count."""
        best.restore(self.target.arrays())
        self.model.epochs_done_ = best.epochs
        if self.target.refresh is not None:
            self.target.refresh()

    def _rate_now(self) -> float:
        """The learning rate after the drops so far: the last drop's, else
        ``learning_rate_``."""
        drops = self.model.learning_rate_drops_
        return drops[-1][1] if drops else self.model.learning_rate_

    def _dropped_rate(self, settings: _train.Settings) -> _train.Settings:
        """``settings`` with the learning rate after the drops so far."""
        return settings._replace(learning_rate=np.float32(self._rate_now()))

    def _divergence(self, epoch: int, ok: bool) -> DivergenceError:
        model = self.model
        what = ("an update made parameters NaN or infinite"
                if not ok or not finite(model.user_factors_, model.item_factors_,
                                        model.item_biases_) else
                "the parameters grew so large that scores overflow float32")
        return DivergenceError(
            f"Training diverged in epoch {epoch}: {what}. The parameters "
            f"stay finite, but do not use them for recommendations. "
            f"Lower learning_rate (now {model.learning_rate}"
            + (f", {model.learning_rate_:.4g}" if model.learning_rate == "auto" else "")
            + ")"
            + (", add alpha regularisation" if not model.alpha_ else "")
            + (" or use learning_schedule='adagrad'" if not self.config.adagrad else "")
            + (f"; learning_rate * alpha = {model.learning_rate_ * model.alpha_:.3g}"
               " >= 1 makes the weight decay grow the factors: lower alpha"
               if model.learning_rate_ * model.alpha_ >= 1 else "")
            + "; very large init_scale, sample weights or rank weights also "
            "cause this.", epoch)


def epoch_info(epoch: int, seconds: float, stats: np.ndarray) -> dict[str, Any]:
    """An epoch's ``history_`` entry from the kernel's per-thread statistics."""
    # summed in Python: right after an epoch the caches hold the epoch's data, and a numpy
    # reduction's setup, run from cold caches, costs more than summing the few values
    total = [sum(column) for column in zip(*stats.tolist())]
    samples = total[_train.STAT_SAMPLES]
    n = max(samples, 1)
    return dict(epoch=int(epoch), seconds=float(seconds),
                loss=total[_train.STAT_LOSS] / n, rank_loss=total[_train.STAT_RANK_LOSS] / n,
                updates=int(total[_train.STAT_UPDATES]),
                mean_trials=total[_train.STAT_TRIALS] / n,
                samples=int(samples))


class _NoProgress:
    def update(self, n: int) -> None:
        pass

    def set_description(self, desc: str) -> None:
        pass

    def reset(self) -> None:
        pass

    def set_postfix(self, postfix: dict) -> None:
        pass

    def close(self) -> None:
        pass


def progress_bar(total: int, verbose: bool) -> Any:
    """A tqdm bar over ``total`` epochs when ``verbose``, else a silent stand-in."""
    if not verbose:
        return _NoProgress()
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=PROGRESS_DESC, unit="epoch")
