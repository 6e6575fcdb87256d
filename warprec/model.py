"""The WARPFactorizer estimator: validation, allocation, seeding and the epoch loop.

The numerical work happens in :mod:`warprec._kernels`; this module turns user input into
canonical arrays, owns the random generator, loops over epochs (progress bar, callback,
divergence check) and maps raw ids in and out.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import scipy.sparse as sp

from . import __version__
from . import _hybrid, _persistence, _state, _validation
from ._base import FactorRecommender, training_frame
from ._inputs import check_positive_int
from ._kernels import train as _train
from ._kernels.aligned import aligned, aligned_full
from ._loss_specs import loss_spec
from ._plan import (PARAMETER_CONSTRAINTS, TrainingConfig, check_params, drop_needs_validation,
                    resolve_alpha, resolve_dropout, resolve_epochs, resolve_learning_rate,
                    resolve_learning_rate_drop, resolve_negative_weight, resolve_sample_order,
                    training_input)
from ._trainer import (Target, Trainer, fold_in_epochs, grades, kernel_inputs, kernel_settings,
                       negative_cdf, outgrows_cache, progress_bar, sample_weights, unit_rows)
from ._defaults import (EARLY_STOPPING_AUTO_USERS, FOLD_IN_PARALLEL_FROM, PREFETCH_ABOVE_BYTES,
                        TUNED_PARAMS)
from ._selection import agreed_epochs, plain_epochs, refit_folds
from .exceptions import DivergenceError
from .weights import resolve_rank_weighting

__all__ = ["WARPFactorizer", "TUNED_PARAMS"]

if TYPE_CHECKING:
    from typing import overload

    from numpy.typing import ArrayLike, NDArray
    from sklearn.utils import Tags


    from ._typing import (FeatureData, Float32Array, InteractionData, RandomState,
                          SparseMatrix, UserItems)

    #: ``sample_weight`` of ``fit``: none, the values of X, one weight per positive, or a
    #: sparse matrix with X's pattern
    SampleWeight = None | Literal["values"] | ArrayLike | SparseMatrix
    #: ``callback(model, info)`` after every epoch; returning False stops training
    Callback = Callable[["WARPFactorizer", dict[str, Any]], Any]
    #: ``(user_features, item_features)`` of a fit (None: not given)
    SideFeatures = tuple[FeatureData | None, FeatureData | None]


log = logging.getLogger(__name__)

FORMAT_VERSION = 1
#: The fitted arrays the training kernel updates.
_PARAMETER_ARRAYS = ("user_factors_", "item_factors_", "item_biases_", "user_grad_sq_",
                     "item_grad_sq_", "bias_grad_sq_")


class WARPFactorizer(FactorRecommender):
    """Matrix factorisation trained with the WARP ranking loss.

    Scores are ``f(u, i) = <U_u, V_i> + b_i``. For every observed positive ``(u, i)``,
    visited in a fresh random order each epoch, negatives ``j`` are drawn uniformly from
    the items ``u`` has not interacted with until one violates the margin
    ``1 + f(u, j) > f(u, i)`` or ``max_sampled`` draws pass. After ``N`` draws the rank
    of ``i`` among the ``Y`` negatives is estimated by ``floor((Y - 1) / N)`` (at least 1,
    since a violator exists) and the hinge ``L(rank) * (1 - f(u, i) + f(u, j))`` is
    descended, with ``L(r) = sum_{j<=r} tau_j``. The loss and the rank estimate are
    those of Weston, Bengio & Usunier 2010, "Large scale image annotation: learning to
    rank with joint word-image embeddings" (Machine Learning 81(1)); the rank weighting
    ``L`` is the ordered weighting of Usunier, Buffoni & Gallinari 2009, "Ranking with
    ordered weighted pairwise classification" (ICML). Training is Hogwild SGD in a
    parallel Numba kernel.

    Parameters
    ----------
    n_components : int, default 64
        Embedding dimension d.
    epochs : int or "auto", default "auto"
        Passes over the positives made by :meth:`fit` (and by each :meth:`partial_fit`);
        the maximum with early stopping. ``"auto"``: 50 (``AUTO_EPOCHS``), or at most 100
        (``AUTO_EPOCHS_EARLY_STOPPING``) with early stopping, which then ends training
        ``n_iter_no_change`` epochs after the best one. ``0`` trains nothing: ``fit``
        then only allocates the state (random factors, id maps) and resolves the "auto"
        parameters (``warprec.dask.fit`` starts that way).
    learning_rate : float or "auto", default "auto"
        Step size (Adagrad's base rate with the default schedule). ``"auto"`` uses
        ``min(0.46 / positives per user, 0.011 * sqrt(positives per item))`` of the
        first fit's matrix, clipped to [0.02, 0.03] (``AUTO_LR``, ``AUTO_LR_ITEM``,
        ``AUTO_LR_MIN``, ``AUTO_LR_MAX``): 0.02 on the MovieLens sets, 0.03 on
        amazon-book with 9 positives per user. Users with few positives get few updates
        per epoch and need a faster rate; items with only a few positives each are
        overfitted by a fast rate, and so are short histories at rates above 0.03.
        With ``loss="ccl"``: ``1.4 / positives per user`` clipped to [0.06, 0.3]
        (``CCL_AUTO_LR``, ``CCL_LR_MIN``, ``CCL_LR_MAX``). The value used is
        ``learning_rate_``.
    max_sampled : int, default 100
        Maximum negative draws per positive; a positive with no violator after that many
        draws is skipped for this epoch. After N draws the rank estimate is
        ``floor((Y - 1) / N)``, so catalogues of tens of thousands of items need about
        100 draws to tell a positive ranked 100th from one ranked 1,000th.
    max_violators : int, default 1
        Margin violators collected per positive (at most ``max_sampled``). With more than
        one the draws go on after the first violator until ``max_violators`` are found or
        ``max_sampled`` draws pass; from ``c`` violators in ``N`` draws the rank is
        estimated by ``floor(c * (Y - 1) / N)`` (the geometric estimate when ``c = 1``),
        and one step descends ``L(rank) / c * sum_j (1 - f(u, i) + f(u, j))`` over the
        violators found: the rank weight is shared among them, and every violator's row
        decays as a touched row does (see ``alpha``). More violators cost more draws per
        positive. Measured against the default on the benchmark family
        (benchmarks/README.md), 10 gains on catalogues whose items have tens of positives
        each (amazon-book, ML-100K) and loses on sparse ones (a few positives per item),
        so it is an option, not a default (:func:`warprec.tune` tries 1 and 10). WARP
        losses with ``rank_estimator="sampled"``, without side features.
    rank_weighting : str or array_like, default "harmonic"
        ``tau``: ``"harmonic"`` (1/j), ``"auc"`` (1), ``"precision@5"`` (1 for j <= 5; any
        cut-off; the older ``"precision@k"`` with ``k=5`` is deprecated), ``"log"``
        (LightFM's log-rank), the OWPC normalised families ``"owpc-mean"``,
        ``"owpc-top"``, ``"owpc-top-p"`` (needs ``top_fraction``), ``"owpc-harmonic"``, or
        a non-increasing array of tau_j. See :mod:`warprec.weights`.
    alpha : float or "auto", default "auto"
        Weight decay: every update multiplies the factor rows it touches by
        ``1 - learning_rate * alpha`` before the gradient step (decoupled L2
        regularisation; biases are not decayed). 0 disables it. ``"auto"`` uses
        ``AUTO_ALPHA * min(learning_rate_, 0.05) * n_items / n_positives`` of the first
        fit's matrix, at most ``AUTO_ALPHA_MAX`` (3.5 x learning rate / positives per
        item, at most 0.03), because the decay per epoch grows with the updates per item
        row: catalogues with few positives per item need more of it, dense ones almost
        none. The value used is ``alpha_``.
    n_threads : int or None, default None
        Threads for training and scoring; None uses all of Numba's threads.
    random_state : int, numpy Generator or None, default 0
        Seeds initialisation, the epoch orders and the kernel's counter-based draws.
        With one thread a fixed seed gives bit-identical factors across runs and
        processes; with several threads the same negatives are drawn but Hogwild update
        order races, so results agree only statistically.
    loss : {"warp", "warp-kos", "bpr", "ordinal", "ccl", "softmax"}, default "warp"
        ``"warp-kos"`` uses as positive the ``k``-th best scored of ``n`` positives of the
        user (k-OS WARP); ``"bpr"`` descends ``-log sigmoid(f(u,i) - f(u,j))`` with one
        negative per positive; ``"ordinal"`` treats X's values as grades (e.g. ratings
        1-5) and, for each positive, descends the ordinal-regression loss of Weimer,
        Karatzoglou, Le & Smola 2007, "COFI RANK - Maximum Margin Matrix Factorization for
        Collaborative Ranking" (NIPS 20), appendix "Ranking losses", sec. 1.2
        (:func:`warprec.losses.ordinal_loss`), over a list of the positive, ``n - 1``
        more of the user's graded items and ``max_sampled`` unobserved items of grade 0,
        scaled by the list length. ``"ccl"`` is the cosine contrastive loss of Mao et al.
        2021, "SimpleX: A Simple and Strong Baseline for Collaborative Filtering" (CIKM),
        sec. 3.2: per positive ``max(0, 1 - cos(u, i)) + negative_weight * mean_j max(0,
        cos(u, j) - margin)`` over ``n_negatives`` uniformly drawn negatives. Every
        factor row is kept at unit norm, so the scores are cosines and the item biases
        stay 0; ``alpha``, ``max_norm``, ``max_sampled``, ``max_violators`` and the rank
        options do not apply (setting ``alpha``, ``max_norm`` or ``rank_estimator`` is
        an error). :meth:`fold_in` starts a new user at the direction of the sum of the
        user's items. Measured on the benchmark family (benchmarks/README.md), it wins
        on amazon-book and loses to WARP on the MovieLens sets and the synthetic long
        tail, so WARP stays the default. ``"softmax"`` is the sampled softmax on the same
        unit rows: per positive ``-log p_i`` with ``p`` the softmax of the cosines divided
        by ``temperature`` over the positive and ``n_negatives`` uniformly drawn
        negatives, the negatives' logits raised by ``log(Y / n_negatives)`` (``Y`` the
        user's negatives; the log-Q correction of importance-sampled softmax, Bengio &
        Senecal 2008, "Adaptive importance sampling to accelerate training of a neural
        probabilistic language model", IEEE Trans. Neural Networks 19(4)), so that they
        stand for all of the user's negatives; the rules of ``"ccl"`` for unit rows
        apply to it too.
    n_negatives : int, default 200
        ``loss="ccl"`` or ``"softmax"``: negatives drawn per positive (with replacement).
    negative_sharing : int, default 1
        ``loss="ccl"`` or ``"softmax"``: positives that share one set of
        ``n_negatives`` draws. 1 draws them per positive, among the user's negatives.
        ``B > 1`` cuts each epoch's order into groups of ``B`` consecutive positives that
        share ``n_negatives`` draws over all items (with replacement; popularity-drawn
        with ``negative_sampling="popularity"``), so that their cosines are one dense
        ``B x n_negatives`` product; a draw that is one of a positive's user's positives
        is left out of that positive's loss (the cosine loss averages over the draws
        left, the softmax's correction becomes ``log(n_items / n_negatives)``). Within a
        group every cosine and gradient is taken before any row moves; the rows then
        step one after another. Other losses: must stay 1.
    margin : float, default 0.8
        ``loss="ccl"``: negatives whose cosine with the user exceeds it are pushed away;
        in [-1, 1].
    negative_weight : float or "auto", default "auto"
        ``loss="ccl"``: weight of the negatives' mean hinge. ``"auto"`` uses
        ``CCL_NEGATIVE_WEIGHT / sqrt(density)`` (2.5 / sqrt(positives / (users x items))
        of the first fit's matrix): about 10 on ML-100K, 130 on amazon-book. The value used
        is ``negative_weight_``.
    dropout : float in [0, 1) or "auto", default 0.0
        ``loss="ccl"`` or ``"softmax"``: dropout on the user vector, part of the cosine
        contrastive loss's published configurations (Mao et al. 2021, above): for every
        positive each coordinate of the user's row is zeroed with this probability (a draw
        of the positive's counter-based stream), the cosines of that step are taken with
        the rest rescaled to unit norm, and the user's row gets the gradient of the kept
        coordinates only. Scoring uses the full rows. ``"auto"``: ``CCL_DROPOUT`` (0.1, the
        published rate) with ``loss="ccl"``, else 0. It is not the default: it gains 2-14%
        NDCG@10 for the cosine loss on most sets, but its slower first epochs make
        :func:`warprec.tune` drop the cosine loss's trials on amazon-book
        (docs/design.md); a positive value with a loss other than ``"ccl"``
        and ``"softmax"`` is an error. The value used is ``dropout_``.
    temperature : float, default 0.2
        ``loss="softmax"``: the cosines are divided by it before the softmax; the smaller
        it is, the more the hardest negatives weigh.
    k : int or None, default None
        ``loss="warp-kos"``: the positive of a step is the k-th best scored of ``n`` of
        the user's positives (default 5; LightFM's name). As the cut-off of
        ``rank_weighting="precision@k"`` it is deprecated: write ``"precision@5"``.
    n : int, default 10
        The user's positives in one list: drawn per step by k-OS, graded items per list
        of ``loss="ordinal"``.
    top_fraction : float or None, default None
        p of ``rank_weighting="owpc-top-p"``.
    learning_schedule : {"adagrad", "sgd"}, default "adagrad"
        Per-coordinate Adagrad steps ``lr * g / sqrt(1 + sum g^2)`` (the accumulator starts
        at 1, so the first step equals plain SGD) or constant-rate SGD.
    negative_sampling : {"uniform", "popularity"}, default "uniform"
        How BPR draws negatives (WARP's rank estimate requires uniform draws).
    rank_estimator : {"sampled", "exact"}, default "sampled"
        ``"sampled"``: the geometric-trial estimate above. ``"exact"``: score all of the
        user's negatives for every positive, take the true number of margin violators as
        the rank and draw the violating negative uniformly among them. Exact costs
        ``n_items`` dot products per positive instead of at most ``max_sampled``; it pays
        off only for small catalogues (thousands of items) or to measure how much the
        estimate costs in quality.
    init_scale : float or "auto", default "auto"
        Factors start as ``N(0, init_scale^2 / n_components)``; biases start at 0.
        ``"auto"``: 0.1 (``INIT_SCALE``), or 0.036 (``LONG_TAIL_INIT_SCALE``, LightFM's
        start) with a WARP loss on a long tail of short histories (fewer than 15
        positives per item and 20 per user in the first fit's matrix,
        ``LONG_TAIL_MAX_PER_ITEM`` and ``LONG_TAIL_MAX_PER_USER``). The value used is
        ``init_scale_``.
    max_norm : float or None, default None
        If set, factor rows touched by an update are rescaled to Euclidean norm
        <= max_norm (the norm constraint of WSABIE in Weston, Bengio & Usunier 2010).
    sample_order : {"auto", "positives", "users"}, default "auto"
        The order in which an epoch visits the positives (a fresh random order every
        epoch). ``"positives"``: all positives shuffled independently (LightFM's
        order). ``"users"``: the users in random order, each user's positives one after
        the other in random order; a user's factor and Adagrad rows then come from
        memory once per epoch instead of once per positive, which shortens epochs once the
        parameters outgrow the CPU caches. ``"auto"``: ``"users"`` when the factors and
        Adagrad state take more than ``PREFETCH_ABOVE_BYTES`` (8 MiB), else
        ``"positives"``: while the rows stay cached the users order saves little time, and
        it trains on a less random sequence of updates, which can cost ranking quality;
        and ``"positives"`` with a WARP loss on a long tail of short histories (see
        ``init_scale``), where it trains better whatever the parameters' size, and with
        ``negative_sharing > 1`` (a group of one user's positives takes all their steps
        from one snapshot of the user's row; measured worse).
        The order used is ``sample_order_``. The orders give different factors. The
        measurements behind the choice are in docs/design.md ("Sample order: positives or
        users").
    early_stopping : bool, "auto" or "refit", default "auto"
        True: hold out validation positives, score them every ``validation_interval``
        epochs, stop once ``n_iter_no_change`` epochs passed without a better score, and
        restore the parameters (factors, biases and optimizer state) of the best checked
        epoch; ``epochs`` is then the maximum. The validation positives are
        ``validation_data`` if :meth:`fit` gets it, else a seeded ``validation_fraction``
        of the training positives of at most ``VALIDATION_MAX_USERS`` (10,000) users, a
        seeded sample of those with 2 or more positives (see
        ``warprec._validation.holdout``). Those are then not trained on; they stay in
        ``train_matrix_``, so ``recommend(exclude_seen=True)`` still excludes them.
        ``"auto"``: True when X has at least ``EARLY_STOPPING_AUTO_USERS`` (20,000) users
        with 2 or more positives, so that the hold-out takes positives from at most half
        of the users, else False (the choice is ``early_stopping_``; in the manner of
        scikit-learn's ``HistGradientBoostingClassifier``). ``"refit"``: validate, then
        train the model again from scratch on all of X for ``best_epoch_`` epochs (the
        same result as ``fit`` with ``epochs=best_epoch_`` and ``early_stopping=False``,
        with the same ``learning_rate_drops_``), so the held-out positives are trained on
        too. The validation runs in up to ``REFIT_MAX_FOLDS`` (3) passes on disjoint
        hold-outs, as many as it takes for about ``VALIDATION_MAX_USERS`` checked users
        in all (one on large data), each trained at least for the plain fit's epoch
        count (``epochs="auto"``'s 50, or ``epochs`` if lower); ``best_epoch_`` is
        where the passes' mean score peaks if that beats the plain count by more than
        ``REFIT_Z`` (2) standard errors of the per-user differences (the peak chosen on
        half of the checked users, the test made on the other half), else the plain
        count: one small hold-out's best epoch is mostly noise (see
        :mod:`warprec._selection`). Where ``early_stopping="auto"`` validates (20,000
        users or more with 2 or more positives) there is no refit: the hold-out is then a
        ``validation_fraction`` of the positives of 10,000 users, a small share of X, and
        the model of the validated pass is kept at its best epoch, as the defaults keep
        it (logged at INFO level). ``validation_scores_`` are the passes' mean scores
        at the epochs every pass checked, ``history_`` that of the refit, and
        ``callback`` is called in every pass. With
        ``validation_data`` nothing is held out of X and no refit is needed: ``"refit"``
        then acts as True. Only :meth:`fit` refits (:meth:`partial_fit` of a fitted
        model raises).
    validation_fraction : float in (0, 1), default 0.1
        Share of each validated user's positives held out for early stopping when no
        ``validation_data`` is given (stochastically rounded per user; a user's last
        positive is never held out).
    n_iter_no_change : int, default 10
        Epochs without a new best validation score before training stops (training
        stops at the first check at least this many epochs after the best one). The
        validation score of a small data set is noisy from epoch to epoch, and a short
        patience stops slowly improving models early (see benchmarks/README.md).
    validation_metric : str, default "ndcg@10"
        ``"<metric>@<k>"`` with metric one of precision, recall, map, mrr, ndcg,
        hit_rate (as :func:`warprec.metrics.evaluate` defines them), computed on at most
        ``warprec._validation.VALIDATION_MAX_USERS`` users (a seeded sample) with their
        training positives excluded. Higher is better.
    validation_interval : int or "auto", default "auto"
        Epochs between validation checks (when validating; the last epoch of a call is
        always checked). ``"auto"``: every ``ceil(checked users x items /
        (VALIDATION_PAIRS_PER_POSITIVE x training positives))`` epochs, so that checks,
        which score every item for every checked user, add at most about a quarter of the
        training time; 1 unless the catalogue is large for the positives (3 on
        amazon-book). The interval used is ``validation_interval_``.
    learning_rate_drop : float in (0, 1] or "auto", default "auto"
        With early stopping: at the first validation plateau (the point where training
        would stop), restore the best epoch's parameters, multiply the learning rate by
        this factor and train on until the next plateau, which ends training (at most
        ``MAX_LEARNING_RATE_DROPS``, 1, drops per fit or partial_fit call; Keras's
        ``ReduceLROnPlateau``, with the restore). 1.0: no drop. A number below 1 needs
        validation: ``early_stopping="auto"`` then resolves to True, and
        ``early_stopping=False`` is an error. ``"auto"``: 0.1
        (``CCL_LEARNING_RATE_DROP``) with ``loss="ccl"`` or ``"softmax"`` when training
        early-stops, else 1.0 (WARP's Adagrad steps gain nothing from a drop). The
        value used is ``learning_rate_drop_``, the drops made ``learning_rate_drops_``;
        ``"refit"`` trains with the same drops. Measured in docs/design.md ("Dropping
        the learning rate on a plateau").
    verbose : bool, default False
        Show a tqdm progress bar over epochs (with the validation score when there is
        one).
    identity_features : bool, default True
        With side features (``fit(..., user_features=..., item_features=...)``): give
        every user and item of the fit an indicator feature of its own besides the given
        ones, so that warm entities keep an embedding of their own (a model with features
        is then never worse than pure collaborative filtering on them). A side without
        given features always has the indicator features.
    feature_weight : float, default 1.0
        With side features: the value of a given feature in an entity's feature row
        (times the feature's own value: a number, or 1 for a category), against its
        indicator feature's 1. A user's (item's) representation is the weighted sum of
        its features' embeddings, so a smaller weight lets the shared features shape the
        warm entities less and their own indicators more; new entities are described by
        the given features alone, whose weights then only scale their scores. Measured
        on MovieLens genres and demographics in benchmarks/results/cold_start.md. The
        value used is ``feature_weight_`` (saved with the model).
    feature_normalization : {"none", "side", "row"}, default "none"
        With side features: how each entity's feature row is scaled, with ``x`` its given
        features' values (as encoded), ``s = sum(|x|)`` and ``w = feature_weight``.
        ``"none"``: ``w x`` beside the indicator's 1. ``"side"``: ``w x / s``, so that the
        given features weigh ``w`` in total, as much for an entity with one feature as
        for one with four. ``"row"``: the whole row sums to 1, ``(1, w x) / (1 + w s)``
        with the indicator and ``x / s`` without (LightFM's ``Dataset`` normalises rows
        this way by default). A row without given features keeps its indicator's 1. The
        same rule encodes rows given later (``partial_fit``, ``predict``,
        ``recommend``, the embeddings): a new entity has no indicator, so under
        ``"row"`` its given features sum to 1. Either scaling drops how many features a
        row has, which can carry signal (a movie's number of genres predicts its
        popularity on MovieLens, where both lose cold items; measured in
        benchmarks/results/cold_start.md). The value used is ``feature_normalization_``
        (saved with the model).
    feature_negatives : float, default 0.0
        With item features (WARP or BPR): the share of the positives whose negatives are
        drawn among the items that share one of the positive's features (the rest are
        drawn uniformly), which trains the features to rank items of one genre against
        each other, as ranking cold items of that genre needs; their rank estimate is the
        positive's rank among that feature's items. Measured in
        benchmarks/results/cold_start.md.

    Attributes
    ----------
    user_factors_ : ndarray of float32, shape (n_users, n_components)
    item_factors_ : ndarray of float32, shape (n_items, n_components)
    item_biases_ : ndarray of float32, shape (n_items,)
    user_ids_, item_ids_ : ndarray or None
        Raw ids by index when fit on raw ids (DataFrame / Interactions), else None and
        the methods take row/column indices.
    train_matrix_ : scipy.sparse.csr_matrix
        The positives seen by the last fit, used by ``recommend(exclude_seen=True)``.
    epochs_done_ : int
        Epochs trained so far (over fit and partial_fit calls).
    alpha_ : float
        The weight decay used (``alpha``, or its ``"auto"`` value).
    learning_rate_ : float
        The learning rate used (``learning_rate``, or its ``"auto"`` value).
    negative_weight_ : float
        The negative weight of ``loss="ccl"`` (``negative_weight``, or its ``"auto"``
        value; computed for every loss, used by ``"ccl"`` only).
    dropout_ : float
        The dropout on the user vector (``dropout``, or its ``"auto"`` value; 0 unless
        ``loss="ccl"``).
    sample_order_ : {"positives", "users"}
        The epoch order used (``sample_order``, or its ``"auto"`` value).
    init_scale_ : float
        The initial scale used (``init_scale``, or its ``"auto"`` value).
    history_ : list of dict
        Per-epoch statistics: epoch, seconds, loss, rank_loss (with ``loss="ccl"`` or
        ``"softmax"``: the
        mean share of a positive's negative draws that score at least as high), updates,
        mean_trials, samples, learning_rate (the rate of the epoch), and
        ``validation`` (the validation score) in the epochs checked when validating.
    interrupted_ : bool
        True when the last ``fit`` or ``partial_fit`` was interrupted during its epochs
        (an exception from the callback, a ``KeyboardInterrupt``): the model keeps the
        epochs trained (``epochs_done_``; the last ``history_`` entry says
        ``interrupted``), the exception propagates, and ``partial_fit`` continues from
        there. A call that fails before its first epoch (bad input) changes nothing.
    validation_scores_ : list of float
        The validation score at each check of the last fit / partial_fit (only when
        validating: ``early_stopping`` or ``validation_data``); ``history_`` has it as
        ``validation`` in the entries of the checked epochs.
    early_stopping_ : bool
        Whether the last fit / partial_fit trained with early stopping
        (``early_stopping`` with ``"auto"`` resolved; True for ``"refit"``).
    validation_interval_ : int
        Epochs between validation checks in the last fit / partial_fit (when
        validating).
    best_epoch_ : int
        With early stopping: the number of epochs (counted over all fit and
        partial_fit calls, like ``epochs_done_``) after which the validation score was
        best; the parameters are those of that epoch and ``epochs_done_`` equals it.
    refit_ : bool
        After a fit with ``early_stopping="refit"`` that validated on held-out positives
        of X: whether the model was trained again on all of X (False where
        ``early_stopping="auto"`` validates, and the validated model is kept).
    learning_rate_drop_ : float
        The factor of a drop of the learning rate in the last fit / partial_fit
        (``learning_rate_drop``, or its ``"auto"`` value).
    learning_rate_drops_ : list of (int, float)
        ``(epoch, rate)`` for each drop of the learning rate (``learning_rate_drop``):
        after ``epoch`` epochs (counted like ``epochs_done_``) training went on at
        ``rate``. Over all fit and partial_fit calls, those of the returned parameters
        only (a drop after which no epoch scored better is undone with the restore).
        :meth:`partial_fit` continues at the last drop's rate (``learning_rate_``
        without drops).
    user_feature_factors_, item_feature_factors_ : ndarray of float32
        With side features: one embedding per feature (indicator features first, then
        the given ones, as named in ``user_feature_names_`` / ``item_feature_names_``);
        ``item_feature_biases_`` one bias per item feature. A user's or item's factors
        (``user_factors_``, ``item_factors_``, ``item_biases_``) are the weighted sums of
        its features' (LightFM's convention; the feature rows are used as given, not
        normalised). The weight decay of a feature's row is divided by the square root of
        the number of entities that have the feature (it is updated that many times as
        often).
    user_features_, item_features_ : scipy.sparse.csr_matrix
        With side features: the feature matrices of the fit's users and items.
    """

    #: Each parameter's allowed values (scikit-learn's convention), declared once in
    #: :data:`warprec._plan.PARAMETER_CONSTRAINTS` and checked before every fit.
    _parameter_constraints = PARAMETER_CONSTRAINTS

    # the fitted state beyond the base class's (set by ``fit``; unfitted models lack it)
    seed_: int
    init_scale_: float
    user_grad_sq_: Float32Array
    item_grad_sq_: Float32Array
    bias_grad_sq_: Float32Array
    epochs_done_: int
    history_: list[dict[str, Any]]
    validation_scores_: list[float]
    learning_rate_drops_: list[tuple[int, float]]
    learning_rate_: float
    alpha_: float
    interrupted_: bool

    def __init__(self, n_components: int = 64, epochs: int | Literal["auto"] = "auto",
                 learning_rate: float | Literal["auto"] = "auto", max_sampled: int = 100,
                 rank_weighting: str | ArrayLike = "harmonic",
                 alpha: float | Literal["auto"] = "auto", n_threads: int | None = None,
                 random_state: RandomState = 0, *, max_violators: int = 1,
                 loss: str = "warp", n_negatives: int = 200, negative_sharing: int = 1,
                 margin: float = 0.8,
                 negative_weight: float | Literal["auto"] = "auto",
                 dropout: float | Literal["auto"] = 0.0, temperature: float = 0.2,
                 k: int | None = None, n: int = 10, top_fraction: float | None = None,
                 learning_schedule: str = "adagrad", negative_sampling: str = "uniform",
                 rank_estimator: str = "sampled",
                 init_scale: float | Literal["auto"] = "auto", max_norm: float | None = None,
                 sample_order: str = "auto",
                 early_stopping: bool | Literal["refit", "auto"] = "auto",
                 validation_fraction: float = 0.1, n_iter_no_change: int = 10,
                 validation_metric: str = "ndcg@10",
                 validation_interval: int | Literal["auto"] = "auto",
                 learning_rate_drop: float | Literal["auto"] = "auto", verbose: bool = False,
                 identity_features: bool = True, feature_weight: float = 1.0,
                 feature_normalization: str = "none", feature_negatives: float = 0.0) -> None:
        self.n_components = n_components
        self.epochs = epochs
        self.learning_rate = learning_rate
        self.max_sampled = max_sampled
        self.max_violators = max_violators
        self.rank_weighting = rank_weighting
        self.alpha = alpha
        self.n_threads = n_threads
        self.random_state = random_state
        self.loss = loss
        self.n_negatives = n_negatives
        self.negative_sharing = negative_sharing
        self.margin = margin
        self.negative_weight = negative_weight
        self.dropout = dropout
        self.temperature = temperature
        self.k = k
        self.n = n
        self.top_fraction = top_fraction
        self.learning_schedule = learning_schedule
        self.negative_sampling = negative_sampling
        self.rank_estimator = rank_estimator
        self.init_scale = init_scale
        self.max_norm = max_norm
        self.sample_order = sample_order
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.validation_metric = validation_metric
        self.validation_interval = validation_interval
        self.learning_rate_drop = learning_rate_drop
        self.verbose = verbose
        self.identity_features = identity_features
        self.feature_weight = feature_weight
        self.feature_normalization = feature_normalization
        self.feature_negatives = feature_negatives

    # ------------------------------------------------------------------ sklearn API
    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """Parameters of this estimator (scikit-learn convention)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> WARPFactorizer:
        """Set parameters (scikit-learn convention); returns self."""
        valid = set(self._param_names())
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for WARPFactorizer; valid "
                                 f"parameters are {sorted(valid)}.")
            setattr(self, key, value)
        return self

    def __sklearn_tags__(self) -> Tags:
        """Estimator tags of scikit-learn >= 1.6 (scikit-learn is imported only here).

        ``fit`` takes no target (``target_tags.required`` is False); X is interaction
        data (a DataFrame of raw-id rows, an ``Interactions`` object or a users x items
        matrix), not a 2-D array of numeric features, and ids may be strings. Fits with
        more than one thread are not deterministic for a fixed ``random_state``
        (Hogwild updates race).
        """
        from sklearn.utils import InputTags, Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=False),
                    input_tags=InputTags(two_d_array=False, sparse=True, string=True),
                    non_deterministic=self.n_threads != 1)

    def __repr__(self) -> str:
        defaults = {p.name: p.default for p in
                    inspect.signature(type(self).__init__).parameters.values()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items()
                   if not _same(v, defaults.get(k))]
        text = f"WARPFactorizer({', '.join(changed)})"
        if getattr(self, "interrupted_", False):
            text += f"  # interrupted after {self.epochs_done_} epochs: partial_fit resumes"
        return text

    # ------------------------------------------------------------------ fitting
    def fit(self, X: InteractionData, sample_weight: SampleWeight = None, *,
            user_features: FeatureData | None = None,
            item_features: FeatureData | None = None,
            validation_data: InteractionData | None = None,
            callback: Callback | None = None, user_col: str | int | None = None,
            item_col: str | int | None = None) -> WARPFactorizer:
        """Learn embeddings from positive interactions, starting from scratch.

        Parameters
        ----------
        X : scipy.sparse matrix, dense 2-D array, warprec.data.Interactions or DataFrame
            Users x items positives. Every stored non-zero is a positive (duplicates of COO
            input are summed, stored zeros ignored; NaN/inf/negative values raise). A
            DataFrame holds raw ids in a user and an item column (``user_col``,
            ``item_col``); each row is a positive (filter ratings first with
            ``warprec.data.positives``: a rating column of more than two distinct values
            that was not filtered so, with no ``sample_weight``, gives a
            :class:`~warprec.exceptions.WarprecWarning`), and then
            ``recommend``/``predict`` take and return raw ids.
        sample_weight : None, "values", 1-D array or sparse matrix, optional
            Weight multiplying each positive's gradient. ``"values"`` uses X's stored
            values; a 1-D array is aligned with the positives in row-major order (the
            order of ``train_matrix_.data``); a sparse matrix must have X's shape and a
            value at every positive. Weights must be finite and >= 0.
        validation_data : optional
            Held-out positives scored every ``validation_interval`` epochs (see
            ``early_stopping``), in any
            form ``X`` takes, in X's index space (a matrix of X's shape, or raw ids known
            from X). Without early stopping the scores are only recorded
            (``validation_scores_``).
        user_features, item_features : optional
            Side features, which make the model hybrid: a user's (item's) embedding and
            bias are the weighted sums of its features' (see ``identity_features``). A
            scipy.sparse matrix or dense array with one row per user (item) of X, in X's
            index space, and one column per feature (the values are the weights); or a
            DataFrame with a ``user_id`` (``item_id``) column of X's ids (indices for
            matrix input) and feature columns: numeric columns are features weighted by
            their values, other columns are one-hot encoded (``"column=value"``).
            Entities without a row have only their indicator feature. Supported with the
            WARP loss (estimated ranks) and BPR, without ``max_norm``.
        callback : callable, optional
            Called as ``callback(model, info)`` after every epoch with ``info`` the
            epoch's ``history_`` entry; returning ``False`` stops training early.
        user_col, item_col : str or int, optional
            The user and item id columns of a DataFrame X (names or 0-based positions).
            By default they are found as :func:`warprec.data.read_ratings` finds them:
            ``user_id``, ``userId``, ``user``, ``uid``; ``item_id``, ``movieId``,
            ``item``, ``iid`` (any case).

        Returns
        -------
        self
        """
        X = training_frame(X, user_col=user_col, item_col=item_col,
                           check_ratings=sample_weight is None)
        snapshot = _state.snapshot(self)
        self._reset()
        features = (user_features, item_features)
        refit = self.early_stopping == "refit" and validation_data is None
        first = self._train(X, sample_weight, validation_data, callback, fresh=True,
                            features=features, snapshot=snapshot,
                            overrides=dict(record_validation=True) if refit else None)
        if refit and hasattr(self, "best_epoch_"):
            if _validation.auto_early_stopping(self.train_matrix_):
                # where the defaults early-stop, the hold-out is a sample of users'
                # positives: a refit would win back a small share of X for a new
                # fit's noise, so the validated pass is kept, as the defaults keep it
                log.info("early_stopping='refit': %d or more users with 2 or more "
                         "positives, as early_stopping='auto' validates: the validated "
                         "model (best epoch %d) is kept, not trained again",
                         EARLY_STOPPING_AUTO_USERS, self.best_epoch_)
                self.refit_ = False
            else:
                self._refit(X, sample_weight, callback, features, first.monitor)
        return self

    def _refit(self, X: InteractionData, sample_weight: SampleWeight,
               callback: Callback | None, features: SideFeatures,
               monitor: _validation.Monitor | None) -> None:
        """``early_stopping="refit"``: validate in more passes on disjoint hold-outs when
        the first pass checked few users, then train again from scratch on all of X for
        the epochs the passes agree on (:mod:`warprec._selection`), keeping the passes'
        validation record (their mean scores at the epochs every pass checked)."""
        record = {name: getattr(self, name) for name in
                  ("validation_interval_", "learning_rate_drop_")}
        drops = self.learning_rate_drops_
        assert monitor is not None, "the first pass validated (best_epoch_ is set)"
        recordings = [_recorded(monitor)]
        # (every pass holds out of the first pass's split order, even when each fit draws
        # its own seed, random_state=None: the hold-outs are then disjoint)
        matrix, seed = self.train_matrix_, self.seed_
        for fold in range(1, refit_folds(monitor.users.size)):
            if not _validation.early_stopping_holdout(matrix, float(self.validation_fraction),
                                                      seed, fold).any():
                break   # (users with too few positives to hold out more)
            self._reset()
            trainer = self._train(X, sample_weight, None, callback, fresh=True,
                                  features=features, overrides=dict(
                                      record_validation=True, validation_fold=fold,
                                      validation_seed=seed,
                                      validation_interval=record["validation_interval_"]))
            recordings.append(_recorded(trainer.monitor))
        agreement = agreed_epochs(recordings, plain_epochs(self._max_epochs()))
        log.info("early_stopping='refit': %d validated pass(es); the mean score peaks "
                 "after %d epochs (%+.4g against %d epochs, standard error %.2g): training "
                 "again for %d epochs", len(recordings), agreement.peak, agreement.gain,
                 agreement.plain, agreement.standard_error, agreement.epochs)
        self._reset()
        self._train(X, sample_weight, None, callback, fresh=True, features=features,
                    overrides=dict(epochs=agreement.epochs, early_stopping=False,
                                   drop_epochs=tuple(drops)))   # (epoch, rate) pairs
        for name, value in record.items():
            setattr(self, name, value)
        self.best_epoch_ = agreement.epochs
        self.validation_scores_ = list(agreement.scores)
        self.early_stopping_ = True
        self.refit_ = True

    def _max_epochs(self) -> int:
        """The epochs of a fit with early stopping at most (``epochs`` resolved)."""
        return resolve_epochs(self._config().epochs, True)

    def partial_fit(self, X: InteractionData, sample_weight: SampleWeight = None, *,
                    user_features: FeatureData | None = None,
                    item_features: FeatureData | None = None,
                    validation_data: InteractionData | None = None,
                    callback: Callback | None = None, user_col: str | int | None = None,
                    item_col: str | int | None = None) -> WARPFactorizer:
        """Train ``epochs`` more epochs, continuing from the current parameters and
        optimizer state (same as :meth:`fit` on an unfitted model).

        ``X`` may hold different positives, and new users and items: a matrix may have
        more rows and columns than the model (the first ``n_users_`` rows and
        ``n_items_`` columns keep their meaning), a DataFrame or ``Interactions`` may
        hold raw ids the model has not seen (appended after the known ones, in sorted
        order). Existing rows keep their factors and optimizer state; new rows start as
        in :meth:`fit` (random factors, zero biases, fresh Adagrad state), and
        ``learning_rate_`` and ``alpha_`` stay those of the first fit. With early
        stopping the same seeded validation split is drawn from ``X`` (the same positives
        as in ``fit`` when ``X`` is the same), the best score starts afresh, and the
        best epoch of this call is restored. A model with side features keeps those of
        its fit unless new ones are given (the same columns; rows for any of its users /
        items, new ones included); new users and items get an indicator feature (with
        ``identity_features``) and no other feature until they are described.
        ``user_col`` and ``item_col`` are those of :meth:`fit`.
        """
        X = training_frame(X, user_col=user_col, item_col=item_col,
                           check_ratings=sample_weight is None)
        fresh = not hasattr(self, "user_factors_")
        if fresh:
            return self.fit(X, sample_weight, user_features=user_features,
                            item_features=item_features, validation_data=validation_data,
                            callback=callback)
        if self.early_stopping == "refit":
            raise ValueError("early_stopping='refit' trains the model again from scratch "
                             "after the validated pass, which partial_fit (continuing from "
                             "the current parameters) does not do: use fit, or set "
                             "early_stopping=True for partial_fit.")
        self._train(X, sample_weight, validation_data, callback, fresh=False,
                    features=(user_features, item_features))
        return self

    def fold_in(self, user_items: UserItems, *, epochs: int | None = None,
                user_col: str | int | None = None, item_col: str | int | None = None,
                on_unknown: Literal["error", "skip"] = "error") -> Float32Array:
        """Embeddings for users described by their interactions, the item side fixed.

        Trains one user row per row of ``user_items`` with the model's loss and settings
        (learning rate, decay, draws, rank weighting) while the item factors and biases
        stay as they are: ``epochs`` seeded epochs over those rows' positives, starting
        from zero vectors with fresh Adagrad state. This is how new users - who signed up
        after training, or whose interactions changed - get recommendations without a
        refit; :meth:`recommend` does it with ``recalculate_user=True``.

        Parameters
        ----------
        user_items : matrix, list of lists or DataFrame
            The new users' positives: a scipy.sparse matrix or dense 2-D array of shape
            (n_rows, n_items_), one row per user over the model's items (its index space;
            every stored non-zero is a positive); a list with one list of raw item ids
            per user, e.g. ``[[1, 50, 172], [3]]``; or a DataFrame of (user id, item id)
            rows, one row of the result per distinct user in the order of first
            appearance (``pandas.unique`` of the user column). See
            :meth:`user_item_rows`.
        epochs : int, optional
            Epochs over the rows' positives (default: the epochs the model was trained
            for, ``epochs_done_``).
        user_col, item_col : str or int, optional
            The id columns of a DataFrame (by default found as ``fit`` finds them).
        on_unknown : {"error", "skip"}, default "error"
            Item ids the model was not fit on: a KeyError naming them, or left out with a
            :class:`~warprec.exceptions.WarprecWarning`.

        Returns
        -------
        ndarray of float32, shape (n_rows, n_components)
            The users' factors. A row without positives gets the zero vector: its scores
            are the item biases.

        Notes
        -----
        The draws come from the model's seed, so the same rows give the same embeddings;
        each epoch visits the rows in order, each row's positives in a shuffled order of
        their own, and the draws of a positive are keyed by its position in
        ``user_items``: a row folded in alone gets the embedding it gets as the first row
        of a batch. Up to ``FOLD_IN_PARALLEL_FROM`` positives they are computed on one
        thread and are bit-identical across calls, above it on the model's ``n_threads``
        (Hogwild, like ``fit``), where they agree only statistically. Not available for
        ``loss="ordinal"``.
        """
        self._check_fitted()
        config = self._config()
        if not config.loss.fold_in:
            raise ValueError(f"fold_in is not available for loss={self.loss!r}; fit a WARP or "
                             f"BPR model to fold in new users.")
        matrix = self.user_item_rows(user_items, user_col=user_col, item_col=item_col,
                                     on_unknown=on_unknown)
        n_epochs = (max(self.epochs_done_, 1) if epochs is None
                    else check_positive_int(epochs, "epochs"))
        d = self.user_factors_.shape[1]
        users_out = aligned_full((matrix.shape[0], d), 0.0, np.float32)
        if matrix.nnz == 0:
            return users_out
        if config.loss.sphere:
            # cosine rows start at the direction of the sum of the user's items (a zero row
            # has none), which the epochs then refine
            users_out[:] = matrix.astype(bool).astype(np.float32) @ self.item_factors_
            unit_rows(users_out)
        n_threads = config.n_threads if matrix.nnz >= FOLD_IN_PARALLEL_FROM else 1
        seed = int(np.random.default_rng([self.seed_, 3]).integers(0, 2**63 - 1))
        inputs = kernel_inputs(
            config, matrix, d, weights=np.ones(matrix.nnz, np.float32),
            grades=np.zeros(0, np.int64),
            neg_cdf=negative_cdf(self.train_matrix_, self.negative_sampling),
            settings=self._kernel_settings(config, matrix.shape[1], seed),
            n_threads=n_threads, freeze_items=True)
        # the item arrays are read, never written, in this mode
        params = _train.Parameters(users_out, self.item_factors_, self.item_biases_,
                                   aligned_full((matrix.shape[0], d), 1.0, np.float32),
                                   self.item_grad_sq_, self.bias_grad_sq_)
        epoch = fold_in_epochs(inputs, params, n_epochs, seed, n_threads)
        if epoch is not None:
            raise DivergenceError(
                f"Folding in diverged in epoch {epoch}: an update made a user's factors "
                f"NaN or infinite. The model's learning_rate ({self.learning_rate_:.4g}) "
                f"or its scores are too large for these rows.", epoch)
        return users_out

    def _config(self) -> TrainingConfig:
        """The checked parameters (:func:`warprec._plan.check_params`)."""
        return check_params(self.get_params())

    def _kernel_settings(self, config: TrainingConfig, n_items: int,
                         seed: int) -> _train.Settings:
        """The kernel's settings with the fitted rates and this model's rank weighting
        over ``n_items`` items, its random streams keyed by ``seed``."""
        weighting = resolve_rank_weighting(self.rank_weighting, n_items, k=self.k,
                                           top_fraction=self.top_fraction)
        return kernel_settings(config, learning_rate=self.learning_rate_, alpha=self.alpha_,
                               negative_weight=self.negative_weight_, dropout=self.dropout_,
                               weighting=weighting, seed=seed)

    def _reset(self) -> None:
        for name in list(vars(self)):
            if name.endswith("_") and not name.startswith("__"):
                delattr(self, name)

    def _train(self, X: InteractionData, sample_weight: SampleWeight,
               validation_data: InteractionData | None, callback: Callback | None,
               fresh: bool, features: SideFeatures, overrides: dict[str, Any] | None = None,
               snapshot: dict[str, Any] | None = None) -> Trainer:
        """Check every input, then train; returns the trainer. ``overrides`` replaces
        fields of the training configuration (``early_stopping="refit"``'s passes). A
        failure before the first epoch restores the fitted state of ``snapshot`` (default:
        the state now) exactly; an exception during the epochs (a callback's, an
        interrupt) keeps the epochs trained and marks the model ``interrupted_``; a
        divergence keeps its finite, unusable parameters."""
        snapshot = _state.snapshot(self) if snapshot is None else snapshot
        try:
            run = self._prepare(X, sample_weight, validation_data, fresh, features,
                                overrides or {})
        except BaseException:
            _state.restore(self, snapshot)
            raise
        trainer, epochs = run
        progress = progress_bar(epochs, self.verbose)
        self.interrupted_ = False
        try:
            trainer.run(callback, progress)
        except DivergenceError:
            raise
        except BaseException as exc:
            self.interrupted_ = True
            if self.history_:
                self.history_[-1]["interrupted"] = True
            log.warning("training was interrupted after %d epochs (%s); the model keeps "
                        "them and partial_fit continues from them", self.epochs_done_,
                        type(exc).__name__)
            raise
        finally:
            progress.close()
        return trainer

    def _prepare(self, X: InteractionData, sample_weight: SampleWeight,
                 validation_data: InteractionData | None, fresh: bool,
                 features: SideFeatures, overrides: dict[str, Any]) -> tuple[Trainer, int]:
        """Everything before the first epoch: the checked configuration (with
        ``overrides``), the input in the model's index space, the state allocated or
        grown, the validation split, the resolved rates; returns the trainer and its epoch
        count."""
        config = replace(self._config(), **overrides)
        matrix, user_ids, item_ids = self._fit_input(X, fresh)
        weights = sample_weights(matrix, sample_weight)
        if fresh:
            _state.initialise(self, matrix, user_ids, item_ids, config)
            if any(f is not None for f in features):
                _hybrid.initialise(self, features, config)
        else:
            if not self._hybrid() and any(f is not None for f in features):
                raise ValueError("this model was fit without side features; use fit() to "
                                 "start a model with features.")
            _state.grow(self, matrix.shape, user_ids, item_ids)
            self._align_parameters()
            if self._hybrid():
                _hybrid.grow(self, matrix.shape)
                _hybrid.update(self, features)
        self.train_matrix_ = matrix
        matrix, weights, monitor, config = self._validation_split(matrix, weights,
                                                                  validation_data, config)
        spec = config.loss
        kept = {name: getattr(self, name, None) if not fresh else None
                for name in ("learning_rate_", "alpha_", "negative_weight_")}
        self.learning_rate_ = resolve_learning_rate(self.learning_rate, spec, matrix,
                                                    kept["learning_rate_"])
        self.alpha_ = resolve_alpha(self.alpha, spec, self.learning_rate_, matrix,
                                    kept["alpha_"])
        self.negative_weight_ = resolve_negative_weight(self.negative_weight, spec, matrix,
                                                        kept["negative_weight_"])
        self.dropout_ = resolve_dropout(self.dropout, spec)
        self.sample_order_ = resolve_sample_order(self.sample_order, spec, matrix,
                                                  self._outgrows_cache(),
                                                  self.negative_sharing)
        hybrid = self._hybrid()
        inputs = kernel_inputs(
            config, matrix, self.user_factors_.shape[1], weights=weights,
            grades=grades(matrix, config.loss),
            neg_cdf=negative_cdf(matrix, self.negative_sampling),
            settings=self._kernel_settings(config, matrix.shape[1], self.seed_),
            n_threads=config.n_threads, prefetch=self._outgrows_cache(),
            features=hybrid and not _hybrid.plain_kernel(self))
        if hybrid:
            # (the feature matrices and their decay shares do not change during a fit:
            # the hybrid kernel's arguments are converted once)
            kernel_view = _hybrid.kernel_parameters(self)
            target = Target(self._parameters, lambda: kernel_view,
                            lambda: _hybrid.represent(self))
        else:
            target = Target(self._parameters,
                            lambda: _train.Parameters(*self._parameters().values()))
        # (epochs resolved to a count by _validation_split)
        return Trainer(self, config, inputs, target, matrix, monitor), int(config.epochs)

    def _validation_split(self, matrix: sp.csr_matrix, weights: NDArray[Any],
                          validation_data: InteractionData | None, config: TrainingConfig,
                          ) -> tuple[sp.csr_matrix, NDArray[Any], _validation.Monitor | None,
                                     TrainingConfig]:
        """The positives to train on, their weights, the validation monitor (None when not
        validating) and the configuration with ``early_stopping``, ``epochs`` and
        ``validation_interval`` resolved. Early stopping without ``validation_data`` holds
        out a seeded share of the positives of (a seeded sample of) the users (the same
        split for the same X and random_state, in fit and partial_fit)."""
        self.validation_scores_ = []
        for name in ("best_epoch_", "validation_interval_"):
            if hasattr(self, name):
                delattr(self, name)
        stopping = config.early_stopping
        if stopping == "auto":
            # (a learning-rate drop waits for a validation plateau)
            stopping = (drop_needs_validation(self.learning_rate_drop)
                        or _validation.auto_early_stopping(matrix))
        self.early_stopping_ = bool(stopping)
        config = replace(config, early_stopping=self.early_stopping_,
                         epochs=resolve_epochs(config.epochs, self.early_stopping_))
        self.learning_rate_drop_ = resolve_learning_rate_drop(
            self.learning_rate_drop, config.loss, self.early_stopping_)
        if validation_data is None and not stopping:
            return matrix, weights, None, config
        n_relevant = None
        if config.record_validation:   # a refit's validated pass: it scores the plain count
            config = replace(config, min_epochs=plain_epochs(int(config.epochs)))
        if validation_data is None:
            seed = self.seed_ if config.validation_seed is None else config.validation_seed
            held = _validation.early_stopping_holdout(matrix, float(self.validation_fraction),
                                                      seed, config.validation_fold)
            valid = _validation.select(matrix, held)
            matrix, weights = _validation.select(matrix, ~held), weights[~held]
        else:
            valid, extra = self._as_index_matrix(validation_data, "validation_data", True)
            _check_validation_data(valid, matrix)
            n_relevant = np.diff(valid.indptr).astype(np.int64) + extra
        # (the hold-out keeps every user's last positive, so something is left to train on)
        monitor = _validation.Monitor(valid, matrix, self.validation_metric, [self.seed_, 2],
                                      config.n_threads, n_relevant,
                                      record=config.record_validation)
        interval = config.validation_interval
        if interval == "auto":
            interval = _validation.check_interval(monitor.users.size, matrix.shape[1],
                                                  matrix.nnz)
        self.validation_interval_ = int(interval)
        return matrix, weights, monitor, replace(config, validation_interval=int(interval))

    def _parameters(self) -> dict[str, Float32Array]:
        """The arrays that training updates (and early stopping restores), by name."""
        names = _hybrid.FEATURE_ARRAYS if self._hybrid() else _PARAMETER_ARRAYS
        return {name: getattr(self, name) for name in names}

    # ------------------------------------------------------------------ side features
    def _hybrid(self) -> bool:
        return _hybrid.is_hybrid(self)

    if TYPE_CHECKING:  # items have biases, users none (as FactorRecommender's)
        @overload
        def _embed_features(self, kind: Literal["user"], features: FeatureData,
                            ) -> tuple[Float32Array, None, NDArray[Any]]: ...

        @overload
        def _embed_features(self, kind: Literal["item"], features: FeatureData,
                            ) -> tuple[Float32Array, Float32Array, NDArray[Any]]: ...

    def _embed_features(self, kind: Literal["user", "item"], features: FeatureData,
                        ) -> tuple[Float32Array, Float32Array | None, NDArray[Any]]:
        """``(factors, biases, labels)`` of the entities described by feature rows (see
        :func:`warprec._hybrid.embed`)."""
        if getattr(self, f"{kind}_feature_encoder_", None) is None:
            return super()._embed_features(kind, features)
        return _hybrid.embed(self, kind, features, self._known)

    def _align_parameters(self) -> None:
        """Give the parameter arrays cache-line-aligned data (a copy of those without,
        e.g. after ``load`` or a replaced attribute; see ``warprec._kernels.aligned``)."""
        for name in _PARAMETER_ARRAYS:
            setattr(self, name, aligned(getattr(self, name)))

    def _outgrows_cache(self) -> bool:
        """Whether the factors and their Adagrad state exceed ``PREFETCH_ABOVE_BYTES``."""
        (n_users, d), (n_items, _) = self.user_factors_.shape, self.item_factors_.shape
        return outgrows_cache(n_users, n_items, d, PREFETCH_ABOVE_BYTES)

    def _fit_input(self, X: InteractionData, fresh: bool,
                   ) -> tuple[sp.csr_matrix, NDArray[Any] | None, NDArray[Any] | None]:
        """Canonical CSR plus raw id arrays (None for matrix input); for a fitted model,
        in its index space extended by any new users and items of ``X``."""
        matrix, user_ids, item_ids = training_input(X)
        if not fresh:
            matrix, user_ids, item_ids = _state.extend_index_space(self, matrix, user_ids,
                                                                 item_ids)
        if matrix.shape[1] >= 2**31 - 1:
            raise ValueError("warprec supports fewer than 2**31 - 1 items.")
        return matrix, user_ids, item_ids

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> str:
        """Write the fitted model to ``path`` (``.npz``, no pickle), atomically.

        The file holds every fitted attribute (factors, biases, optimizer state, id maps,
        training matrix, history) and the hyperparameters, so ``load`` followed by
        ``partial_fit`` resumes exactly, and the item indexes built for the current
        factors (:meth:`build_index`), in their library's own format. The data goes to a
        temporary file in the same folder that replaces ``path`` only once complete.
        """
        self._check_fitted()
        if not self._parameters_usable():
            raise ValueError("Refusing to save a model with non-finite parameters (or so large "
                             "that its scores overflow float32): training diverged. Refit "
                             "with a lower learning_rate.")
        try:   # (what load would reject is never written over a good file)
            _persistence.check_loaded(self)
        except ValueError as exc:
            raise ValueError(f"Refusing to save an inconsistent model: {exc}.") from exc
        path = _persistence.check_target(path)
        arrays = dict(
            format_version=np.array(FORMAT_VERSION),
            warprec_version=np.array(__version__),
            params=np.array(json.dumps(_persistence.jsonable_params(self.get_params()))),
            user_factors=self.user_factors_, item_factors=self.item_factors_,
            item_biases=self.item_biases_, user_grad_sq=self.user_grad_sq_,
            item_grad_sq=self.item_grad_sq_, bias_grad_sq=self.bias_grad_sq_,
            seed=np.array(self.seed_, dtype=np.uint64), epochs_done=np.array(self.epochs_done_),
            alpha=np.array(self.alpha_), learning_rate=np.array(self.learning_rate_),
            negative_weight=np.array(self.negative_weight_),
            init_scale=np.array(self.init_scale_),
            validation_scores=np.array(self.validation_scores_, dtype=np.float64),
            history=np.array(json.dumps(self.history_)),
            train_indptr=self.train_matrix_.indptr, train_indices=self.train_matrix_.indices,
            train_data=self.train_matrix_.data,
        )
        for name in ("best_epoch", "validation_interval", "early_stopping", "interrupted"):
            if hasattr(self, name + "_"):
                arrays[name] = np.array(getattr(self, name + "_"))
        arrays["learning_rate_drops"] = np.array([e for e, _ in self.learning_rate_drops_],
                                                 dtype=np.int64)
        arrays["dropped_learning_rates"] = np.array([r for _, r in self.learning_rate_drops_],
                                                    dtype=np.float64)
        if self._hybrid():
            arrays.update(_hybrid.arrays_to_save(self))
        for kind, ids in (("user", self.user_ids_), ("item", self.item_ids_)):
            if ids is not None:
                arrays[f"{kind}_ids"], arrays[f"{kind}_ids_kind"] = _persistence.encode_ids(ids)
        arrays.update(self.index_arrays())
        return _persistence.write(path, arrays)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> WARPFactorizer:
        """Read a model written by :meth:`save`.

        Raises
        ------
        FileNotFoundError
            No file at ``path``.
        ValueError
            The file is not a warprec model, is truncated or corrupted, or was written by
            a newer format version.
        """
        path = os.fspath(path)
        data = _persistence.read(path, FORMAT_VERSION)
        try:
            model = cls(**json.loads(str(data["params"])))
            model.user_factors_ = data["user_factors"]
            model.item_factors_ = data["item_factors"]
            model.item_biases_ = data["item_biases"]
            model.user_grad_sq_ = data["user_grad_sq"]
            model.item_grad_sq_ = data["item_grad_sq"]
            model.bias_grad_sq_ = data["bias_grad_sq"]
            model.seed_ = int(data["seed"])
            model.epochs_done_ = int(data["epochs_done"])
            # (files written before learning_rate_drop existed: no drops)
            model.learning_rate_drops_ = [
                (int(e), float(r)) for e, r in zip(data.get("learning_rate_drops", []),
                                                   data.get("dropped_learning_rates", []))]
            # files written before alpha="auto" existed have a numeric alpha
            model.alpha_ = float(data["alpha"]) if "alpha" in data else float(model.alpha)
            # files written before learning_rate="auto" existed have a numeric rate
            model.learning_rate_ = (float(data["learning_rate"]) if "learning_rate" in data
                                    else float(model.learning_rate))
            model.validation_scores_ = [float(v) for v in data.get("validation_scores", [])]
            for name in ("best_epoch", "validation_interval"):
                if name in data:
                    setattr(model, name + "_", int(data[name]))
            # (files written before early_stopping="auto" existed: the parameter says)
            model.early_stopping_ = (bool(data["early_stopping"]) if "early_stopping" in data
                                     else bool(model.early_stopping))
            spec = loss_spec(model.loss)
            model.dropout_ = resolve_dropout(model.dropout, spec)
            model.learning_rate_drop_ = resolve_learning_rate_drop(model.learning_rate_drop,
                                                                   spec, model.early_stopping_)
            model.history_ = json.loads(str(data["history"]))
            n_users, n_items = model.user_factors_.shape[0], model.item_factors_.shape[0]
            model.train_matrix_ = sp.csr_matrix(
                (data["train_data"], data["train_indices"], data["train_indptr"]),
                shape=(n_users, n_items))
            # files written before loss="ccl" existed hold no negative weight
            model.negative_weight_ = (float(data["negative_weight"]) if "negative_weight" in data
                                      else resolve_negative_weight(model.negative_weight, spec,
                                                                   model.train_matrix_))
            model.sample_order_ = resolve_sample_order(model.sample_order, spec,
                                                       model.train_matrix_,
                                                       model._outgrows_cache(),
                                                       model.negative_sharing)
            # (files written before init_scale="auto" existed: the parameter says)
            model.init_scale_ = (float(data["init_scale"]) if "init_scale" in data
                                 else float(model.init_scale))
            model.user_ids_ = _persistence.decode_ids(data, "user")
            model.item_ids_ = _persistence.decode_ids(data, "item")
            if "user_feature_factors" in data:
                _hybrid.load_arrays(model, data)
            # (files written before interrupted_ existed: complete fits)
            model.interrupted_ = bool(data["interrupted"]) if "interrupted" in data else False
            _persistence.check_loaded(model)
            model.restore_indexes(data)   # (read on first use: no optional library needed)
        except (KeyError, ValueError, TypeError) as exc:
            raise ValueError(f"{path!r} is a damaged warprec model file: {exc}") from exc
        if not model._parameters_usable():
            raise ValueError(f"{path!r} holds non-finite parameters (or ones whose scores "
                             f"overflow float32); the file is corrupted.")
        return model


# ---------------------------------------------------------------------- helpers
def _same(a: object, b: object) -> bool:
    try:
        return bool(a == b) if not isinstance(a, np.ndarray) else False
    except Exception:
        return False


def _recorded(monitor: _validation.Monitor | None) -> dict[int, NDArray[np.float64]]:
    """The per-user values a validated pass of ``early_stopping="refit"`` recorded (its
    monitor keeps them: ``record_validation=True``)."""
    assert monitor is not None and monitor.recorded is not None, "a validated pass records"
    return monitor.recorded


def _check_validation_data(valid: sp.csr_matrix, train: sp.csr_matrix) -> None:
    """A ValueError when ``validation_data`` (in the model's index space) cannot measure
    anything: no positive of a user and item the model knows, or every positive also a
    training positive (the check ranks unseen items only, so it would score 0 at every
    epoch and early stopping would keep the first)."""
    if valid.nnz == 0:
        raise ValueError("validation_data shares no (user, item) pair with the model: its "
                         "users or its items are all unknown to the model (not in X), so "
                         "every validation check would score 0. Pass held-out positives of "
                         "X's users on X's items.")
    pattern = valid.copy()
    pattern.data = np.ones_like(pattern.data)
    overlap = pattern.multiply(train.astype(bool)).nnz
    if overlap == valid.nnz:
        raise ValueError("validation_data holds only positives that are also in X (the "
                         "training data): a validation check ranks the items a user has not "
                         "trained on, so it would score 0 at every epoch. Hold positives out "
                         "of X for validation (or let early stopping hold them out: leave "
                         "validation_data=None).")

