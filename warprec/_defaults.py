"""The estimator's, the tuner's and distributed training's policy constants, in one module.

Each is a number chosen by measurement that could be chosen otherwise without changing what
warprec computes: the ``"auto"`` rules of :class:`warprec.WARPFactorizer`, the early-stopping
and validation policy, the tuner's successive halving, distributed training's polling. The
kernel layer's own constants (cache lines, chunk sizes, prefetch distances) are in
:mod:`warprec._kernels.config`. Why each value was chosen, with the figure that decided it,
is in docs/design.md.
"""

from typing import Any

# --------------------------------------------------------------------- estimator defaults
#: ``learning_rate="auto"`` resolves to ``min(AUTO_LR / positives per user, AUTO_LR_ITEM *
#: sqrt(positives per item))`` clipped to ``[AUTO_LR_MIN, AUTO_LR_MAX]``. Adagrad's
#: accumulators start at 1, so in the first epochs its steps are close to plain SGD steps
#: and a user row moves about ``learning_rate * positives per user`` per epoch: users with
#: few positives need a faster rate to be trained in the same epochs (the first term).
#: The second term bounds the rate on catalogues whose items have only a few positives
#: each, which a fast rate overfits within a few epochs; the floor is the rate at which no
#: data set of the family lost quality with more epochs; above the ceiling short user
#: histories are learnt within a few epochs and then overfitted (docs/design.md).
AUTO_LR = 0.46
AUTO_LR_ITEM = 0.011
AUTO_LR_MIN = 0.02
AUTO_LR_MAX = 0.03

#: ``epochs="auto"``: ``AUTO_EPOCHS`` epochs without early stopping; with it, at most
#: ``AUTO_EPOCHS_EARLY_STOPPING`` (training stops ``n_iter_no_change`` epochs after the
#: best one, so the larger maximum only costs time while the validation score still
#: improves).
AUTO_EPOCHS = 50
AUTO_EPOCHS_EARLY_STOPPING = 100

#: ``alpha="auto"`` resolves to ``AUTO_ALPHA * min(learning_rate, AUTO_ALPHA_LR_CAP) *
#: n_items / n_positives``, at most ``AUTO_ALPHA_MAX``. The decay is applied on every
#: update of a row, so its strength per epoch grows with the updates an item row gets
#: (positives per item); the rule keeps it the same across data sizes, and the cap keeps
#: catalogues of items with one or two positives from being decayed to nothing.
AUTO_ALPHA = 3.5
AUTO_ALPHA_LR_CAP = 0.05
AUTO_ALPHA_MAX = 0.03

#: ``loss="ccl"``: ``learning_rate="auto"`` is ``CCL_AUTO_LR / positives per user``
#: clipped to ``[CCL_LR_MIN, CCL_LR_MAX]``: three times WARP's first term and bounds (a
#: CCL step moves unit rows along differences of unit vectors, a smaller gradient than
#: WARP's rank-weighted hinge), without WARP's per-item bound (docs/design.md).
CCL_AUTO_LR = 1.4
CCL_LR_MIN = 0.06
CCL_LR_MAX = 0.3
#: ``negative_weight="auto"`` is ``CCL_NEGATIVE_WEIGHT / sqrt(density)``, density =
#: positives / (users x items) of the first fit's matrix: the sparser the matrix, the less
#: likely a uniformly drawn negative is an unobserved positive, and the rarer a hard
#: negative is among the draws, so their mean hinge weighs more.
CCL_NEGATIVE_WEIGHT = 2.5
#: ``loss="ccl"``: ``dropout="auto"`` drops this share of the user vector's coordinates per
#: positive (the published configurations' rate). It is not the default because it
#: slows the first epochs, by which ``warprec.tune``'s first rungs judge the cosine
#: loss's trials (docs/design.md, "The cosine contrastive loss").
CCL_DROPOUT = 0.1

#: ``learning_rate_drop < 1``: the most times one fit (or partial_fit) multiplies the
#: learning rate by it, each time at a validation plateau and from the best epoch's
#: parameters; the next plateau then ends training.
MAX_LEARNING_RATE_DROPS = 1
#: ``learning_rate_drop="auto"``: the cosine losses' drop when they early-stop (the MF-CCL
#: recipe's x0.1 on a plateau; docs/design.md, "Dropping the learning rate on a
#: plateau"); WARP's Adagrad steps gain nothing from it.
CCL_LEARNING_RATE_DROP = 0.1

#: A long tail of short histories: fewer than ``LONG_TAIL_MAX_PER_ITEM`` positives per
#: item and fewer than ``LONG_TAIL_MAX_PER_USER`` per user. There the WARP losses train
#: with LightFM's two choices: ``sample_order="auto"`` is ``"positives"`` whatever the
#: parameters' size, and ``init_scale="auto"`` is ``LONG_TAIL_INIT_SCALE`` (LightFM's
#: uniform +-0.5 / d at d = 64) instead of ``INIT_SCALE`` (docs/design.md, "The
#: long-tail rule").
LONG_TAIL_MAX_PER_ITEM = 15
LONG_TAIL_MAX_PER_USER = 20
LONG_TAIL_INIT_SCALE = 0.036
#: ``init_scale="auto"`` elsewhere: the factor rows' expected norm at the start.
INIT_SCALE = 0.1

#: A configuration tuned on the ML-100K benchmark split alone (d = 64), kept for
#: ``warprec fit --tuned`` and the speed benchmark's "tuned" pair: the values that 0.1's
#: automatic decay gave there (alpha 0.009 at this rate). It is not a default for other
#: data; :func:`warprec.tune` finds one for yours.
TUNED_PARAMS: dict[str, Any] = dict(learning_rate=0.03, alpha=0.009, max_sampled=30,
                                    epochs=40)

#: Factor + Adagrad bytes above which the training kernel prefetches rows (about an L2
#: cache's worth of parameters per core plus the shared L3's; below it the rows stay
#: cached anyway).
PREFETCH_ABOVE_BYTES = 8 * 2**20

#: Users scored per validation check at most (a fixed seeded sample of the users with
#: validation positives): the check then costs at most this many users' top-k, whatever
#: the data size.
VALIDATION_MAX_USERS = 10_000

#: ``early_stopping="refit"`` validates in up to ``REFIT_MAX_FOLDS`` passes on disjoint
#: hold-outs, as many as it takes for their checked users to add up to about
#: ``VALIDATION_MAX_USERS`` (one pass on large data, three on a few thousand users): one
#: small hold-out's best epoch is mostly noise.
REFIT_MAX_FOLDS = 3

#: ``early_stopping="refit"`` trains for the epochs where the passes' mean validation
#: score peaks only when that peak beats the score at the plain fit's epoch count by more
#: than ``REFIT_Z`` standard errors of the per-user paired differences; else for the
#: plain fit's count. A refit is then never measurably worse than a plain fit.
REFIT_Z = 2.0

#: ``early_stopping="auto"`` validates when at least this many users have 2 or more
#: positives. The hold-out then takes positives from at most half of the users
#: (``VALIDATION_MAX_USERS`` of them), and the check averages over enough users to see a
#: peak through the noise; on smaller data holding out costs more than stopping at the
#: peak gains (docs/design.md, "Early stopping by default on large data").
EARLY_STOPPING_AUTO_USERS = 20_000

#: ``validation_interval="auto"`` checks every ``ceil(checked users x items /
#: (VALIDATION_PAIRS_PER_POSITIVE x training positives))`` epochs. A check scores every
#: item for every checked user, an epoch trains on every positive; a positive's training
#: costs about as much as scoring a few hundred (user, item) pairs, so checks add a
#: bounded share of the training time.
VALIDATION_PAIRS_PER_POSITIVE = 100

#: :meth:`WARPFactorizer.fold_in` runs on the model's threads from this many positives
#: on (below it on one thread, so that a few users fold in bit-reproducibly and without
#: the cost of a parallel launch).
FOLD_IN_PARALLEL_FROM = 50_000

# ------------------------------------------------------------------------------ tuner
#: Maximum epochs of the first rung of every bracket of ``warprec.tune``.
FIRST_RUNG_EPOCHS = 12
#: Successive halving's eta: each rung keeps the best 1/eta of the configurations and
#: gives them eta times the maximum epochs of the rung before.
REDUCTION_FACTOR = 3
#: Safety factor on the estimated training seconds of the tuner's final refit.
TUNE_REFIT_MARGIN = 1.2
#: Standard errors by which the best trial's mean per-user validation gain over the
#: defaults (paired, on the same users) must exceed zero for ``tune`` to prefer it when
#: one configuration competes; its one-sided level is shared among the configurations
#: scored (``warprec.tuning.switch_z``).
TUNE_SWITCH_Z = 2.0
#: ``tune(..., clock="work")``'s reference speed (``warprec._clock``), per thread: seconds
#: per training sample, per scored or updated row times the dimension, per validation pair
#: times the dimension, and per positive of a fit call's setup. Fitted by
#: benchmarks/work_clock.py at one thread on the benchmarks' host (results/work_clock.md).
WORK_SAMPLE_SECONDS = 1.2e-7
WORK_ROW_SECONDS = 4.4e-10
WORK_CHECK_SECONDS = 1.35e-10
WORK_SETUP_SECONDS = 4.9e-7

# ------------------------------------------------------------------ distributed training
#: Seconds between the checks, while the workers of ``warprec.dask.fit`` train an epoch,
#: that they are all still in the cluster (a call to a lost worker never returns).
WAIT_POLL_SECONDS = 1.0

#: The cosine losses' rows whose norm is off unit by more than this after an epoch (rows
#: that Hogwild threads wrote at the same time) are rescaled to unit norm; the kernel's
#: own rows are within float32 rounding of it.
UNIT_NORM_TOLERANCE = 1e-5
