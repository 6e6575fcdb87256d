"""The kernel layer's tunable constants, in one module (as stumpy keeps its ``config.py``).

A tunable here is a number chosen by measurement that could be chosen otherwise without
changing what warprec computes: a cache line, a chunk size, a prefetch distance, a block
size. The module sits in the kernel layer, which imports nothing from the rest of the
package. The estimator's, tuner's and distributed training's policy (the ``"auto"`` rules,
early stopping, successive halving) is in :mod:`warprec._defaults`.
"""

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
#: Drawn rows per tile of the shared-negatives kernel's cosine block (``shared.py``): a
#: tile (64 rows of 128 float32 = 32 KB) stays in the L1/L2 cache while every user
#: vector of the group passes over it.
SHARED_TILE = 64
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
