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
import tempfile
import warnings
import zipfile
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from . import __version__
from . import _validation
from ._base import FactorRecommender
from ._features import FeatureEncoder
from ._inputs import IdMap, as_interaction_matrix, check_positive_int
from ._kernels import train as _train
from ._kernels.aligned import aligned, aligned_full
from ._loss_specs import loss_spec
from ._plan import (PARAMETER_CONSTRAINTS, TrainingConfig, check_params, drop_needs_validation,
                    long_tail, resolve_epochs, resolve_init_scale, training_input)
from ._trainer import (Target, Trainer, fold_in_epochs, kernel_inputs, kernel_settings,
                       progress_bar, unit_rows)
from ._defaults import FOLD_IN_PARALLEL_FROM, PREFETCH_ABOVE_BYTES, TUNED_PARAMS
from .exceptions import DivergenceError, WarprecWarning
from .weights import resolve_rank_weighting

__all__ = ["WARPFactorizer", "TUNED_PARAMS"]

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
#: The fitted arrays the training kernel updates.
_PARAMETER_ARRAYS = ("user_factors_", "item_factors_", "item_biases_", "user_grad_sq_",
                     "item_grad_sq_", "bias_grad_sq_")
#: The arrays the hybrid model's kernel updates (with side features).
_FEATURE_ARRAYS = ("user_feature_factors_", "item_feature_factors_", "item_feature_biases_",
                   "user_feature_grad_sq_", "item_feature_grad_sq_",
                   "item_feature_bias_grad_sq_")


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
        ``n_iter_no_change`` epochs after the best one.
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
        ``tau``: ``"harmonic"`` (1/j), ``"auc"`` (1), ``"precision@k"`` (1 for j <= k, needs
        ``k``), ``"precision@1"``, ``"log"`` (LightFM's log-rank), the OWPC normalised
        families ``"owpc-mean"``, ``"owpc-top"``, ``"owpc-top-p"`` (needs
        ``top_fraction``), ``"owpc-harmonic"``, or a non-increasing array of tau_j. See
        :mod:`warprec.weights`.
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
        The cut-off of ``rank_weighting="precision@k"`` and the k of k-OS (default 5).
    n : int, default 10
        Number of positives drawn per step by k-OS, and graded items per list of
        ``loss="ordinal"``.
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
        ``init_scale``), where it trains better whatever the parameters' size.
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
        scikit-learn's ``HistGradientBoostingClassifier``). ``"refit"``: after that
        validated pass, :meth:`fit` trains the model again from scratch on all of X for
        ``best_epoch_`` epochs (the same result as ``fit`` with ``epochs=best_epoch_``
        and ``early_stopping=False``, with the same ``learning_rate_drops_``), so the
        held-out positives are trained on too, for about twice the time of one fit;
        ``best_epoch_`` and ``validation_scores_`` are those of the validated pass,
        ``history_`` that of the refit, and ``callback`` is called in both passes. With
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

    def __init__(self, n_components=64, epochs="auto", learning_rate="auto", max_sampled=100,
                 rank_weighting="harmonic", alpha="auto", n_threads=None, random_state=0, *,
                 max_violators=1, loss="warp", n_negatives=200, margin=0.8,
                 negative_weight="auto", dropout=0.0, temperature=0.2, k=None, n=10,
                 top_fraction=None, learning_schedule="adagrad",
                 negative_sampling="uniform", rank_estimator="sampled", init_scale="auto",
                 max_norm=None, sample_order="auto", early_stopping="auto",
                 validation_fraction=0.1, n_iter_no_change=10, validation_metric="ndcg@10",
                 validation_interval="auto", learning_rate_drop="auto", verbose=False,
                 identity_features=True):
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

    # ------------------------------------------------------------------ sklearn API
    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep=True):
        """Parameters of this estimator (scikit-learn convention)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set parameters (scikit-learn convention); returns self."""
        valid = set(self._param_names())
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for WARPFactorizer; valid "
                                 f"parameters are {sorted(valid)}.")
            setattr(self, key, value)
        return self

    def __sklearn_tags__(self):
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

    def __repr__(self):
        defaults = {p.name: p.default for p in
                    inspect.signature(type(self).__init__).parameters.values()}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items()
                   if not _same(v, defaults.get(k))]
        return f"WARPFactorizer({', '.join(changed)})"

    # ------------------------------------------------------------------ fitting
    def fit(self, X, sample_weight=None, *, user_features=None, item_features=None,
            validation_data=None, callback=None):
        """Learn embeddings from positive interactions, starting from scratch.

        Parameters
        ----------
        X : scipy.sparse matrix, dense 2-D array, warprec.data.Interactions or DataFrame
            Users x items positives. Every stored non-zero is a positive (duplicates of COO
            input are summed, stored zeros ignored; NaN/inf/negative values raise). A
            DataFrame needs ``user_id`` and ``item_id`` columns of raw ids; each row is a
            positive (filter ratings first with ``warprec.data.positives``), and then
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

        Returns
        -------
        self
        """
        self._reset()
        features = (user_features, item_features)
        self._train(X, sample_weight, validation_data, callback, fresh=True,
                    features=features)
        if self.early_stopping == "refit" and validation_data is None \
                and hasattr(self, "best_epoch_"):
            self._refit(X, sample_weight, callback, features)
        return self

    def _refit(self, X, sample_weight, callback, features):
        """``early_stopping="refit"``: train again from scratch on all of X for the
        validated pass's ``best_epoch_`` epochs, keeping that pass's validation record."""
        record = {name: getattr(self, name) for name in
                  ("best_epoch_", "validation_scores_", "validation_interval_",
                   "learning_rate_drop_")}
        drops = self.learning_rate_drops_
        self._reset()
        self._train(X, sample_weight, None, callback, fresh=True, features=features,
                    refit_epochs=record["best_epoch_"], refit_drops=drops)
        for name, value in record.items():
            setattr(self, name, value)
        self.early_stopping_ = True

    def partial_fit(self, X, sample_weight=None, *, user_features=None, item_features=None,
                    validation_data=None, callback=None):
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
        """
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
        return self._train(X, sample_weight, validation_data, callback, fresh=False,
                           features=(user_features, item_features))

    def fold_in(self, user_items, *, epochs=None):
        """Embeddings for users described by their interactions, the item side fixed.

        Trains one user row per row of ``user_items`` with the model's loss and settings
        (learning rate, decay, draws, rank weighting) while the item factors and biases
        stay as they are: ``epochs`` seeded epochs over those rows' positives, starting
        from zero vectors with fresh Adagrad state. This is how new users - who signed up
        after training, or whose interactions changed - get recommendations without a
        refit; :meth:`recommend` does it with ``recalculate_user=True``.

        Parameters
        ----------
        user_items : scipy.sparse matrix or dense 2-D array, shape (n_rows, n_items_)
            One row per user over the model's items (its index space); every stored
            non-zero is a positive.
        epochs : int, optional
            Epochs over the rows' positives (default: the epochs the model was trained
            for, ``epochs_done_``).

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
        matrix = as_interaction_matrix(user_items, "user_items")
        if matrix.shape[1] != self.n_items_:
            raise ValueError(f"user_items must have one column per item of the model "
                             f"({self.n_items_}); got shape {matrix.shape}.")
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
            grades=np.zeros(0, np.int64), neg_cdf=self._negative_cdf(self.train_matrix_),
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

    def _kernel_settings(self, config, n_items, seed):
        """The kernel's settings with the fitted rates and this model's rank weighting
        over ``n_items`` items, its random streams keyed by ``seed``."""
        weighting = resolve_rank_weighting(self.rank_weighting, n_items, k=self.k,
                                           top_fraction=self.top_fraction)
        return kernel_settings(config, learning_rate=self.learning_rate_, alpha=self.alpha_,
                               negative_weight=self.negative_weight_, dropout=self.dropout_,
                               weighting=weighting, seed=seed)

    def _reset(self):
        for name in list(vars(self)):
            if name.endswith("_") and not name.startswith("__"):
                delattr(self, name)

    def _train(self, X, sample_weight, validation_data, callback, fresh, features,
               refit_epochs=None, refit_drops=()):
        config = self._config()
        if refit_epochs is not None:   # early_stopping="refit"'s second pass
            config = replace(config, epochs=int(refit_epochs), early_stopping=False,
                             drop_epochs=tuple(refit_drops))   # (epoch, rate) pairs
        matrix, user_ids, item_ids = self._fit_input(X, fresh)
        weights = self._sample_weights(matrix, sample_weight)
        if fresh:
            self._initialise(matrix, user_ids, item_ids, config)
            if any(f is not None for f in features):
                self._initialise_features(features, config)
        else:
            if not self._hybrid() and any(f is not None for f in features):
                raise ValueError("this model was fit without side features; use fit() to "
                                 "start a model with features.")
            self._grow(matrix.shape, user_ids, item_ids)
            self._align_parameters()
            if self._hybrid():
                self._grow_features(matrix.shape)
                self._update_features(features)
        self.train_matrix_ = matrix
        matrix, weights, monitor, config = self._validation_split(matrix, weights,
                                                                  validation_data, config)
        self.learning_rate_ = self._resolve_learning_rate(matrix, fresh)
        self.alpha_ = self._resolve_alpha(matrix, fresh)
        self.negative_weight_ = self._resolve_negative_weight(matrix, fresh)
        self.dropout_ = self._resolve_dropout()
        self.sample_order_ = self._resolve_sample_order(matrix)
        hybrid = self._hybrid()
        inputs = kernel_inputs(
            config, matrix, self.user_factors_.shape[1], weights=weights,
            grades=self._grades(matrix, config), neg_cdf=self._negative_cdf(matrix),
            settings=self._kernel_settings(config, matrix.shape[1], self.seed_),
            n_threads=config.n_threads, prefetch=self._outgrows_cache(), features=hybrid)
        if hybrid:
            # (the feature matrices and their decay shares do not change during a fit:
            # the hybrid kernel's arguments are converted once)
            kernel_view = self._feature_parameters()
            target = Target(self._parameters, lambda: kernel_view, self._represent)
        else:
            target = Target(self._parameters,
                            lambda: _train.Parameters(*self._parameters().values()))
        progress = progress_bar(config.epochs, self.verbose)
        try:
            Trainer(self, config, inputs, target, matrix, monitor).run(callback, progress)
        finally:
            progress.close()
        return self

    def _validation_split(self, matrix, weights, validation_data, config):
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
                         epochs=resolve_epochs(config.epochs, stopping))
        self.learning_rate_drop_ = self._resolve_learning_rate_drop()
        if validation_data is None and not stopping:
            return matrix, weights, None, config
        n_relevant = None
        if validation_data is None:
            held = _validation.early_stopping_holdout(matrix, float(self.validation_fraction),
                                                      self.seed_)
            valid = _validation.select(matrix, held)
            matrix, weights = _validation.select(matrix, ~held), weights[~held]
        else:
            valid, extra = self._as_index_matrix(validation_data, "validation_data", True)
            n_relevant = np.diff(valid.indptr).astype(np.int64) + extra
        # (the hold-out keeps every user's last positive, so something is left to train on)
        monitor = _validation.Monitor(valid, matrix, self.validation_metric, [self.seed_, 2],
                                      config.n_threads, n_relevant)
        interval = config.validation_interval
        if interval == "auto":
            interval = _validation.check_interval(monitor.users.size, matrix.shape[1],
                                                  matrix.nnz)
        self.validation_interval_ = int(interval)
        return matrix, weights, monitor, replace(config, validation_interval=int(interval))

    def _parameters(self):
        """The arrays that training updates (and early stopping restores), by name."""
        names = _FEATURE_ARRAYS if self._hybrid() else _PARAMETER_ARRAYS
        return {name: getattr(self, name) for name in names}

    # ------------------------------------------------------------------ side features
    def _hybrid(self):
        return hasattr(self, "user_feature_factors_")

    def _n_indicators(self, kind):
        """How many leading feature columns of ``kind`` are indicator features (one per
        user / item, or none with ``identity_features=False``)."""
        encoder = getattr(self, f"{kind}_feature_encoder_")
        width = getattr(self, f"{kind}_features_").shape[1]
        return width - (0 if encoder is None else encoder.n_features_)

    def _initialise_features(self, features, config):
        """Encode the side features (indicator features first) and initialise one
        embedding (and item bias) per feature as ``fit`` initialises factors."""
        config.loss.check_features(config.kos_n, config.exact_rank, self.max_norm)
        matrices, names = [], []
        for kind, given, ids, n in (("user", features[0], self.user_ids_,
                                     self.user_factors_.shape[0]),
                                    ("item", features[1], self.item_ids_,
                                     self.item_factors_.shape[0])):
            blocks, labels = [], []
            if given is None or self.identity_features:
                blocks.append(sp.identity(n, dtype=np.float32, format="csr"))
                labels += [f"{kind}_id={x}" for x in (ids if ids is not None else range(n))]
            encoder = None
            if given is not None:
                encoder = FeatureEncoder(kind)
                blocks.append(encoder.fit(given, ids, n))
                labels += list(encoder.names_)
            setattr(self, f"{kind}_feature_encoder_", encoder)
            matrices.append(sp.hstack(blocks, format="csr", dtype=np.float32))
            names.append(np.array(labels, dtype=object))
        self.user_features_, self.item_features_ = matrices
        self.user_feature_names_, self.item_feature_names_ = names
        rng = np.random.default_rng([self.seed_, 5])
        d = self.user_factors_.shape[1]
        scale = self.init_scale_ / np.sqrt(d)
        n_uf, n_if = matrices[0].shape[1], matrices[1].shape[1]
        f32 = np.float32
        self.user_feature_factors_ = aligned_full(
            (n_uf, d), rng.standard_normal((n_uf, d)) * scale, f32)
        self.item_feature_factors_ = aligned_full(
            (n_if, d), rng.standard_normal((n_if, d)) * scale, f32)
        self.item_feature_biases_ = aligned_full(n_if, 0.0, f32)
        self.user_feature_grad_sq_ = aligned_full((n_uf, d), 1.0, f32)
        self.item_feature_grad_sq_ = aligned_full((n_if, d), 1.0, f32)
        self.item_feature_bias_grad_sq_ = aligned_full(n_if, 1.0, f32)
        self._represent()

    def _grow_features(self, shape):
        """New users and items of a hybrid model (``partial_fit``): with indicator
        features, one more indicator each (its embedding initialised as in ``fit``); their
        given features are empty until ``user_features`` / ``item_features`` describe
        them."""
        rng = np.random.default_rng([self.seed_, 6, self.epochs_done_])
        d = self.user_factors_.shape[1]
        scale = self.init_scale_ / np.sqrt(d)
        f32 = np.float32
        for kind, n_new in (("user", shape[0]), ("item", shape[1])):
            F = getattr(self, f"{kind}_features_")
            n_old = F.shape[0]
            if n_new == n_old:
                continue
            n_identity, added = self._n_indicators(kind), n_new - n_old
            n_given = F.shape[1] - n_identity
            given = sp.vstack([F[:, n_identity:], sp.csr_matrix((added, n_given), dtype=f32)])
            names = list(getattr(self, f"{kind}_feature_names_")[n_identity:])
            if n_identity:
                given = sp.hstack([sp.identity(n_new, dtype=f32, format="csr"), given])
                ids = self.user_ids_ if kind == "user" else self.item_ids_
                names = [f"{kind}_id={x}" for x in (ids if ids is not None
                                                     else range(n_new))] + names
                arrays = [(f"{kind}_feature_factors_", rng.standard_normal((added, d)) * scale),
                          (f"{kind}_feature_grad_sq_", np.ones((added, d)))]
                if kind == "item":
                    arrays += [("item_feature_biases_", np.zeros(added)),
                               ("item_feature_bias_grad_sq_", np.ones(added))]
                for name, fresh in arrays:
                    old = getattr(self, name)
                    grown = np.concatenate([old[:n_identity], fresh.astype(f32),
                                            old[n_identity:]])
                    setattr(self, name, aligned_full(grown.shape, grown, f32))
            setattr(self, f"{kind}_features_", sp.csr_matrix(given, dtype=f32))
            setattr(self, f"{kind}_feature_names_", np.array(names, dtype=object))

    def _update_features(self, features):
        """``partial_fit``'s feature rows (same columns), if any were given: a matrix
        replaces every row, a DataFrame the rows of the ids it names."""
        for kind, given in zip(("user", "item"), features):
            if given is None:
                continue
            encoder = getattr(self, f"{kind}_feature_encoder_")
            if encoder is None:
                raise ValueError(f"this model was fit without {kind} features; pass none, or "
                                 f"fit() a new model with them.")
            current = getattr(self, f"{kind}_features_")
            n, n_identity = current.shape[0], self._n_indicators(kind)
            ids = self.user_ids_ if kind == "user" else self.item_ids_
            matrix, row_ids = encoder.transform(given)
            if row_ids is not None:
                rows = (IdMap(ids).indexer(row_ids) if ids is not None
                        else np.asarray(row_ids, dtype=np.int64))
                if (rows < 0).any() or (rows >= n).any():
                    raise ValueError(f"{kind}_features has rows for {kind}s the model does "
                                     f"not know.")
                place = sp.csr_matrix((np.ones(len(rows), np.float32),
                                       (rows, np.arange(len(rows)))), shape=(n, len(rows)))
                untouched = np.ones(n, np.float32)
                untouched[rows] = 0.0
                matrix = (sp.diags(untouched) @ current[:, n_identity:] + place @ matrix)
            elif matrix.shape[0] != n:
                raise ValueError(f"{kind}_features has {matrix.shape[0]} rows; the model has "
                                 f"{n} {kind}s.")
            setattr(self, f"{kind}_features_", sp.hstack(
                [current[:, :n_identity], matrix], format="csr", dtype=np.float32))
        self._represent()

    def _embed_features(self, kind, features):
        """``(factors, biases, labels)`` of the entities described by feature rows: the
        weighted sums of the given features' embeddings, plus an entity's own indicator
        embedding when a DataFrame row names a user / item the model knows. ``biases``
        is None for users; ``labels`` the DataFrame's id column (row indices for a
        matrix)."""
        encoder = getattr(self, f"{kind}_feature_encoder_", None)
        if encoder is None:
            return super()._embed_features(kind, features)
        matrix, labels = encoder.transform(features)
        E = getattr(self, f"{kind}_feature_factors_")
        n_identity = self._n_indicators(kind)
        factors = np.asarray(matrix @ E[n_identity:], dtype=np.float32)
        biases = None
        if kind == "item":
            biases = np.asarray(matrix @ self.item_feature_biases_[n_identity:],
                                dtype=np.float32)
        if labels is None:
            return factors, biases, np.arange(matrix.shape[0])
        if n_identity:
            known = self._known(kind, labels)
            hit = known >= 0
            factors[hit] += E[known[hit]]
            if biases is not None:
                biases[hit] += self.item_feature_biases_[known[hit]]
        return factors, biases, labels

    def _feature_arrays(self):
        """The side features' parameters, matrices, names and encoders for ``save``."""
        out = {name.rstrip("_"): getattr(self, name) for name in _FEATURE_ARRAYS}
        for kind in ("user", "item"):
            matrix = getattr(self, f"{kind}_features_")
            out[f"{kind}_features_data"] = matrix.data
            out[f"{kind}_features_indices"] = matrix.indices
            out[f"{kind}_features_indptr"] = matrix.indptr
            out[f"{kind}_feature_names"] = np.array(json.dumps(
                [str(n) for n in getattr(self, f"{kind}_feature_names_")]))
            encoder = getattr(self, f"{kind}_feature_encoder_")
            out[f"{kind}_feature_encoder"] = np.array(
                "null" if encoder is None else encoder.to_json())
        return out

    def _load_feature_arrays(self, data):
        """The inverse of :meth:`_feature_arrays`, for ``load``."""
        for name in _FEATURE_ARRAYS:
            setattr(self, name, data[name.rstrip("_")])
        for kind, n in (("user", self.user_factors_.shape[0]),
                        ("item", self.item_factors_.shape[0])):
            width = getattr(self, f"{kind}_feature_factors_").shape[0]
            setattr(self, f"{kind}_features_", sp.csr_matrix(
                (data[f"{kind}_features_data"], data[f"{kind}_features_indices"],
                 data[f"{kind}_features_indptr"]), shape=(n, width)))
            setattr(self, f"{kind}_feature_names_", np.array(
                json.loads(str(data[f"{kind}_feature_names"])), dtype=object))
            text = str(data[f"{kind}_feature_encoder"])
            setattr(self, f"{kind}_feature_encoder_",
                    None if text == "null" else FeatureEncoder.from_json(text))

    def _feature_parameters(self):
        """The kernel's view of the hybrid model (features.FeatureParameters)."""
        from ._kernels.features import FeatureParameters

        U, V = self.user_features_, self.item_features_
        return FeatureParameters(
            U.indptr.astype(np.int64), U.indices.astype(np.int32), U.data.astype(np.float32),
            V.indptr.astype(np.int64), V.indices.astype(np.int32), V.data.astype(np.float32),
            self.user_feature_factors_, self.item_feature_factors_, self.item_feature_biases_,
            self.user_feature_grad_sq_, self.item_feature_grad_sq_,
            self.item_feature_bias_grad_sq_, _decay_share(U), _decay_share(V))

    def _represent(self):
        """``user_factors_``, ``item_factors_``, ``item_biases_`` as the weighted sums of
        the entities' feature embeddings."""
        f32 = np.float32
        self.user_factors_ = aligned(np.ascontiguousarray(
            self.user_features_ @ self.user_feature_factors_, dtype=f32))
        self.item_factors_ = aligned(np.ascontiguousarray(
            self.item_features_ @ self.item_feature_factors_, dtype=f32))
        self.item_biases_ = aligned(np.ascontiguousarray(
            self.item_features_ @ self.item_feature_biases_, dtype=f32))


    def _resolve_alpha(self, matrix, fresh):
        """The weight decay to train with: ``alpha``, or its ``"auto"`` value (kept from
        the first fit when training continues, so partial_fit does not change it)."""
        if isinstance(self.alpha, str):
            if not fresh and hasattr(self, "alpha_"):
                return self.alpha_
            alpha = loss_spec(self.loss).auto_alpha(self.learning_rate_, matrix.shape[1],
                                                    matrix.nnz)
        else:
            alpha = float(self.alpha)
        if self.learning_rate_ * alpha >= 1.0:
            warnings.warn(f"learning_rate * alpha = {self.learning_rate_ * alpha:.3g} >= 1: "
                          "every update multiplies the touched factor rows by 1 - learning_rate"
                          " * alpha <= 0, which flips their sign instead of shrinking them. "
                          "Lower alpha or learning_rate.", WarprecWarning, stacklevel=4)
        return alpha

    def _resolve_learning_rate(self, matrix, fresh):
        """The learning rate to train with: ``learning_rate``, or its ``"auto"`` value
        from the positives per user (kept from the first fit when training continues)."""
        if not isinstance(self.learning_rate, str):
            return float(self.learning_rate)
        if not fresh and hasattr(self, "learning_rate_"):
            return self.learning_rate_
        per_user = matrix.nnz / max(matrix.shape[0], 1)
        per_item = matrix.nnz / max(matrix.shape[1], 1)
        return loss_spec(self.loss).auto_learning_rate(per_user, per_item)

    def _resolve_negative_weight(self, matrix, fresh):
        """The cosine contrastive loss's negative weight: ``negative_weight``, or its
        ``"auto"`` value from the density of the first fit's matrix (kept when training
        continues)."""
        if not isinstance(self.negative_weight, str):
            return float(self.negative_weight)
        if not fresh and hasattr(self, "negative_weight_"):
            return self.negative_weight_
        density = matrix.nnz / (float(matrix.shape[0]) * matrix.shape[1])
        return loss_spec(self.loss).auto_negative_weight(density)

    def _resolve_learning_rate_drop(self):
        """The factor of a drop of the learning rate: ``learning_rate_drop``, or its
        ``"auto"`` value (after ``early_stopping_`` is known)."""
        if not isinstance(self.learning_rate_drop, str):
            return float(self.learning_rate_drop)
        return loss_spec(self.loss).auto_learning_rate_drop(self.early_stopping_)

    def _resolve_dropout(self):
        """The dropout on the user vector: ``dropout``, or its ``"auto"`` value."""
        if not isinstance(self.dropout, str):
            return float(self.dropout)
        return loss_spec(self.loss).auto_dropout()

    def _align_parameters(self):
        """Give the parameter arrays cache-line-aligned data (a copy of those without,
        e.g. after ``load`` or a replaced attribute; see ``warprec._kernels.aligned``)."""
        for name in _PARAMETER_ARRAYS:
            setattr(self, name, aligned(getattr(self, name)))

    def _outgrows_cache(self):
        """Whether the factors and their Adagrad state exceed ``PREFETCH_ABOVE_BYTES``."""
        parameter_bytes = 2 * (self.user_factors_.nbytes + self.item_factors_.nbytes)
        return parameter_bytes > PREFETCH_ABOVE_BYTES

    def _resolve_sample_order(self, matrix):
        """``sample_order``, or its ``"auto"`` value (by the size of the parameters and
        the shape of the training ``matrix``)."""
        if self.sample_order != "auto":
            return self.sample_order
        if self._outgrows_cache() and not long_tail(loss_spec(self.loss), matrix):
            return "users"
        return "positives"

    def _fit_input(self, X, fresh):
        """Canonical CSR plus raw id arrays (None for matrix input); for a fitted model,
        in its index space extended by any new users and items of ``X``."""
        matrix, user_ids, item_ids = training_input(X)
        if not fresh:
            matrix, user_ids, item_ids = self._extend_index_space(matrix, user_ids, item_ids)
        if matrix.shape[1] >= 2**31 - 1:
            raise ValueError("warprec supports fewer than 2**31 - 1 items.")
        return matrix, user_ids, item_ids

    def _extend_index_space(self, matrix, user_ids, item_ids):
        """``partial_fit``'s input in the model's index space, new users and items
        appended after the known ones."""
        n_users, n_items = self.user_factors_.shape[0], self.item_factors_.shape[0]
        if (user_ids is None) != (self.user_ids_ is None):
            known = "raw ids (a DataFrame)" if self.user_ids_ is not None else "a matrix"
            raise ValueError(f"partial_fit needs X in the form of the first fit, which was "
                             f"{known}; use fit() to start over.")
        if user_ids is None:
            if matrix.shape[0] < n_users or matrix.shape[1] < n_items:
                raise ValueError(
                    f"partial_fit got X of shape {matrix.shape} but the model knows {n_users} "
                    f"users x {n_items} items: X's rows and columns keep their meaning, so it "
                    f"must cover them (more rows or columns add new users or items); use "
                    f"fit() to start over.")
            return matrix, None, None
        users, user_map = _extend_ids(self.user_ids_, user_ids, "user")
        items, item_map = _extend_ids(self.item_ids_, item_ids, "item")
        coo = matrix.tocoo()
        matrix = as_interaction_matrix(sp.csr_matrix(
            (coo.data, (user_map[coo.row], item_map[coo.col])), shape=(len(users), len(items))))
        return matrix, users, items

    def _grow(self, shape, user_ids, item_ids):
        """Add parameter rows for new users and items (initialised as in ``fit``, from a
        generator keyed by the seed and the epochs done)."""
        n_users, n_items = self.user_factors_.shape[0], self.item_factors_.shape[0]
        if shape == (n_users, n_items):
            return
        rng = np.random.default_rng([self.seed_, 4, self.epochs_done_])
        d = self.user_factors_.shape[1]
        scale = self.init_scale_ / np.sqrt(d)
        new_users, new_items = shape[0] - n_users, shape[1] - n_items
        f32 = np.float32
        for name, fresh in (
                ("user_factors_", rng.standard_normal((new_users, d)) * scale),
                ("item_factors_", rng.standard_normal((new_items, d)) * scale),
                ("item_biases_", np.zeros(new_items)),
                ("user_grad_sq_", np.ones((new_users, d))),
                ("item_grad_sq_", np.ones((new_items, d))),
                ("bias_grad_sq_", np.ones(new_items))):
            old = getattr(self, name)
            setattr(self, name, aligned_full((old.shape[0] + len(fresh),) + old.shape[1:],
                                             np.concatenate([old, fresh.astype(f32)]), f32))
        if loss_spec(self.loss).sphere:   # new rows on the sphere too
            unit_rows(self.user_factors_[n_users:])
            unit_rows(self.item_factors_[n_items:])
        self.user_ids_, self.item_ids_ = user_ids, item_ids

    def _sample_weights(self, matrix, sample_weight):
        if sample_weight is None:
            return np.ones(matrix.nnz, dtype=np.float32)
        if isinstance(sample_weight, str):
            if sample_weight != "values":
                raise ValueError("sample_weight must be None, 'values', an array or a sparse "
                                 f"matrix (got {sample_weight!r}).")
            w = matrix.data.astype(np.float64)
        elif sp.issparse(sample_weight):
            W = sp.csr_matrix(sample_weight, dtype=np.float64)
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

    def _grades(self, matrix, config):
        if config.loss.code != _train.LOSS_ORDINAL:
            return np.zeros(0, dtype=np.int64)
        grades = np.rint(matrix.data).astype(np.int64)
        if not np.allclose(grades, matrix.data) or grades.min() < 1:
            raise ValueError("loss='ordinal' needs graded positives: X's values must be whole "
                             "numbers >= 1 (e.g. ratings 1-5; unobserved items get grade 0). "
                             "Scale half-star ratings by 2 first.")
        return grades

    def _negative_cdf(self, matrix):
        if self.negative_sampling != "popularity":
            return np.zeros(0, dtype=np.float64)
        counts = np.bincount(matrix.indices, minlength=matrix.shape[1]).astype(np.float64) + 1.0
        cdf = np.cumsum(counts)
        return cdf / cdf[-1]

    def _initialise(self, matrix, user_ids, item_ids, config):
        n_users, n_items = matrix.shape
        d = config.d
        rng = np.random.default_rng(self.random_state)
        self.seed_ = _draw_seed(rng)
        self.init_scale_ = resolve_init_scale(self.init_scale, config.loss, matrix)
        scale = self.init_scale_ / np.sqrt(d)
        # cache-line-aligned parameters (see warprec._kernels.aligned)
        f32 = np.float32
        self.user_factors_ = aligned_full((n_users, d), rng.standard_normal((n_users, d)) * scale,
                                          f32)
        self.item_factors_ = aligned_full((n_items, d), rng.standard_normal((n_items, d)) * scale,
                                          f32)
        if config.loss.sphere:   # every row is kept at unit norm
            unit_rows(self.user_factors_)
            unit_rows(self.item_factors_)
        self.item_biases_ = aligned_full(n_items, 0.0, f32)
        self.user_grad_sq_ = aligned_full((n_users, d), 1.0, f32)
        self.item_grad_sq_ = aligned_full((n_items, d), 1.0, f32)
        self.bias_grad_sq_ = aligned_full(n_items, 1.0, f32)
        self.user_ids_ = user_ids
        self.item_ids_ = item_ids
        self.epochs_done_ = 0
        self.learning_rate_drops_ = []
        self.history_ = []

    # ------------------------------------------------------------------ persistence
    def save(self, path):
        """Write the fitted model to ``path`` (``.npz``, no pickle), atomically.

        The file holds every fitted attribute (factors, biases, optimizer state, id maps,
        training matrix, history) and the hyperparameters, so ``load`` followed by
        ``partial_fit`` resumes exactly. The data goes to a temporary file in the same
        folder that replaces ``path`` only once complete.
        """
        self._check_fitted()
        if not self._parameters_usable():
            raise ValueError("Refusing to save a model with non-finite parameters (or so large "
                             "that its scores overflow float32): training diverged. Refit "
                             "with a lower learning_rate.")
        path = os.fspath(path)
        if os.path.isdir(path):
            raise IsADirectoryError(f"Cannot save to {path!r}: it is a directory. Give a file "
                                    f"name, e.g. {os.path.join(path, 'model.npz')!r}.")
        arrays = dict(
            format_version=np.array(FORMAT_VERSION),
            warprec_version=np.array(__version__),
            params=np.array(json.dumps(_jsonable_params(self.get_params()))),
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
        for name in ("best_epoch", "validation_interval", "early_stopping"):
            if hasattr(self, name + "_"):
                arrays[name] = np.array(getattr(self, name + "_"))
        arrays["learning_rate_drops"] = np.array([e for e, _ in self.learning_rate_drops_],
                                                 dtype=np.int64)
        arrays["dropped_learning_rates"] = np.array([r for _, r in self.learning_rate_drops_],
                                                    dtype=np.float64)
        if self._hybrid():
            arrays.update(self._feature_arrays())
        for kind, ids in (("user", self.user_ids_), ("item", self.item_ids_)):
            if ids is not None:
                arrays[f"{kind}_ids"], arrays[f"{kind}_ids_kind"] = _encode_ids(ids)
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"Cannot save to {path!r}: the folder {folder!r} does not "
                                    f"exist. Create it first.")
        fd, tmp = tempfile.mkstemp(prefix=".warprec-", suffix=".npz.tmp", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return path

    @classmethod
    def load(cls, path):
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
        if not os.path.exists(path):
            raise FileNotFoundError(f"No model file at {path!r}.")
        if os.path.isfile(path) and not zipfile.is_zipfile(path):
            raise ValueError(f"{path!r} is not a readable warprec model file (those are .npz "
                             f"archives written by WARPFactorizer.save or `warprec fit`); it "
                             f"is truncated, or another kind of file.")
        try:
            with np.load(path, allow_pickle=False) as f:
                data = {key: f[key] for key in f.files}
        except Exception as exc:  # zipfile.BadZipFile, OSError, ValueError, EOFError...
            raise ValueError(f"{path!r} is not a readable warprec model file (truncated or "
                             f"corrupted?): {exc}") from exc
        if "format_version" not in data or "params" not in data:
            raise ValueError(f"{path!r} is an .npz file but not a warprec model.")
        try:
            version = int(data["format_version"])
        except (TypeError, ValueError):
            raise ValueError(f"{path!r} has an unreadable format_version "
                             f"({data['format_version']!r:.40}); it is not a warprec model "
                             f"file.") from None
        if version > FORMAT_VERSION:
            raise ValueError(f"{path!r} was written by a newer warprec (model format {version}; "
                             f"this warprec reads up to {FORMAT_VERSION}). Upgrade warprec.")
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
            model.dropout_ = model._resolve_dropout()
            model.learning_rate_drop_ = model._resolve_learning_rate_drop()
            model.history_ = json.loads(str(data["history"]))
            n_users, n_items = model.user_factors_.shape[0], model.item_factors_.shape[0]
            model.train_matrix_ = sp.csr_matrix(
                (data["train_data"], data["train_indices"], data["train_indptr"]),
                shape=(n_users, n_items))
            # files written before loss="ccl" existed hold no negative weight
            model.negative_weight_ = (float(data["negative_weight"]) if "negative_weight" in data
                                      else model._resolve_negative_weight(model.train_matrix_,
                                                                          True))
            model.sample_order_ = model._resolve_sample_order(model.train_matrix_)
            # (files written before init_scale="auto" existed: the parameter says)
            model.init_scale_ = (float(data["init_scale"]) if "init_scale" in data
                                 else float(model.init_scale))
            model.user_ids_ = _decode_ids(data, "user")
            model.item_ids_ = _decode_ids(data, "item")
            if "user_feature_factors" in data:
                model._load_feature_arrays(data)
            _check_loaded(model)
        except (KeyError, ValueError, TypeError) as exc:
            raise ValueError(f"{path!r} is a damaged warprec model file: {exc}") from exc
        if not model._parameters_usable():
            raise ValueError(f"{path!r} holds non-finite parameters (or ones whose scores "
                             f"overflow float32); the file is corrupted.")
        return model


# ---------------------------------------------------------------------- helpers
def _check_loaded(model):
    """Raise ValueError unless the arrays read from a model file fit together."""
    U, V, b = model.user_factors_, model.item_factors_, model.item_biases_
    if U.ndim != 2 or V.ndim != 2 or U.shape[1] != V.shape[1] or b.shape != (V.shape[0],):
        raise ValueError(f"inconsistent factor shapes {U.shape}, {V.shape}, {b.shape}")
    for name, array, shape in (("user_factors", U, U.shape), ("item_factors", V, V.shape),
                               ("item_biases", b, b.shape),
                               ("user_grad_sq", model.user_grad_sq_, U.shape),
                               ("item_grad_sq", model.item_grad_sq_, V.shape),
                               ("bias_grad_sq", model.bias_grad_sq_, b.shape)):
        if array.dtype != np.float32 or array.shape != shape:
            raise ValueError(f"{name} has dtype {array.dtype} and shape {array.shape}; "
                             f"expected float32 {shape}")
    for kind, ids, n in (("user", model.user_ids_, U.shape[0]),
                         ("item", model.item_ids_, V.shape[0])):
        if ids is not None and ids.shape != (n,):
            raise ValueError(f"{kind}_ids has shape {ids.shape}, expected ({n},)")
    if model.epochs_done_ < 0 or not isinstance(model.history_, list):
        raise ValueError("bad training state (epochs_done / history)")
    model.train_matrix_.check_format(full_check=True)
    if not model.train_matrix_.has_canonical_format:
        raise ValueError("the training matrix is not in canonical CSR form")
    if model._hybrid():
        EU, EI = model.user_feature_factors_, model.item_feature_factors_
        for name, array, shape in (
                ("user_feature_factors", EU, (EU.shape[0], U.shape[1])),
                ("item_feature_factors", EI, (EI.shape[0], U.shape[1])),
                ("item_feature_biases", model.item_feature_biases_, (EI.shape[0],)),
                ("user_feature_grad_sq", model.user_feature_grad_sq_, EU.shape),
                ("item_feature_grad_sq", model.item_feature_grad_sq_, EI.shape),
                ("item_feature_bias_grad_sq", model.item_feature_bias_grad_sq_,
                 (EI.shape[0],))):
            if array.dtype != np.float32 or array.shape != shape:
                raise ValueError(f"{name} has dtype {array.dtype} and shape {array.shape}; "
                                 f"expected float32 {shape}")
        for kind in ("user", "item"):
            getattr(model, f"{kind}_features_").check_format(full_check=True)
            if len(getattr(model, f"{kind}_feature_names_")) != \
                    getattr(model, f"{kind}_features_").shape[1]:
                raise ValueError(f"{kind}_feature_names does not match the feature matrix")


def _same(a, b):
    try:
        return bool(a == b) if not isinstance(a, np.ndarray) else False
    except Exception:
        return False


def _jsonable_params(params):
    out = {}
    for key, value in params.items():
        if isinstance(value, np.ndarray):
            value = value.tolist()
        elif isinstance(value, np.generic):
            value = value.item()
        elif isinstance(value, np.random.Generator):
            value = None
        out[key] = value
    return out


def _encode_ids(ids):
    ids = np.asarray(ids)
    if np.issubdtype(ids.dtype, np.integer):
        return ids.astype(np.int64), np.array("int")
    if np.issubdtype(ids.dtype, np.floating):
        return ids.astype(np.float64), np.array("float")
    strings = [str(v) for v in ids]
    fixed = np.array(strings, dtype=str)
    if fixed.tolist() != strings:  # numpy's fixed-width strings drop trailing NULs
        return np.array(json.dumps(strings)), np.array("json")
    return fixed, np.array("str")


def _decode_ids(data, kind):
    if f"{kind}_ids" not in data:
        return None
    ids = data[f"{kind}_ids"]
    encoding = str(data[f"{kind}_ids_kind"])
    if encoding == "json":
        return np.array(json.loads(str(ids)), dtype=object)
    if encoding == "str":
        return ids.astype(object)
    if encoding in ("int", "float"):
        return ids
    raise ValueError(f"unknown {kind} id encoding {encoding!r}")


def _draw_seed(rng):
    """A model's ``seed_`` (the key of its counter-based streams and of its validation
    split): the first draw of the Generator made from its ``random_state``."""
    return int(rng.integers(0, 2**63 - 1))


def _decay_share(features):
    """Per feature column: ``1 / sqrt(m)`` with ``m`` the number of rows that have it (1
    for indicator and unused columns); see ``_kernels/features.py``."""
    counts = np.bincount(features.indices, minlength=features.shape[1])
    return (1.0 / np.sqrt(np.maximum(counts, 1))).astype(np.float32)


def _extend_ids(known, ids, kind):
    """The model's raw ``known`` ids followed by those of ``ids`` it does not know (in
    their order), and the index of every element of ``ids`` in that extended array."""
    if (known.dtype == object) != (ids.dtype == object):
        have = "strings" if known.dtype == object else "numbers"
        got = "strings" if ids.dtype == object else "numbers"
        raise TypeError(f"X's {kind} ids are {got} but the model's are {have}; pass the ids "
                        f"the model was fit with (warprec.data.Interactions maps them).")
    index = IdMap(known).indexer(ids)
    new = index < 0
    index[new] = len(known) + np.arange(int(new.sum()))
    return np.concatenate([known, ids[new]]), index
