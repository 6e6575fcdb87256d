"""Hyperparameter search for :class:`warprec.WARPFactorizer` within a wall-time budget.

:func:`tune` trains the estimator's default parameters with early stopping to their
best epoch, then tries a portfolio of configurations ranked by the data's shape (the
zero-shot start, :mod:`warprec._portfolio`) and samples further ones from a search space,
running successive halving
on them (Jamieson & Talwalkar 2016; the repeated brackets of Hyperband, Li et al. 2018):
every configuration of a bracket trains with early stopping for a few epochs, the best
third trains longer, and so on, until the time budget (which includes the final refit on
all the data; large data keep the chosen trial's model instead) is spent.
Every trial holds out the same validation positives (or, with ``cold_start``, the same
whole items or users, ranked from their features). The best configuration replaces
the defaults only if its per-user validation gain over them is larger than its noise.

References
----------
K. Jamieson and A. Talwalkar, "Non-stochastic best arm identification and
hyperparameter optimization", AISTATS 2016.
L. Li, K. Jamieson, G. DeSalvo, A. Rostamizadeh and A. Talwalkar, "Hyperband: a novel
bandit-based approach to hyperparameter optimization", JMLR 18(185), 2018.
"""

from __future__ import annotations

import copy
import itertools
import logging
import math
import numbers
import time
import types
import warnings
from dataclasses import dataclass, field
from statistics import NormalDist
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast
from numbers import Real

import numpy as np

from . import _cold_tune, _portfolio, _validation
from ._clock import WallClock, WorkClock, feature_rows
from ._inputs import POSITIVE_INT, RANDOM_STATE, Interval, Options, validate_params
from ._plan import check_params, resolve_epochs, training_input
from ._state import draw_seed
from ._threads import resolve_threads
from ._trainer import (CompileWatch, compile_configuration, epoch_order, kernel_mode,
                       outgrows_cache)
from ._defaults import FIRST_RUNG_EPOCHS, REDUCTION_FACTOR, TUNE_REFIT_MARGIN, TUNE_SWITCH_Z
from .exceptions import DivergenceError, WarprecWarning

__all__ = ["SEARCH_SPACE", "WARP_SEARCH_SPACE", "CCL_SEARCH_SPACE", "FEATURE_SEARCH_SPACE",
           "FIRST_RUNG_EPOCHS",
           "REDUCTION_FACTOR", "TuneResult", "tune"]

if TYPE_CHECKING:
    from ._typing import ConstraintSpec, FeatureData, InteractionData, RandomState

log = logging.getLogger(__name__)

#: The search space of the WARP loss (the default ``loss="warp"``): parameter name -> a
#: list of choices (drawn uniformly) or ``("log-uniform", low, high)`` (``exp(U(log low,
#: log high))``, rounded to 4 significant digits). Read-only; pass
#: ``search_space={**WARP_SEARCH_SPACE, ...}`` to extend it.
#:
#: ================  ===========================================
#: learning_rate     log-uniform in [0.005, 0.1]
#: alpha             0, 0.0003, 0.001, 0.003, 0.01 or 0.03
#: max_sampled       10, 30, 100 or 300
#: n_components      32, 64 or 128
#: rank_weighting    "harmonic", "log" or "auc"
#: max_violators     1 or 10
#: ================  ===========================================
WARP_SEARCH_SPACE = types.MappingProxyType({
    "learning_rate": ("log-uniform", 0.005, 0.1),
    "alpha": [0.0, 0.0003, 0.001, 0.003, 0.01, 0.03],
    "max_sampled": [10, 30, 100, 300],
    "n_components": [32, 64, 128],
    "rank_weighting": ["harmonic", "log", "auc"],
    "max_violators": [1, 10],
})

#: The search space of the cosine contrastive loss (``loss="ccl"``);
#: ``tune(X, search_space=CCL_SEARCH_SPACE)`` searches it alone (its trials compete with
#: the WARP defaults like any other).
#:
#: ================  ===========================================
#: loss              "ccl"
#: learning_rate     log-uniform in [0.03, 0.3]
#: negative_weight   10, 30, 100 or "auto"
#: margin            0.6, 0.8 or 0.9
#: n_negatives       100, 200 or 500
#: n_components      32, 64 or 128
#: dropout           0 or 0.1
#: ================  ===========================================
CCL_SEARCH_SPACE = types.MappingProxyType({
    "loss": ["ccl"],
    "learning_rate": ("log-uniform", 0.03, 0.3),
    "negative_weight": [10.0, 30.0, 100.0, "auto"],
    "margin": [0.6, 0.8, 0.9],
    "n_negatives": [100, 200, 500],
    "n_components": [32, 64, 128],
    "dropout": [0.0, 0.1],
})

#: The default search space of :func:`tune`: both losses, each configuration drawn from
#: one of the two dicts (chosen uniformly), so that each loss's parameters stay with it.
#: On amazon-book the cosine loss's configurations win by a wide margin; elsewhere the
#: WARP defaults or a WARP configuration do (benchmarks/README.md).
SEARCH_SPACE = (WARP_SEARCH_SPACE, CCL_SEARCH_SPACE)

#: The default search space of :func:`tune` with side features: the hybrid model trains
#: WARP with one violator per positive, so the WARP dict without ``max_violators``,
#: and the side features' weight against the indicator features (``feature_weight``;
#: measured in benchmarks/results/cold_start.md).
FEATURE_SEARCH_SPACE = (types.MappingProxyType({
    **{name: spec for name, spec in WARP_SEARCH_SPACE.items() if name != "max_violators"},
    "feature_weight": [0.1, 0.3, 1.0],
}),)

#: WARPFactorizer parameters that tune sets itself (not searchable).
_CONTROLLED = {
    "epochs": "the epochs come from early stopping (at most max_epochs)",
    "early_stopping": "every trial trains with early stopping",
    "validation_fraction": "pass validation_fraction= to tune",
    "n_iter_no_change": "pass n_iter_no_change= to tune",
    "learning_rate_drop": "trials train at one learning rate (the refit repeats a trial's "
                          "epoch count, not a schedule)",
    "validation_metric": "pass metric= to tune",
    "n_threads": "pass n_threads= to tune",
    "random_state": "pass random_state= to tune",
    "verbose": "pass verbose= to tune",
}
_LOG_UNIFORM = "log-uniform"


@dataclass
class TuneResult:
    """What :func:`tune` found.

    Attributes
    ----------
    best_params : dict
        The chosen configuration (see :func:`tune`): a value for every parameter of the
        search space plus ``epochs``, the chosen trial's best epoch count
        (``best_epoch_`` on the training part; on small data, when the budget ended the
        defaults' trial before early stopping did and the defaults are chosen, the epochs
        that fit the rest of the budget on all of X, up to the larger of 50
        (``AUTO_EPOCHS``) and the best epoch), and ``early_stopping=False`` (the epochs
        are chosen). ``WARPFactorizer(**best_params)`` is the configuration of
        ``best_model``; on large data its ``fit(X)`` trains on all of X, which the
        tuner's model did not (see ``best_model``).
    best_score : float
        The chosen trial's validation score (``metric`` of its best epoch): its largest
        ``score`` in ``trials``. It is below ``trials["score"].max()`` when the defaults
        were kept against a configuration whose gain was within the noise.
    metric : str
        The validation metric, ``"<name>@<k>"``.
    best_model : WARPFactorizer
        A ``WARPFactorizer(**best_params, n_threads=n_threads,
        random_state=random_state)``. On data where the estimator early-stops by default
        (``early_stopping="auto"``: at least 20,000 users with 2 or more positives), it is
        the chosen trial's model at its best epoch, as the estimator's own early stopping
        leaves a model: trained on X without the validation positives, which are in its
        ``train_matrix_`` (so ``recommend`` excludes them) but not trained on; they are
        at most ``validation_fraction`` of the positives of 10,000 users, and a refit
        would take as long as the trial. On smaller data it is fitted on all of X
        (training and validation positives), without early stopping.
    trials : pandas.DataFrame
        One row per trial evaluation (a trial is evaluated once per rung it reaches), in
        the order they ran; the first row is the defaults trial. Columns: ``trial``
        (configuration number, 0 for the defaults), ``bracket``, ``rung``, one column per
        search-space parameter (of any of its dicts; missing, NA, in the rows of a trial
        drawn from a dict without it), ``max_epochs`` (the rung's epoch cap), ``epochs_run``
        (epochs trained by this evaluation), ``epochs`` (the trial's best epoch count
        so far), ``score`` (the trial's best validation score so far), ``metric``
        (``metric``, the same in every row), ``seconds`` (the evaluation's seconds on the
        budget's ``clock``)
        and ``status``: ``"stopped"`` (early stopping ended it: ``n_iter_no_change``
        epochs without a new best, or a continuation that did not beat the trial's
        earlier best; the trial is not continued), ``"capped"`` (it reached the rung's
        ``max_epochs``), ``"out-of-time"`` (the budget ended it) or ``"diverged"``
        (:class:`~warprec.exceptions.DivergenceError`; the trial keeps the score it had
        before, NaN if none, and is not continued).
    elapsed_seconds : float
        Wall time of the :func:`tune` call, compilation and final refit included.
    compile_seconds : float
        Wall time of the call's first step, before any trial: compiling (or loading from
        Numba's cache) the kernels of every configuration the search can draw. It counts
        in the budget; no trial's time or estimate includes it.
    time_budget : float
        The budget given.
    clock : str
        The clock the budget was counted on (``"wall"`` or ``"work"``; see :func:`tune`).
    budget_seconds : float
        The seconds the call used on that clock: about ``elapsed_seconds`` on the wall
        clock; on the work clock the counted work of the trials and the final fit.
    random_state : int
        The seed used (drawn at random when ``random_state=None`` was given).
    cold_start : str or None
        ``tune``'s ``cold_start``: None when the trials validated on held-out positives
        of known users and items, ``"items"`` or ``"users"`` when they validated on
        held-out entities ranked from their features (``best_score`` and the trials'
        scores are then those of the held-out entities).
    best_trial : int
        The ``trial`` number of ``best_params`` (0: the defaults).
    """

    best_params: dict
    best_score: float
    metric: str
    best_model: object = field(repr=False)
    trials: object = field(repr=False)
    elapsed_seconds: float
    time_budget: float
    random_state: int
    best_trial: int = 0
    compile_seconds: float = 0.0
    clock: str = "wall"
    budget_seconds: float = 0.0
    cold_start: str | None = None


def tune(X: InteractionData, time_budget: float = 120.0, n_threads: int | None = None,
         random_state: RandomState = 0, *, metric: str = "ndcg@10",
         validation_fraction: float = 0.1,
         search_space: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
         max_epochs: int = 200, n_iter_no_change: int = 10,
         verbose: bool = False, user_features: FeatureData | None = None,
         item_features: FeatureData | None = None,
         clock: Literal["wall", "work"] = "wall",
         cold_start: Literal["items", "users"] | None = None) -> TuneResult:
    """Search WARPFactorizer hyperparameters within a wall-time budget.

    A trial trains ``WARPFactorizer(**config, early_stopping=True,
    learning_rate_drop=1.0, validation_fraction=validation_fraction,
    validation_metric=metric, ...)`` on X, and
    is worth its best epoch's validation score; its epoch count is that epoch. Every
    trial has the same ``random_state``, so every trial holds out the same validation
    positives: the estimator's (a seeded ``validation_fraction`` of the positives of at
    most 10,000 users, never a user's last one; see ``WARPFactorizer``'s
    ``early_stopping``). On data where the estimator early-stops by default (at least
    20,000 users with 2 or more positives) a trial checks every ``validation_interval_``
    epochs as the estimator's ``validation_interval="auto"`` does, and the chosen trial's
    model is the result (no refit; see ``TuneResult.best_model``). On smaller data a trial
    checks after every epoch and the chosen configuration is refit on all of X for its
    epoch count.

    The first trial is always the estimator's defaults (read from
    ``WARPFactorizer().get_params()``); it trains through the rungs below until early
    stopping ends it (or the budget, or its own maximum: the estimator's default
    ``epochs`` with early stopping, 100, if below ``max_epochs``) before any other
    configuration.
    The search is then successive halving in repeated brackets (Hyperband-style with one
    bracket shape). A bracket trains up to ``REDUCTION_FACTOR ** (n_rungs - 1)`` configurations
    (with ``n_rungs`` the number of caps ``FIRST_RUNG_EPOCHS * REDUCTION_FACTOR ** k``
    below ``max_epochs``, plus ``max_epochs``: 4 and 27 configurations with the
    defaults) for at most ``FIRST_RUNG_EPOCHS`` epochs each (rung 0), then continues
    the best ``1 / REDUCTION_FACTOR`` of them (with ``partial_fit``, from their best
    epoch) to ``REDUCTION_FACTOR`` times as many epochs (rung 1), and so on up to
    ``max_epochs``; a trial that early stopping ended is not continued but still
    competes. Then the next bracket starts with new configurations. With the default
    search space the first configurations are the zero-shot start: the configurations
    of a small portfolio that each beat the defaults on a set of the data family warprec
    is measured on (their other parameters at the estimator's defaults), ordered by how
    they did on the family set whose shape (users, positives per user and per item) is
    nearest to X's (``warprec._portfolio``). The others, and all of them with a given
    ``search_space``, are drawn by a numpy Generator seeded by ``random_state`` (a
    configuration is never drawn twice).

    The choice: the trial with the best validation score other than the defaults wins
    only if its mean per-user gain over the defaults (both at their best epochs, on the
    same validation users) exceeds twice its standard error (the standard deviation of
    the per-user differences over the square root of the number of users); otherwise
    the defaults are refit. On small data the validation score of the best of many
    configurations is biased upwards by chance, and the margin is then large; on large
    data it is small.

    The call first compiles the kernels of every configuration the search space can
    give, on tiny inputs (``TuneResult.compile_seconds``; Numba caches them on disk, so
    this takes seconds once per machine and warprec version, and about half a second
    afterwards). The budget counts the call's wall time, that compilation and the final
    refit on all of X included, so the call ends when it said it would; no trial's time,
    nor an estimate made from it, includes compilation, so it never decides a trial.
    No work is launched unless its estimated time (from the measured seconds per epoch
    of the trials so far, validation included, scaled by the ratio of ``n_components``)
    fits the remaining budget minus a reserve for the refit
    (none on large data): the best trial's training seconds per epoch (validation
    excluded) times its epochs, scaled to all the positives, times 1.2, plus the
    measured setup time of a fit (the reserve is the larger of the defaults' and the
    best trial's). A bracket's first ``REDUCTION_FACTOR`` configurations need only their
    first rung to fit, further ones the bracket's projected later rungs too; a promoted
    trial whose next rung does not fit still trains if it is its rung's best and two
    epochs fit (the search goes on if early stopping, not the budget, ends it), and ends
    the search otherwise. A trial running past the point where the reserve starts is
    stopped after its current epoch (keeping its best epoch). The call can therefore
    overrun the budget by about one epoch plus the error of the refit estimate.

    On small data, if the budget does not afford the defaults' validated fit (estimated
    after the defaults trial's second epoch: the estimator's default ``epochs`` with
    validation, then their refit), no search runs: the defaults are fit on all of X until
    the next epoch would end past the budget (at most their default ``epochs``), with a
    warning. The defaults' refit is fit the same way (up to the larger of their default
    ``epochs`` and their trial's best epoch) whenever the budget, not early stopping,
    ended their trial. On large data the defaults trial is the defaults' fit: the budget
    only ends it (at its best checked epoch, or as trained if the budget ended it before
    the first check, with a warning).

    Parameters
    ----------
    X : scipy.sparse matrix, dense 2-D array, warprec.data.Interactions or DataFrame
        Positives, in any form :meth:`warprec.WARPFactorizer.fit` takes (a DataFrame
        needs ``user_id`` and ``item_id`` columns; every row is a positive).
    time_budget : float, default 120.0
        Seconds of wall time for the search and the refit (> 0), counted once the
        kernels are compiled.
    n_threads : int or None, default None
        Threads of every trial and of the refit; None uses all of Numba's threads.
    random_state : int, numpy Generator or None, default 0
        Seeds the validation split, the configuration draws and every trial's model.
        A Generator or None is turned into an integer seed once
        (``TuneResult.random_state``). With one thread the same seed and data give the
        same sequence of configurations and the same scores; when the budget ends the
        search depends on the machine's speed.
    metric : str, default "ndcg@10"
        Validation metric ``"<name>@<k>"`` (see ``WARPFactorizer``'s
        ``validation_metric``); higher is better.
    validation_fraction : float in (0, 1), default 0.1
        Share of each validated user's positives held out for validation (the users
        with 2 or more positives, a seeded sample of 10,000 of them if there are more).
    search_space : dict or list of dicts, optional
        Parameter name -> list of choices, or ``("log-uniform", low, high)`` with
        ``0 < low < high``. Replaces :data:`SEARCH_SPACE` (parameters left out keep
        the estimator's defaults). Any WARPFactorizer parameter except those tune sets
        itself (epochs, early_stopping, validation_fraction, n_iter_no_change,
        validation_metric, n_threads, random_state, verbose) and learning_rate_drop
        (its trials train at one rate). A list of such dicts
        (scikit-learn's ``ParameterSampler`` convention): each configuration comes from
        one of them, chosen uniformly among those not used up, so parameters that only
        apply together stay together; :data:`SEARCH_SPACE` is
        ``(WARP_SEARCH_SPACE, CCL_SEARCH_SPACE)``. Each value is checked with every
        ``loss`` of its dict.
    max_epochs : int, default 200
        Epoch cap of the last rung.
    n_iter_no_change : int, default 10
        Early stopping's patience in every trial.
    verbose : bool, default False
        Show a tqdm progress bar over the budget's seconds with the best score so far.
    user_features, item_features : optional
        Side features, as :meth:`warprec.WARPFactorizer.fit` takes them: every trial and
        the refit fit the hybrid model with them. The default space is then
        :data:`FEATURE_SEARCH_SPACE` (WARP's, with the side features' weight
        ``feature_weight`` and without several violators, which the hybrid model does
        not train), with no zero-shot start; a given space must keep to losses ``"warp"``
        and ``"bpr"`` with one violator. The trials validate on held-out positives of
        known users and items (warm quality), not on new ones, unless ``cold_start``.
    cold_start : {None, "items", "users"}, default None
        None: the trials validate as described above. ``"items"`` (``"users"``, which
        need ``item_features`` / ``user_features``): they validate on new items (users),
        so that the search picks the configuration that ranks entities it never trained
        on best from their features. Of the items (users) of X with a feature row (a
        DataFrame row naming them; a non-empty matrix row) and a positive,
        ``round(validation_fraction * n)`` lose every positive to validation, drawn as
        ``split_cold_items`` (``split_cold_users``) draws them with
        ``random_state=TuneResult.random_state`` and those entities as ``items=``
        (``users=``); every trial trains on the rest (the users and items it names).
        After every ``validation_interval``-th epoch (1 unless the checks outweigh the
        training, as the estimator's ``"auto"``) a callback scores the trial's model:
        ``metric`` over the users with a held-out positive (``"items"``: the held-out
        items ranked for each user, embedded from their features alone; ``"users"``:
        every trial item ranked for each held-out user, embedded from its features
        alone), as :func:`~warprec.evaluation.evaluate_cold_items`
        (``evaluate_cold_users``) computes it, on a seeded sample of 10,000 users if
        there are more. The callback stops the trial ``n_iter_no_change`` epochs after
        its best check and restores that check's parameters (the estimator trains the
        trial without validation of its own). The paired choice against the defaults
        compares those users' scores. The chosen configuration is always refit on all
        of X (every entity, every positive) for its epoch count.
    clock : {"wall", "work"}, default "wall"
        What the budget counts. ``"wall"``: wall time, as described above. ``"work"``:
        the work of the trials and of the final fit, counted from the training kernel's
        own counts (per epoch: samples, scored negatives and updates times the
        embedding dimension; per validation check: the pairs scored times the
        dimension; per fit call: the positives of X) and turned into seconds at a fixed
        reference speed per thread (``warprec._clock``; measured in
        benchmarks/results/work_clock.md). Every decision is then made on that clock,
        so the search does not depend on the machine's speed or load: with
        ``n_threads=1``, the same X, seed and budget give the same trials and the same
        choice on any machine, loaded or quiet. The wall time is then not bounded: it
        is about ``time_budget`` on a quiet machine as fast as the reference, plus the
        compilation (not counted), and longer on a slower or loaded one. With several
        threads Hogwild's interleaving still varies the counts and scores a little.

    Returns
    -------
    TuneResult
        ``best_params``, ``best_score``, ``best_model`` (refit on all of X),
        ``trials`` (a DataFrame, one row per trial evaluation), ``elapsed_seconds``,
        ``best_trial``.

    Raises
    ------
    ValueError, TypeError
        Bad arguments (the message says which and how to fix it), an invalid choice in
        the search space, or data too small to validate on (no user with 2 positives;
        with ``cold_start``: no featured entity held out, every one held out, or no user
        to score on them), or ``cold_start`` without the matching features.
    DivergenceError
        Every trial diverged, or the final refit did.

    Warns
    -----
    WarprecWarning
        The budget was too small for the defaults' validated fit (the defaults were fit
        on all of X for the epochs that fit; at least one, even past the budget; on
        large data: ended before their first validation check), or for a search (only
        the defaults trial ran). The message suggests a budget.

    Notes
    -----
    Each trial keeps its own copy of the training matrix and of the factors and
    Adagrad state; a bracket keeps the models of at most ``REDUCTION_FACTOR **
    (n_rungs - 2)`` of them (9 with the defaults) for continuing, and refits a promoted
    trial from scratch if its model was dropped. On large data a copy of the defaults'
    and of the best other trial's model at their best epochs is kept as well. The
    refit (small data) trains on the validation positives too for the same number of
    epochs, with ``alpha="auto"`` resolved on all of X.
    """
    start = time.perf_counter()
    from .model import WARPFactorizer

    validate_params(dict(time_budget=time_budget, n_threads=n_threads,
                         random_state=random_state), _TUNE_CONSTRAINTS)
    seed = _resolve_seed(random_state)
    try:
        _validation.parse_metric(metric)
    except ValueError as exc:
        raise ValueError(str(exc).replace("validation_metric", "metric", 1)) from None
    validate_params(dict(validation_fraction=validation_fraction, max_epochs=max_epochs,
                         n_iter_no_change=n_iter_no_change, verbose=verbose, clock=clock,
                         cold_start=cold_start), _TUNE_CONSTRAINTS)
    budget, fraction = float(time_budget), float(validation_fraction)
    max_epochs, patience = int(max_epochs), int(n_iter_no_change)

    matrix, user_ids, item_ids = training_input(X)
    features: dict[str, Any] = {
        name: value for name, value in (("user_features", user_features),
                                        ("item_features", item_features))
        if value is not None}
    default_space = FEATURE_SEARCH_SPACE if features else SEARCH_SPACE
    space = _check_space(default_space if search_space is None else search_space,
                         matrix.shape[1])
    if features:
        _check_hybrid_space(space)
    cold = None
    if cold_start is not None:
        kind = _cold_tune.KINDS[cold_start]
        if f"{kind}_features" not in features:
            raise ValueError(f"cold_start={cold_start!r} validates on held-out {kind}s ranked "
                             f"from their side features alone, and no {kind}_features were "
                             f"given: pass {kind}_features= (a DataFrame with a "
                             f"'{kind}_id' column and feature columns, or a matrix with a "
                             f"row per {kind} of X), or leave cold_start=None to validate "
                             f"on held-out positives of known users and items.")
        # every trial trains on the same split and is scored on the same held-out entities
        cold = _cold_tune.split(matrix, user_ids, item_ids, features, cold_start, fraction,
                                seed, metric, n_threads)
        train, valid = cold.train, cold.valid
    else:
        # the split of every trial's early stopping (they all have random_state=seed)
        held = _validation.early_stopping_holdout(matrix, fraction,
                                                  draw_seed(np.random.default_rng(seed)))
        if not held.any():
            raise ValueError(f"X is too small to tune on: with validation_fraction={fraction} "
                             f"no user has a validation positive (a user needs at least 2 "
                             f"positives, and about 1 / validation_fraction for one held "
                             f"out). Raise validation_fraction or tune on more data.")
        train, valid = _validation.select(matrix, ~held), _validation.select(matrix, held)
    full: Any
    if user_ids is not None and item_ids is not None:   # (both or neither)
        from .data import Interactions
        full = Interactions(matrix, user_ids, item_ids)
    else:
        full = matrix
    progress = _progress(budget, verbose)
    try:
        compile_seconds = _compile_search(matrix, space, n_threads, seed, metric, fraction,
                                          progress, hybrid=bool(features))
    except BaseException:
        progress.close()
        raise
    budget_clock = WallClock() if clock == "wall" else WorkClock(resolve_threads(n_threads))
    # the budget counts from the call's start, compilation included (the call ends when
    # it said it would); no trial's time or estimate includes the compilation, done first
    # the zero-shot start (the default space only: a given space is searched as given):
    # the portfolio's configurations the space holds, in the order of the family set of
    # the nearest shape
    defaults = WARPFactorizer().get_params()
    first = [] if search_space is not None or features else [
        _complete(params, space, defaults) for params in _portfolio.ranked(
            matrix, space, lambda params, sub: _holds(params, sub, defaults["loss"]))]
    search = _Search(
        first=first, full=full, features=features, train=train, valid=valid, cold=cold,
        # (with cold_start the trials never saw the held-out entities: always a refit)
        refit=cold is not None or not _validation.auto_early_stopping(matrix), space=space,
        seed=seed,
        metric=metric, fraction=fraction, max_epochs=max_epochs, patience=patience,
        n_threads=n_threads, clock=budget_clock,
        start=start if budget_clock.counts_compilation else budget_clock.now(),
        budget=budget, progress=progress)
    # (on the work clock, compilation is no work: it does not count)
    search.compile_seconds = compile_seconds if budget_clock.counts_compilation else 0.0
    try:
        search.run()
        best = search.best()
        if best is None and not search.refit and search.trials[0].model is not None:
            # the budget ended the defaults' trial before its first check
            search.defaults_only_fit = True
        if best is None and not search.defaults_only_fit:
            raise DivergenceError("Every trial diverged (see TuneResult.trials); narrow the "
                                  "search space to lower learning rates.", 0)
        if not search.refit:
            # large data: the chosen trial's model at its best epoch, as the estimator's
            # own early stopping leaves it (the held-out positives in train_matrix_)
            model = search.trials[0].model if best is None else best.snapshot
            best = best or search.trials[0]
            best_params = dict(best.params, epochs=int(model.epochs_done_),
                               early_stopping=False)
            model.set_params(**WARPFactorizer(**best_params, n_threads=n_threads,
                                              random_state=seed).get_params())
        elif search.defaults_only_fit or best.index == 0:
            # the defaults kept: they train as a plain fit of the defaults does (not for
            # the validated peak of one noisy hold-out, which can come far earlier), or
            # longer when their validation still rose there; for as long as the budget
            # allows
            epochs = max(search.default_epochs, best.epochs)
            model = search.fit_all(WARPFactorizer(**best.params, epochs=epochs,
                                                  early_stopping=False, n_threads=n_threads,
                                                  random_state=seed), until_deadline=True)
            best_params = dict(best.params, epochs=int(model.epochs), early_stopping=False)
        else:
            best_params = dict(best.params, epochs=int(best.epochs), early_stopping=False)
            search.progress.set_postfix_str(f"refit, best {metric} {best.score:.4f}")
            model = search.fit_all(WARPFactorizer(**best_params, n_threads=n_threads,
                                                  random_state=seed))
        elapsed = time.perf_counter() - start
        used = search.now() - search.start     # (the budget's clock; = elapsed on the wall)
        search.progress.update_to(used)
    finally:
        search.progress.close()
    trials = search.frame()
    log.info("tune: %d trial evaluations, best %s %.4f, %.2f s", len(trials), metric,
             best.score, elapsed)
    suggested = f"A search needs at least about {_seconds(_suggested_budget(search, used))} s"
    if search.defaults_only_fit and search.refit:
        warnings.warn(
            f"time_budget={budget:g} s is too small for the default parameters' validated "
            f"fit ({search.default_epochs} epochs with validation, then the refit on all "
            f"of X): no search was run, the defaults were fit on all of X for the "
            f"{model.epochs} epochs that fit the budget. {suggested} here.",
            WarprecWarning, stacklevel=2)
    elif search.defaults_only_fit:
        warnings.warn(
            f"time_budget={budget:g} s is too small for the default parameters' first "
            f"validation check: no search was run, the defaults were trained for the "
            f"{model.epochs} epochs that fit the budget. {suggested} here.",
            WarprecWarning, stacklevel=2)
    elif search.only_defaults:
        refit = " and refit" if search.refit else ""
        warnings.warn(
            f"time_budget={budget:g} s was too small for a search: only the default "
            f"parameters were trained ({best.epochs} epochs in "
            f"{search.trials[0].seconds:.2f} s){refit}, in {used:.2f} s. {suggested} "
            f"here.",
            WarprecWarning, stacklevel=2)
    return TuneResult(best_params=best_params, best_score=float(best.score), metric=metric,
                      best_model=model, trials=trials, elapsed_seconds=elapsed,
                      time_budget=budget, random_state=seed, best_trial=best.index,
                      compile_seconds=compile_seconds, clock=clock, budget_seconds=used,
                      cold_start=cold_start)


#: The estimator parameters that choose a fit's kernel variant (through
#: ``check_params`` and ``_trainer.kernel_mode``; ``n_components`` through prefetching).
_KERNEL_PARAMETERS = ("loss", "rank_estimator", "learning_schedule", "max_norm",
                      "max_violators", "negative_sharing", "n_components")
#: Rows of X the compilation's tiny validated fit trains on.
_COMPILE_ROWS = 200
_PROGRESS_DESC = "warprec tune"


def _kernel_configurations(space, n_users, n_items):
    """``(config, n_components, prefetch)`` for each distinct kernel variant that the
    configurations of ``space`` (with the estimator's defaults) can run on X's shape:
    every combination of the choices of :data:`_KERNEL_PARAMETERS` (a log-uniform
    range's two ends), combinations the estimator refuses left out."""
    from .model import WARPFactorizer

    defaults = WARPFactorizer().get_params()
    found: dict[Any, tuple[Any, int, bool]] = {}
    points = [defaults]   # (the defaults trial)
    for sub in space:
        names = [name for name in _KERNEL_PARAMETERS if name in sub]
        choices = [[sub[name][1], sub[name][2]] if sub[name][0] == _LOG_UNIFORM
                   else sub[name][1] for name in names]
        points += [dict(defaults, **dict(zip(names, values)))
                   for values in itertools.product(*choices)]
    for params in points:
        params = dict(params, n_components=round(params["n_components"]))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                config = check_params(params)
        except (ValueError, TypeError):
            continue
        d = int(params["n_components"])
        prefetch = outgrows_cache(n_users, n_items, d)
        found.setdefault(kernel_mode(config, prefetch=prefetch), (config, d, prefetch))
    return list(found.values())


def _compile_search(matrix, space, n_threads, seed, metric, fraction, progress, *,
                    hybrid=False):
    """Compile (or load from Numba's cache) every kernel the search can run, before
    its trials: the epoch kernel of each configuration of ``space`` on X's shape
    (:func:`_kernel_configurations`; the hybrid model's with ``hybrid``), and the
    kernels of a validated fit and of the per-user scores, from a tiny fit on X's first
    rows. Returns the seconds it took;
    shows :data:`warprec._trainer.COMPILE_MESSAGE` on the progress bar while Numba
    compiles."""
    from .model import WARPFactorizer

    tic = time.perf_counter()
    with CompileWatch(progress, _PROGRESS_DESC) as watch:
        for config, d, prefetch in _kernel_configurations(space, *matrix.shape):
            compile_configuration(config, d, prefetch=prefetch, features=hybrid)
        for sample_order in ("positives", "users"):
            epoch_order(sample_order, matrix[:0], 0, 0, indptr=np.zeros(1, np.int64))
        tiny = matrix[:_COMPILE_ROWS]
        held = _validation.early_stopping_holdout(tiny, fraction, 0)
        if held.any():
            model = WARPFactorizer(epochs=1, early_stopping=True,
                                   validation_fraction=fraction, validation_metric=metric,
                                   n_threads=1, random_state=seed).fit(tiny)
            monitor = _validation.Monitor(_validation.select(tiny, held),
                                          _validation.select(tiny, ~held), metric,
                                          [model.seed_, 2], 1)
            monitor.values(model.user_factors_, model.item_factors_, model.item_biases_)
    seconds = time.perf_counter() - tic
    if watch.compiled:
        log.info("tune: compiled the search's kernels in %.1f s, before any trial (the "
                 "budget counts it)", seconds)
    return seconds


# ---------------------------------------------------------------------- the search
class _Trial:
    """One configuration and its training state."""

    def __init__(self, index, bracket, params):
        self.index = index
        self.bracket = bracket
        self.params = params
        self.model = None
        self.score = math.nan        # best validation score so far
        self.epochs = 0              # the epoch count of that score
        self.epochs_done = 0         # epochs of the model's (restored) parameters
        self.seconds_per_epoch = None        # wall time per epoch, validation included
        self.train_seconds_per_epoch = None  # training kernel time per epoch
        self.seconds = 0.0           # wall time of all its evaluations
        self.done = False            # stopped early, diverged or at max_epochs
        self.per_user = None         # per-user validation scores at the best epoch
        self.snapshot = None         # a copy of the model at its best epoch (no refit)

    def rank_key(self):
        return (-self.score if math.isfinite(self.score) else math.inf, self.index)


class _Search:
    """State of one :func:`tune` call's successive halving."""

    def __init__(self, *, first, full, features, train, valid, refit, space, seed, metric,
                 fraction, max_epochs, patience, n_threads, clock, start, budget, progress,
                 cold=None):
        from .model import WARPFactorizer

        self.first = list(first)     # the zero-shot start, drawn before any random draw
        self.features = features     # fit's side-feature arguments, for the refit
        self.cold = cold             # the cold-start split (cold_start), or None

        self.full, self.train, self.valid, self.refit = full, train, valid, refit
        # what a trial fits on: X (the estimator holds its validation positives out), or
        # with cold_start the positives of the entities not held out
        self.trial_input = full if cold is None else cold.trial_input
        self.trial_features = features if cold is None else cold.trial_features
        self.trial_positives = train.nnz + valid.nnz if cold is None else train.nnz
        # large data: the estimator's checks (every validation_interval_ epochs); small
        # data, where checks are cheap and the epoch of the refit matters: every epoch
        # (cold start: every epoch unless the checks outweigh training, as "auto" does)
        self.interval: int | Literal["auto"] = (cold.interval() if cold is not None
                                                else 1 if refit else "auto")
        self.space, self.seed, self.metric = space, seed, metric
        self.fraction, self.patience, self.n_threads = fraction, patience, n_threads
        self.clock = clock
        self.start, self.deadline, self.progress = start, start + budget, progress
        # the pairs a validation check scores: every item for each validated user (the
        # held-out items for each checked user, or every trial item for each held-out user)
        self.checked_pairs = (cold.checked_pairs if cold is not None else
                              float(np.count_nonzero(np.diff(valid.indptr))) * valid.shape[1])
        self.rungs = _rungs(max_epochs)
        self.per_bracket = REDUCTION_FACTOR ** (len(self.rungs) - 1)
        self.keep_models = max(1, math.ceil(self.per_bracket / REDUCTION_FACTOR))
        self.rng = np.random.default_rng([seed, 0])
        defaults = WARPFactorizer().get_params()
        self.names = list(dict.fromkeys(name for sub in space for name in sub))
        self.defaults = {name: defaults[name] for name in self.names}
        self.seen = set()
        # the configurations each sub-space can still give (None: unbounded)
        self.left = [_space_size(sub) for sub in space]
        for i, sub in enumerate(space):
            own = {name: defaults[name] for name in sub}
            self.seen.add(_key(own))     # the defaults trial's point of this sub-space
            if _in_space(own, sub):
                self.left[i] -= 1
        self.pending = None
        self.exhausted = False
        self.trials = []
        self.rows = []
        self.setups = []             # per-call seconds before the first epoch
        self.best_trial = None
        self.only_defaults = False
        self.defaults_only_fit = False  # the defaults' validated fit does not fit the budget
        self.out_of_time = False     # a trial was stopped, or work skipped, for the budget
        # the defaults' epochs without early stopping (the budget's estimates and the
        # refit of a defaults trial the budget ended)
        self.default_epochs = resolve_epochs(defaults["epochs"], early_stopping=False)
        # the defaults trial's last cap: the defaults' own maximum with early stopping
        self.default_max_epochs = min(max_epochs, resolve_epochs(defaults["epochs"],
                                                                  early_stopping=True))
        self.default_loss = defaults["loss"]
        self.monitor = None          # the users of per_user_scores
        self.compile_seconds = 0.0   # tune's compilation before the trials
        self.selection = None        # the comparison of the best trial with the defaults

    # ---- timing
    def now(self):
        return self.clock.now()

    def refit_seconds(self, trial):
        """Estimated seconds of the final refit if ``trial`` is the best (none on large
        data, where the trial's model is kept)."""
        if trial is None or trial.train_seconds_per_epoch is None:
            return 0.0
        # (the defaults refit for at least their plain fit's epochs)
        epochs = trial.epochs if trial.index else max(trial.epochs, self.default_epochs)
        return self.refit_estimate(trial.train_seconds_per_epoch, epochs)

    def refit_estimate(self, train_seconds_per_epoch, epochs):
        """Seconds of a refit on all of X for ``epochs`` epochs: a call's setup plus the
        measured training seconds per epoch (validation excluded, the refit has none)
        scaled to all the positives, with a margin; 0 on large data (no refit)."""
        if not self.refit:
            return 0.0
        return self.setup() + self.refit_training(train_seconds_per_epoch, epochs)

    def refit_training(self, train_seconds_per_epoch, epochs):
        """The training part of :meth:`refit_estimate` (without a call's setup)."""
        return TUNE_REFIT_MARGIN * train_seconds_per_epoch * epochs \
            * (self.train.nnz + self.valid.nnz) / self.train.nnz

    def setup(self):
        return float(np.median(self.setups)) if self.setups else 0.0

    def available(self, extra_reserve=0.0):
        """Seconds left for trials: budget left minus the refit reserve."""
        reserve = max(self.refit_seconds(self.best_trial),
                      self.refit_seconds(self.trials[0] if self.trials else None),
                      extra_reserve)
        return self.deadline - self.now() - reserve

    def affords_defaults(self, epoch_seconds, train_seconds):
        """Whether the budget affords the defaults' validated fit: the defaults trial to
        the estimator's default epoch count at ``epoch_seconds`` per epoch (validation
        included), then its refit, at ``train_seconds`` per training epoch. Without a
        refit (large data) the defaults trial is the defaults' fit, ended by the budget
        if need be: always."""
        if not self.refit:
            return True
        trial = self.now() + (self.default_epochs - 2) * epoch_seconds
        return trial + self.refit_training(train_seconds, self.default_epochs) <= self.deadline

    def epoch_seconds(self, params):
        """Estimated seconds per epoch of a configuration not run yet: the median over
        the trials so far of the same loss (over all trials if none has it yet), scaled
        by the ratio of embedding dimensions."""
        d = _dimension(params, self.defaults)
        timed = [t for t in self.trials if t.seconds_per_epoch is not None]
        same = [t for t in timed if self.loss(t.params) == self.loss(params)]
        measured = [t.seconds_per_epoch * d / _dimension(t.params, self.defaults)
                    for t in same or timed]
        return float(np.median(measured)) if measured else 0.0

    def loss(self, params):
        return params.get("loss", self.default_loss)

    def fit_all(self, model, until_deadline=False):
        """Fit ``model`` on all of X (with the side features), counted on the clock; with
        ``until_deadline``, only until the next epoch, at the median time of the epochs so
        far, would end after the deadline (``epochs`` is then set to the epochs trained)."""
        clock = self.clock
        marks = [clock.now()]
        clock.start_fit(self.train.nnz + self.valid.nnz)

        def callback(fitted, info):
            clock.epoch(info, int(fitted.n_components), feature_rows(fitted), 0.0)
            marks.append(clock.now())
            return not until_deadline or \
                marks[-1] + float(np.median(np.diff(marks))) <= self.deadline

        model.fit(self.full, callback=callback, **self.features)
        if until_deadline:
            model.set_params(epochs=int(model.epochs_done_))
        return model

    # ---- the halving
    def run(self):
        defaults = self.new_trial(self.defaults, 0)
        self.evaluate(defaults, 0)
        if self.defaults_only_fit:
            return
        # the defaults train to their early-stopped end: every other configuration is
        # compared with them on the same footing (see best)
        for k in range(1, len(self.rungs)):
            if defaults.done or self.out_of_time:
                break
            self.evaluate(defaults, k)
        bracket = 0
        while True:
            members: list[_Trial] = []
            launched = self.fill_first_rung(members, bracket)
            if bracket == 0 and not launched and not self.exhausted:
                self.only_defaults = True
            self.halve(members)
            for trial in members:
                trial.model = None
            if self.out_of_time or self.exhausted or not launched:
                return
            bracket += 1

    def fill_first_rung(self, members, bracket):
        """Launch new configurations at rung 0 while the bracket's projected cost fits;
        returns how many were launched."""
        launched = 0
        while len(members) < self.per_bracket:
            if self.pending is None:
                self.pending = self.sample()
                if self.pending is None:
                    self.exhausted = True
                    break
            per_epoch = self.epoch_seconds(self.pending)
            first = self.setup() + per_epoch * self.rungs[0]
            projected = first + self.later_rungs_seconds(len(members) + 1, per_epoch)
            # a bracket always gets REDUCTION_FACTOR configurations if their first rung
            # fits; more only if the bracket's later rungs are projected to fit too
            needed = projected if len(members) >= REDUCTION_FACTOR else first
            if self.available() < needed:
                break
            trial = self.new_trial(self.pending, bracket)
            self.pending = None
            self.evaluate(trial, 0)
            members.append(trial)
            launched += 1
            self.drop_models(members)
            if self.out_of_time:
                break
        return launched

    def later_rungs_seconds(self, n, per_epoch):
        total = 0.0
        for k in range(1, len(self.rungs)):
            kept = math.ceil(n / REDUCTION_FACTOR ** k)
            total += kept * (self.setup() + per_epoch * (self.rungs[k] - self.rungs[k - 1]))
        return total

    def halve(self, members):
        """Rungs 1, 2, ... of a bracket; ``members`` ends as the last rung's trials."""
        for k in range(1, len(self.rungs)):
            if not members or self.out_of_time:
                return
            members.sort(key=_Trial.rank_key)
            promoted = members[:math.ceil(len(members) / REDUCTION_FACTOR)]
            for trial in members[len(promoted):]:
                trial.model = None
            members[:] = promoted
            for trial in promoted:
                if trial.done or self.out_of_time:
                    continue
                more = self.rungs[k] - (trial.epochs_done if trial.model is not None else 0)
                if self.available() < self.setup() + trial.seconds_per_epoch * more:
                    # the budget's rest goes to the best promoted trial, if it affords a
                    # few epochs: the reserve stops it after an epoch (out of time), or
                    # early stopping does and the search goes on; others are skipped
                    if trial is promoted[0] and trial.model is not None and \
                            self.available() > self.setup() + 2 * trial.seconds_per_epoch:
                        self.evaluate(trial, k)
                    else:
                        self.out_of_time = True
                    continue
                self.evaluate(trial, k)
            if all(t.done for t in members):
                return

    def drop_models(self, members):
        ranked = sorted(members, key=_Trial.rank_key)
        for trial in ranked[self.keep_models:]:
            trial.model = None

    def new_trial(self, params, bracket):
        trial = _Trial(len(self.trials), bracket, params)
        self.trials.append(trial)
        return trial

    def sample(self):
        """A configuration not drawn before, or None when the discrete spaces are used
        up: the zero-shot start's next configuration while any is left; then, with
        several sub-spaces, one is chosen uniformly among those not used up, and its
        parameters are drawn (scikit-learn's ``ParameterSampler`` does the same with a
        list of dicts)."""
        while self.first:
            params = self.first.pop(0)
            if _key(params) not in self.seen:
                self.seen.add(_key(params))
                return params
        for _ in range(1000):
            open_ = [i for i, left in enumerate(self.left) if left is None or left > 0]
            if not open_:
                return None
            i = open_[int(self.rng.integers(len(open_)))] if len(self.space) > 1 else 0
            params = {name: _draw(spec, self.rng) for name, spec in self.space[i].items()}
            key = _key(params)
            if key not in self.seen:
                self.seen.add(key)
                if self.left[i] is not None:
                    self.left[i] -= 1
                return params
        return None

    def evaluate(self, trial, rung):
        """Train ``trial`` up to rung ``rung``'s epoch cap (continuing its model if
        there is one) and record a row."""
        from .model import WARPFactorizer

        last_cap = self.rungs[-1] if trial.index else self.default_max_epochs
        cap = min(self.rungs[rung], last_cap)
        tic = self.now()
        marks = [tic]
        train_seconds = []
        cut = []
        checks = []                  # (epochs trained, validation score) of this call

        def callback(model, info):
            train_seconds.append(self.clock.epoch(info, int(model.n_components),
                                                  feature_rows(model), self.checked_pairs))
            now = self.now()
            marks.append(now)
            if "validation" in info:
                checks.append((model.epochs_done_, info["validation"]))
            self.progress.update_to(now - self.start)
            if trial.index == 0 and rung == 0 and len(marks) == 3 \
                    and not self.affords_defaults(marks[2] - marks[1], train_seconds[-1]):
                cut.append(True)
                self.out_of_time = self.defaults_only_fit = True
                return False
            best_epochs = max(checks, key=lambda c: c[1])[0] if checks else model.epochs_done_
            running = self.refit_estimate(float(np.median(train_seconds)), best_epochs)
            if self.available(running) < 0:
                cut.append(True)
                self.out_of_time = True
                # the defaults' first epochs already run into the reserve
                self.defaults_only_fit |= trial.index == 0 and rung == 0 and self.refit
                return False
            return True

        continuing = trial.model is not None
        status = None
        stopping = None
        if self.cold is not None:
            # cold start: the trial's callback validates on the held-out entities and
            # early-stops (the estimator itself trains without validation)
            epochs = cap - trial.epochs_done if continuing else cap
            stopping = _cold_tune.ColdStopping(self.cold, callback, self.patience,
                                               int(self.interval), epochs)
        self.clock.start_fit(self.trial_positives)
        try:
            # (the estimator's own hold-out, the same for every trial: train and valid)
            if continuing:
                model = trial.model
                model.set_params(epochs=cap - trial.epochs_done)
                model.partial_fit(self.trial_input, callback=stopping or callback)
            elif stopping is not None:
                model = WARPFactorizer(**trial.params, epochs=cap, early_stopping=False,
                                       learning_rate_drop=1.0, n_threads=self.n_threads,
                                       random_state=self.seed)
                model.fit(self.trial_input, callback=stopping, **self.trial_features)
            else:
                model = WARPFactorizer(**trial.params, epochs=cap, early_stopping=True,
                                       learning_rate_drop=1.0,
                                       validation_fraction=self.fraction,
                                       validation_interval=self.interval,
                                       n_iter_no_change=self.patience,
                                       validation_metric=self.metric, n_threads=self.n_threads,
                                       random_state=self.seed)
                model.fit(self.full, callback=callback, **self.features)
            if stopping is not None:
                stopping.finish(model)
        except DivergenceError as exc:
            log.debug("trial %d diverged: %s", trial.index, exc)
            status = "diverged"
        seconds = self.now() - tic
        trial.seconds += seconds
        if len(marks) > 1:
            self.setups.append(max(marks[1] - marks[0] - _per_epoch(marks), 0.0))
            trial.seconds_per_epoch = _per_epoch(marks)
            trial.train_seconds_per_epoch = float(np.median(train_seconds))
        elif trial.seconds_per_epoch is None:
            trial.seconds_per_epoch = trial.train_seconds_per_epoch = seconds
        epochs_run = len(marks) - 1
        if status == "diverged":
            trial.done = True
            trial.model = None
        else:
            last = trial.epochs_done + epochs_run if continuing else epochs_run
            # (no score when the budget ended the call before its first check)
            score = max(model.validation_scores_, default=math.nan)
            improved = math.isfinite(score) and (not math.isfinite(trial.score)
                                                 or score > trial.score)
            if improved:
                trial.score = score
                trial.epochs = int(model.best_epoch_)
                if trial.index == 0 or self.challenger() is trial:
                    trial.per_user = self.per_user_scores(model)
                    if not self.refit:
                        trial.snapshot = copy.deepcopy(model)
                        self.drop_snapshots()
            trial.epochs_done = int(model.epochs_done_)
            trial.model = model
            stopped = (not improved or last - trial.epochs >= self.patience) \
                and math.isfinite(score)
            if cut:
                status = "out-of-time"
            elif stopped:
                status = "stopped"
                trial.done = True
            else:
                status = "capped"
                trial.done = cap >= last_cap
            if trial.done:
                trial.model = None
        if math.isfinite(trial.score) and (
                self.best_trial is None or _Trial.rank_key(trial) < self.best_trial.rank_key()):
            self.best_trial = trial
        self.rows.append(dict(trial=trial.index, bracket=trial.bracket, rung=rung,
                              **trial.params, max_epochs=cap, epochs_run=epochs_run,
                              epochs=trial.epochs, score=trial.score, metric=self.metric,
                              seconds=seconds, status=status))
        self.progress.update_to(self.now() - self.start)
        if self.best_trial is not None:
            self.progress.set_postfix_str(f"best {self.metric} {self.best_trial.score:.4f}, "
                                          f"{len(self.trials)} configs")
        log.debug("trial %d rung %d: %s", trial.index, rung, self.rows[-1])

    def drop_snapshots(self):
        """Keep the model copies of the defaults and of the challenger only."""
        challenger = self.challenger()
        for trial in self.trials[1:]:
            if trial is not challenger:
                trial.snapshot = None

    def per_user_scores(self, model):
        """The validation metric of every monitored user for ``model``'s factors (with
        cold start: of every checked user, on the held-out entities)."""
        if self.cold is not None:
            return self.cold.values(model)
        if self.monitor is None:
            # the users that the trials' own validation scores (every trial has the
            # same seed) average over
            self.monitor = _validation.Monitor(self.valid, self.train, self.metric,
                                               [model.seed_, 2], self.n_threads)
        return self.monitor.values(model.user_factors_, model.item_factors_,
                                   model.item_biases_)

    def challenger(self):
        """The best trial other than the defaults, or None."""
        scored = [t for t in self.trials[1:] if math.isfinite(t.score)]
        return min(scored, key=_Trial.rank_key) if scored else None

    def best(self):
        """The trial to refit: the best other trial if its paired gain over the defaults
        on the monitored users exceeds ``TUNE_SWITCH_Z`` standard errors, else the defaults."""
        if not self.trials:
            return None
        defaults, challenger = self.trials[0], self.challenger()
        if not math.isfinite(defaults.score):
            return challenger
        if challenger is None or not challenger.score > defaults.score:
            return defaults
        if challenger.per_user is None or defaults.per_user is None:
            return challenger
        diff = challenger.per_user - defaults.per_user
        gain = float(diff.mean())
        se = float(diff.std(ddof=1) / math.sqrt(diff.size)) if diff.size > 1 else math.inf
        z = switch_z(sum(math.isfinite(t.score) for t in self.trials[1:]))
        switch = gain > z * se
        self.selection = dict(trial=challenger.index, gain=gain, standard_error=se, z=z,
                              switched=switch)
        log.info("tune: trial %d over the defaults: %+.5f (standard error %.5f, z %.2f, "
                 "needed %.2f)", challenger.index, gain, se,
                 gain / se if se > 0 else math.inf, z)
        return challenger if switch else defaults

    def frame(self):
        import pandas as pd

        columns = ["trial", "bracket", "rung", *self.names, "max_epochs", "epochs_run",
                   "epochs", "score", "metric", "seconds", "status"]
        frame = pd.DataFrame(self.rows, columns=columns)
        for name in self.names:
            # a parameter of one sub-space is missing (NA) in the rows of the others;
            # integer parameters stay integers
            values = [row[name] for row in self.rows if name in row]
            if len(values) < len(self.rows) and values and all(
                    isinstance(v, numbers.Integral) and not isinstance(v, bool)
                    for v in values):
                frame[name] = frame[name].astype("Int64")
        return frame


# ---------------------------------------------------------------------- helpers
def switch_z(n_compared):
    """The standard errors the best of ``n_compared`` scored configurations must beat the
    defaults by: ``TUNE_SWITCH_Z``'s one-sided level shared among them (Bonferroni). The
    best of many is chosen for its high validation score, which is partly chance; one
    test at ``TUNE_SWITCH_Z`` would let the chance winner of a large search through."""
    tail = (1.0 - NormalDist().cdf(TUNE_SWITCH_Z)) / max(int(n_compared), 1)
    return float(NormalDist().inv_cdf(1.0 - tail))


def _rungs(max_epochs):
    """Epoch caps of the rungs: FIRST_RUNG_EPOCHS * eta^k below max_epochs, then it."""
    rungs = []
    cap = FIRST_RUNG_EPOCHS
    while cap < max_epochs:
        rungs.append(cap)
        cap *= REDUCTION_FACTOR
    rungs.append(max_epochs)
    return rungs


def _per_epoch(marks):
    """Seconds per epoch from the callback times: the mean interval after the first
    (which also holds the call's setup; the mean, since every ``validation_interval``-th
    epoch holds a check), or the first when it is the only one."""
    steps = np.diff(marks)
    if steps.size == 0:
        return 0.0
    return float(np.mean(steps[1:])) if steps.size > 1 else float(steps[0])


def _dimension(params, defaults):
    return float(params.get("n_components", defaults.get("n_components", 64)) or 64)


def _key(params):
    return tuple((name, repr(value)) for name, value in sorted(params.items()))


def _draw(spec, rng):
    if spec[0] == _LOG_UNIFORM:
        low, high = spec[1], spec[2]
        value = math.exp(rng.uniform(math.log(low), math.log(high)))
        return min(max(float(f"{value:.4g}"), low), high)
    choices = spec[1]
    return choices[int(rng.integers(len(choices)))]


def _space_size(space):
    """Number of distinct configurations of an all-choices space, else None."""
    size = 1
    for spec in space.values():
        if spec[0] == _LOG_UNIFORM:
            return None
        size *= len({repr(c) for c in spec[1]})
    return size


def _allows(spec, value):
    """Whether a checked parameter spec (choices or log-uniform) holds ``value``."""
    if spec[0] == _LOG_UNIFORM:
        return isinstance(value, numbers.Real) and not isinstance(value, bool) \
            and spec[1] <= value <= spec[2]
    return repr(value) in {repr(c) for c in spec[1]}


def _holds(params, sub, default_loss):
    """Whether sub-space ``sub`` can give a configuration that sets ``params`` and leaves
    its other parameters at their defaults (``params``' loss, or ``default_loss`` if it
    sets none, must be one of the sub-space's, or the default where it has none)."""
    loss = params.get("loss", default_loss)
    if not (_allows(sub["loss"], loss) if "loss" in sub else loss == default_loss):
        return False
    return all(name in sub and _allows(sub[name], value)
               for name, value in params.items() if name != "loss")


def _complete(params, space, defaults):
    """``params`` as a configuration of the first sub-space that holds it: its other
    parameters at the estimator's ``defaults``."""
    sub = next(sub for sub in space if _holds(params, sub, defaults["loss"]))
    return {name: params.get(name, defaults[name]) for name in sub}


def _check_hybrid_space(space):
    """With side features every configuration must train the hybrid model: WARP or BPR,
    with one violator per positive (a clear error before any trial otherwise)."""
    for k, sub in enumerate(space):
        losses = sub["loss"][1] if "loss" in sub else []
        bad = [loss for loss in losses if loss not in ("warp", "bpr")]
        violators = [v for v in (sub["max_violators"][1] if "max_violators" in sub else [])
                     if v != 1]
        if bad or violators:
            what = f"loss {bad[0]!r}" if bad else f"max_violators={violators[0]}"
            raise ValueError(f"search_space[{k}] has {what}, which side features do not "
                             f"train (the hybrid model trains loss 'warp' or 'bpr' with "
                             f"max_violators=1). Leave it out of the space, or tune without "
                             f"user_features / item_features.")


def _in_space(params, space):
    return _space_size(space) is not None and all(
        repr(params[name]) in {repr(c) for c in spec[1]} for name, spec in space.items())


#: The allowed values of :func:`tune`'s own arguments (see
#: :func:`warprec._inputs.validate_params`).
_TUNE_CONSTRAINTS: dict[str, Sequence[ConstraintSpec]] = {
    "time_budget": [Interval(Real, 0, None, closed="neither",
                             text="a finite number of seconds > 0")],
    "n_threads": [None, POSITIVE_INT],
    "random_state": RANDOM_STATE,
    "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
    "max_epochs": [POSITIVE_INT],
    "n_iter_no_change": [POSITIVE_INT],
    "verbose": ["boolean"],
    "clock": [Options(["wall", "work"])],
    "cold_start": [None, Options(["items", "users"])],
}


def _resolve_seed(random_state):
    """A seed from ``random_state`` (checked: None, an integer >= 0 or a Generator)."""
    if random_state is None:
        return int(cast(int, np.random.SeedSequence().entropy)) % 2**32
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**32))
    return int(random_state)


def _check_space(space, n_items):
    """The search space as a list of sub-spaces, each name -> ("choice", list) or
    ("log-uniform", low, high), every value checked against WARPFactorizer's parameter
    validation."""
    from collections.abc import Mapping

    if isinstance(space, (list, tuple)) and space and all(
            isinstance(sub, Mapping) for sub in space):
        return [_check_sub_space(sub, n_items, f"search_space[{i}]")
                for i, sub in enumerate(space)]
    if not isinstance(space, Mapping):
        raise TypeError(f"search_space must be a dict of parameter name -> list of choices "
                        f"or ('log-uniform', low, high), or a non-empty list of such dicts; "
                        f"got {space!r:.80}.")
    return [_check_sub_space(space, n_items, "search_space")]


def _check_sub_space(space, n_items, where):
    """One dict of the search space, checked (``where`` names it in messages)."""
    from .model import WARPFactorizer
    from .weights import resolve_rank_weighting

    if not space:
        raise ValueError(f"{where} is empty: name at least one parameter to search "
                         f"(e.g. warprec.tuning.WARP_SEARCH_SPACE).")
    names = [n for n in WARPFactorizer().get_params() if n not in _CONTROLLED]
    # every value is checked with each loss of the sub-space (some parameters do not
    # apply to some losses, e.g. alpha > 0 to loss="ccl")
    # (a bad "loss" entry fails its own check below, with its own message)
    loss_spec = space.get("loss")
    choices = loss_spec if isinstance(loss_spec, (list, tuple, np.ndarray)) else []
    losses = [v for v in choices if _valid_loss(v)] or [WARPFactorizer().loss]
    out: dict[str, tuple[Any, ...]] = {}
    for name, spec in space.items():
        if name in _CONTROLLED:
            raise ValueError(f"{where} cannot set {name!r}: {_CONTROLLED[name]}.")
        if name not in names:
            raise ValueError(f"{where} has an unknown parameter {name!r}; searchable "
                             f"WARPFactorizer parameters are {names}.")
        if isinstance(spec, (tuple, list)) and spec and isinstance(spec[0], str) \
                and spec[0].replace("_", "-").lower().endswith("uniform"):
            if spec[0] != _LOG_UNIFORM or len(spec) != 3 or not all(
                    isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
                    for v in spec[1:]) or not 0 < spec[1] < spec[2] < math.inf:
                raise ValueError(f"{where}[{name!r}] = {spec!r}: a distribution must be "
                                 f"('log-uniform', low, high) with 0 < low < high; give a "
                                 f"list of choices otherwise.")
            values = [float(spec[1]), float(spec[2])]
            out[name] = (_LOG_UNIFORM, values[0], values[1])
        elif isinstance(spec, (list, tuple, np.ndarray)) and not isinstance(spec, str):
            values = [v.item() if isinstance(v, np.generic) else v for v in spec]
            if not values:
                raise ValueError(f"{where}[{name!r}] is an empty list; give at least "
                                 f"one choice.")
            out[name] = ("choice", values)
        else:
            raise TypeError(f"{where}[{name!r}] must be a list of choices or "
                            f"('log-uniform', low, high); got {spec!r}.")
        for value, loss in itertools.product(values, [None] if name == "loss" else losses):
            try:
                params: dict[str, Any] = {"loss": loss, name: value} if loss else {name: value}
                model = WARPFactorizer(**params)
                check_params(model.get_params())
                if name == "rank_weighting":
                    resolve_rank_weighting(value, n_items, k=model.k,
                                           top_fraction=model.top_fraction)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{where}[{name!r}] holds an invalid value {value!r}: "
                                f"{exc}") from None
    return out


def _valid_loss(value):
    from .model import WARPFactorizer

    try:
        check_params(WARPFactorizer(loss=value).get_params())
    except (TypeError, ValueError):
        return False
    return True


def _seconds(value):
    """Seconds as text: 3 significant digits, whole seconds from 100."""
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def _suggested_budget(search, used):
    """The defaults' validated fit (this call's time after compilation if longer) plus
    two first-rung trials and their share of later rungs, at the defaults trial's
    speed."""
    defaults = search.trials[0]
    per_epoch = defaults.seconds_per_epoch or 0.0
    validated = search.setup() + per_epoch * search.default_epochs + search.refit_estimate(
        defaults.train_seconds_per_epoch or 0.0, search.default_epochs)
    first = search.setup() + per_epoch * search.rungs[0]
    searched = used - search.compile_seconds
    return max(searched, validated) + 2 * first + search.later_rungs_seconds(2, per_epoch)


class _NoProgress:
    def update_to(self, seconds):
        pass

    def set_description(self, desc):
        pass

    def set_postfix_str(self, text):
        pass

    def close(self):
        pass


class _Progress:
    """A tqdm bar over the budget's seconds."""

    def __init__(self, budget):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=round(budget, 1), desc=_PROGRESS_DESC, unit="s",
                        bar_format="{l_bar}{bar}| {n:.1f}/{total:.1f} s{postfix}")
        self.shown = 0.0

    def update_to(self, seconds):
        seconds = round(min(seconds, self.bar.total), 1)
        if seconds > self.shown:
            self.bar.update(seconds - self.shown)
            self.shown = seconds

    def set_postfix_str(self, text):
        self.bar.set_postfix_str(text, refresh=False)

    def set_description(self, desc):
        self.bar.set_description(desc)

    def close(self):
        self.bar.close()


def _progress(budget, verbose):
    return _Progress(budget) if verbose else _NoProgress()
