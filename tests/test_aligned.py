"""Cache-line-aligned arrays (warprec._kernels.aligned) and the model's aligned parameters."""

import numpy as np
import pytest

from warprec import WARPFactorizer
from warprec._kernels.aligned import aligned, aligned_empty, aligned_full
from warprec._kernels.config import CACHE_LINE
from warprec.datasets import make_interactions
from warprec.model import _PARAMETER_ARRAYS as PARAMETERS


def _offset(array):
    return array.ctypes.data % CACHE_LINE


@pytest.mark.parametrize("shape", [7, (0,), (3, 0), (5, 64), (1, 3), (2, 3, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.uint8])
def test_aligned_empty_shape_dtype_alignment(shape, dtype):
    a = aligned_empty(shape, dtype)
    assert a.shape == ((shape,) if isinstance(shape, int) else shape)
    assert a.dtype == dtype
    assert a.flags.c_contiguous and a.flags.writeable
    if a.size:
        assert _offset(a) == 0
        a[...] = 1
        assert (a == 1).all()


def test_aligned_full_fills_and_casts_like_astype():
    values = np.random.default_rng(0).standard_normal((5, 64)) * 0.1
    a = aligned_full(values.shape, values, np.float32)
    assert _offset(a) == 0 and a.dtype == np.float32
    assert a.tobytes() == values.astype(np.float32).tobytes()
    b = aligned_full(7, 1.0, np.float32)
    assert _offset(b) == 0 and (b == 1).all() and b.shape == (7,)


def _misaligned(values, offset):
    """A C-contiguous copy of ``values`` whose data starts ``offset`` bytes past a line."""
    raw = np.empty(values.nbytes + 2 * CACHE_LINE, np.uint8)
    start = -raw.ctypes.data % CACHE_LINE + offset
    out = raw[start:start + values.nbytes].view(values.dtype).reshape(values.shape)
    out[...] = values
    return out


@pytest.mark.parametrize("offset", [4, 16, 32, 48])
def test_aligned_copies_misaligned_arrays(offset):
    values = np.arange(60, dtype=np.float32).reshape(5, 12)
    a = _misaligned(values, offset)
    assert _offset(a) == offset
    b = aligned(a)
    assert b is not a and _offset(b) == 0
    np.testing.assert_array_equal(b, values)
    assert aligned(b) is b


def test_aligned_makes_non_contiguous_arrays_contiguous():
    values = aligned_empty((6, 8), np.float32)
    values[...] = np.arange(48).reshape(6, 8)
    view = values[:, ::2]   # starts on the line, but not contiguous
    out = aligned(view)
    assert out.flags.c_contiguous and _offset(out) == 0
    np.testing.assert_array_equal(out, view)


@pytest.fixture(scope="module")
def positives():
    return make_interactions(60, 40, 600, rank=3, random_state=1)


def test_fitted_parameters_are_aligned(positives):
    model = WARPFactorizer(n_components=16, epochs=1, n_threads=1, random_state=0)
    model.fit(positives)
    for name in PARAMETERS:
        assert _offset(getattr(model, name)) == 0, name


def test_training_realigns_replaced_parameters(positives):
    """Arrays that come without alignment (load, or attributes set by hand) are
    replaced by aligned copies with the same values when training continues."""
    model = WARPFactorizer(n_components=16, epochs=1, n_threads=1, random_state=0)
    model.fit(positives)
    before = {}
    for name in PARAMETERS:
        before[name] = getattr(model, name).copy()
        setattr(model, name, _misaligned(before[name], 16))
    model._align_parameters()
    for name in PARAMETERS:
        assert _offset(getattr(model, name)) == 0, name
        np.testing.assert_array_equal(getattr(model, name), before[name])
    for name in PARAMETERS:
        setattr(model, name, _misaligned(before[name], 32))
    model.partial_fit(positives)
    for name in PARAMETERS:
        assert _offset(getattr(model, name)) == 0, name


def test_alignment_does_not_change_training(positives):
    """An epoch from misaligned copies of the parameters gives the same factors as one
    from aligned ones (1 thread: the run is deterministic)."""
    fitted = WARPFactorizer(n_components=16, epochs=2, n_threads=1, random_state=3)
    fitted.fit(positives)
    models = []
    for offset in (0, 16):
        model = WARPFactorizer(n_components=16, epochs=2, n_threads=1, random_state=3)
        model.fit(positives)
        for name in PARAMETERS:
            setattr(model, name, _misaligned(getattr(fitted, name), offset))
        model.partial_fit(positives)
        models.append(model)
    for name in PARAMETERS:
        np.testing.assert_array_equal(getattr(models[0], name), getattr(models[1], name))
