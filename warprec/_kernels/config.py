"""Every tunable constant of warprec, in one module (as stumpy keeps its ``config.py``).

A tunable is a number chosen by measurement that could be chosen otherwise without
changing what warprec computes (a block size, a prefetch distance), or a default rule of
the estimator (the automatic learning rate and decay). The module sits in the kernel
layer, which imports nothing from the rest of the package, so that kernels and estimator
read the same values. Other modules import these names from here and do not redefine
them; why each value was chosen is in docs/design.md.
"""

# --------------------------------------------------------------------- estimator defaults
#: ``learning_rate="auto"`` resolves to ``min(AUTO_LR / positives per user, AUTO_LR_ITEM *
#: sqrt(positives per item))`` clipped to ``[AUTO_LR_MIN, AUTO_LR_MAX]``. Adagrad's
#: accumulators start at 1, so in the first epochs its steps are close to plain SGD steps
#: and a user row moves about ``learning_rate * positives per user`` per epoch: users with
#: few positives need a faster rate to be trained in the same epochs (the first term).
#: The second term bounds the rate on catalogues whose items have only a few positives
#: each, which a fast rate overfits within a few epochs; the floor is the rate at which no
#: data set of the family lost quality with more epochs. The ceiling: above 0.03, short
#: user histories of a planted taste (synthetic, 8 positives per user) are learnt within
#: 5-15 epochs and then overfitted, while amazon-book, of the same shape, gains nothing
#: more at 50 epochs (see docs/design.md).
AUTO_LR = 0.46
AUTO_LR_ITEM = 0.011
AUTO_LR_MIN = 0.02
AUTO_LR_MAX = 0.03

#: ``epochs="auto"``: ``AUTO_EPOCHS`` epochs without early stopping; with it, at most
#: ``AUTO_EPOCHS_EARLY_STOPPING`` (training stops ``n_iter_no_change`` epochs after the
#: best one, so the larger maximum only costs time while the validation score still
#: improves: amazon-book's improves until 70-85 epochs, the other large sets of the
#: family stop after 12-45).
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
#: WARP's rank-weighted hinge). Without WARP's per-item bound: on the long-tail set a
#: faster rate trained better, not worse (docs/design.md).
CCL_AUTO_LR = 1.4
CCL_LR_MIN = 0.06
CCL_LR_MAX = 0.3
#: ``negative_weight="auto"`` is ``CCL_NEGATIVE_WEIGHT / sqrt(density)``, density =
#: positives / (users x items) of the first fit's matrix: the sparser the matrix, the less
#: likely a uniformly drawn negative is an unobserved positive, and the rarer a hard
#: negative is among the draws, so their mean hinge weighs more.
CCL_NEGATIVE_WEIGHT = 2.5
#: ``loss="ccl"``: ``dropout="auto"`` drops this share of the user vector's coordinates per
#: positive (the published configurations' rate). Measured on the benchmark family it
#: gains 2-14% NDCG@10 on every set but amazon-book; it is not the default because
#: ``warprec.tune``'s first rungs then drop the cosine loss's trials there (docs/design.md,
#: "The cosine contrastive loss").
CCL_DROPOUT = 0.1

#: ``learning_rate_drop < 1``: the most times one fit (or partial_fit) multiplies the
#: learning rate by it, each time at a validation plateau and from the best epoch's
#: parameters; the next plateau then ends training.
MAX_LEARNING_RATE_DROPS = 1
#: ``learning_rate_drop="auto"``: the cosine losses' drop when they early-stop (the MF-CCL
#: recipe's x0.1 on a plateau). Measured with early stopping it gains 3-9% on amazon-book,
#: synthetic-short and the long tail and is level on the MovieLens sets and the dense set
#: (docs/design.md, "Dropping the learning rate on a plateau"); WARP's Adagrad steps gain
#: nothing from it.
CCL_LEARNING_RATE_DROP = 0.1

#: A long tail of short histories: fewer than ``LONG_TAIL_MAX_PER_ITEM`` positives per
#: item and fewer than ``LONG_TAIL_MAX_PER_USER`` per user. There the WARP losses train
#: with LightFM's two choices: ``sample_order="auto"`` is ``"positives"`` whatever the
#: parameters' size, and ``init_scale="auto"`` is ``LONG_TAIL_INIT_SCALE`` (LightFM's
#: uniform +-0.5 / d at d = 64) instead of ``INIT_SCALE``. Measured on the synthetic long
#: tail (3.3 positives per item, 10.4 per user: NDCG@10 0.0614 against 0.0582) and on a
#: long tail outside the family (11.2 and 8.4: 0.0604 against 0.0544); the family's other
#: sets, 26 or more per item or 47 or more per user, are far from both bounds
#: (docs/design.md, "The long-tail rule").
LONG_TAIL_MAX_PER_ITEM = 15
LONG_TAIL_MAX_PER_USER = 20
LONG_TAIL_INIT_SCALE = 0.036
#: ``init_scale="auto"`` elsewhere: the factor rows' expected norm at the start.
INIT_SCALE = 0.1

#: A configuration tuned on the ML-100K benchmark split alone (d = 64), kept for
#: ``warprec fit --tuned`` and the speed benchmark's "tuned" pair: the values that 0.1's
#: automatic decay gave there (alpha 0.009 at this rate). It is not a default for other
#: data; :func:`warprec.tune` finds one for yours.
TUNED_PARAMS = dict(learning_rate=0.03, alpha=0.009, max_sampled=30, epochs=40)

#: Factor + Adagrad bytes above which the training kernel prefetches rows (about an L2
#: cache's worth of parameters per core plus the shared L3's; below it the rows stay
#: cached anyway).
PREFETCH_ABOVE_BYTES = 8 * 2**20

#: Users scored per validation check at most (a fixed seeded sample of the users with
#: validation positives): the check then costs at most this many users' top-k, whatever
#: the data size.
VALIDATION_MAX_USERS = 10_000

#: ``early_stopping="auto"`` validates when at least this many users have 2 or more
#: positives. The hold-out then takes positives from at most half of the users
#: (``VALIDATION_MAX_USERS`` of them), and the check averages over enough users to see a
#: peak through the noise; on smaller data holding out costs more than stopping at the
#: peak gains (docs/design.md, "Early stopping by default on large data").
EARLY_STOPPING_AUTO_USERS = 20_000

#: ``validation_interval="auto"`` checks every ``ceil(checked users x items /
#: (VALIDATION_PAIRS_PER_POSITIVE x training positives))`` epochs. A check scores every
#: item for every checked user, an epoch trains on every positive; on amazon-book one
#: positive's training costs about as much as scoring 390 (user, item) pairs, so checks
#: then add at most about a quarter of the training time.
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
#: defaults (paired, on the same users) must exceed zero for ``tune`` to prefer it.
TUNE_SWITCH_Z = 2.0

# ------------------------------------------------------------------ distributed training
#: Seconds between the checks, while the workers of ``warprec.dask.fit`` train an epoch,
#: that they are all still in the cluster (a call to a lost worker never returns).
WAIT_POLL_SECONDS = 1.0

# ------------------------------------------------------------------------ memory layout
#: Bytes of a cache line (x86-64, ARM64): the alignment given to parameter arrays, and
#: the distance kept between two threads' work rows.
CACHE_LINE = 64

# ---------------------------------------------------------------------- training kernel
#: The factor dimension (the default ``n_components``) for which the negative trials
#: score with a constant trip count: the dot product is unrolled, without the generic
#: loop's control and remainder code. Only there: the negative trials are the kernel's
#: innermost loop, and a fixed-width copy in the other scoring sites gave no further gain
#: for its compile time.
FIXED_D = 64
#: Bounds of the number of positions in a chunk that a thread claims at a time.
CHUNK_MIN, CHUNK_MAX = 64, 4096
#: Chunks per thread an epoch is cut into (within the bounds above): enough that a thread
#: slowed down by another process hands most of its work to the others.
CHUNKS_PER_THREAD = 16
#: How many samples ahead the row prefetches of the training kernel reach.
SAMPLES_AHEAD = 4
#: How many negative candidates ahead of the current trial are drawn and prefetched.
CANDIDATES_AHEAD = 2
#: How many of the next sample's negative candidates are drawn (and their rows
#: prefetched) while the current sample is processed.
CANDIDATES_EARLY = 4
#: How many cache lines of a user's positives list are prefetched two samples ahead.
LIST_LINES = 4
#: A user's filter row is prefetched when it has at most this many words (2 cache lines;
#: an exact filter over many items is read a line at a time, where a draw lands).
FILTER_PREFETCH_WORDS = 16
#: Positives redrawn in a row before an exact draw among the negatives is taken. (It
#: decides which negative a stream position gives: changing it changes the draws.)
REDRAWS = 32
#: Bytes the filters of all users may take; above it they are hashed to fewer words.
FILTER_MAX_BYTES = 16 * 2**20

# ------------------------------------------------------------------ scoring and metrics
#: Relevant sets up to this size are counted with one SIMD compare per column.
LINEAR_WIDTH = 16
#: Columns per lockstep batch of binary searches in the AUC pass.
AUC_CHUNK = 256
#: Columns scanned per chunk once a top-k heap is full (one vectorised count per chunk).
SCAN_CHUNK = 64
#: Target size in bytes of one block of float32 scores (large problems keep two: one is
#: computed while the other is processed). Large blocks keep the matmul efficient (BLAS
#: packs the whole item matrix again for every block, and d is small, so with few users
#: per block packing costs as much as the products) and amortise the hand-over between
#: BLAS threads and Numba threads.
BLOCK_BYTES = 256 * 1024 * 1024
#: Bounds on the number of users scored per block.
MIN_BLOCK_ROWS = 256
MAX_BLOCK_ROWS = 2048
#: Scoring problems of at most this many multiply-adds (all blocks together) are scored
#: by a Numba kernel rather than BLAS: below it, the BLAS threads left spinning after the
#: call cost more than BLAS's faster matmul saves.
NUMBA_SCORING_MACS = 2**28

# ------------------------------------------------------------------------ synthetic data
#: Interactions from which ``warprec.datasets`` generates with its threaded kernel.
DATASETS_PARALLEL_FROM = 2_000_000
