"""Counter-based random numbers for parallel kernels.

Every random draw is a pure function of ``(seed, epoch, sample, counter)``: a kernel
derives a 64-bit key from the first three with :func:`stream_key` and then draws the
``counter``-th number of that stream with :func:`draw`. No generator state is shared
between threads, so a sample draws the same numbers whichever thread runs it. The mixer
is SplitMix64's finaliser (Steele, Lea & Flood 2014), which passes BigCrush when used on
a Weyl sequence, as here.
"""

import numpy as np

from ._flags import inlined

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_S11 = np.uint64(11)
_ONE = np.uint64(1)


@inlined
def mix64(z):
    """SplitMix64 finaliser: a bijective 64-bit hash."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@inlined
def stream_key(seed, epoch, sample):
    """Key of the random stream of one sample in one epoch."""
    k = mix64(np.uint64(seed) + _GOLDEN)
    k = mix64(k ^ (np.uint64(epoch) * _M1 + _ONE))
    return mix64(k ^ (np.uint64(sample) * _M2 + _GOLDEN))


@inlined
def draw(key, counter):
    """The ``counter``-th 64-bit number of the stream ``key``."""
    return mix64(key + (np.uint64(counter) + _ONE) * _GOLDEN)


@inlined
def draw_below(key, counter, n):
    """Uniform integer in ``[0, n)`` for ``0 < n < 2**32`` (multiply-shift; bias < 2**-32)."""
    return np.int64(((draw(key, counter) >> _S32) * np.uint64(n)) >> _S32)


@inlined
def draw_unit(key, counter):
    """Uniform float64 in ``[0, 1)`` with 53 random bits."""
    return np.float64(draw(key, counter) >> _S11) * (1.0 / 9007199254740992.0)
