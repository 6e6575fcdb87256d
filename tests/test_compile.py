"""Compilation outside the training clock: the "compiling kernels (once)" message on a
compilation and never without one, and the kernel compiled for a configuration without
training being the one its fit runs. (A fit on an empty cache is in
tests/test_train_kernel.py, the tuner's compile step in tests/test_tuning.py.)"""

import logging

from numba import njit

from warprec import WARPFactorizer
from warprec._kernels import train
from warprec._plan import check_params
from warprec._trainer import (COMPILE_MESSAGE, CompileWatch, compile_configuration,
                              kernel_mode)
from warprec.datasets import make_interactions


class _Bar:
    """Records the descriptions a progress bar is given."""

    def __init__(self):
        self.descriptions = []

    def set_description(self, desc):
        self.descriptions.append(desc)


def test_the_message_shows_on_a_compilation_only(caplog):
    @njit   # (not cached: it compiles in this process, on its first call only)
    def add_one(x):
        return x + 1

    caplog.set_level(logging.INFO, logger="warprec")
    bar = _Bar()
    with CompileWatch(bar, "warprec fit") as watch:
        assert add_one(1) == 2
    assert watch.compiled and watch.seconds > 0
    assert bar.descriptions == [f"warprec fit: {COMPILE_MESSAGE}", "warprec fit"]
    assert caplog.messages.count(COMPILE_MESSAGE) == 1
    caplog.clear()
    bar = _Bar()
    with CompileWatch(bar, "warprec fit") as watch:
        assert add_one(2) == 3
    assert not watch.compiled and watch.seconds == 0
    assert bar.descriptions == [] and COMPILE_MESSAGE not in caplog.messages

    @njit
    def add_two(x):
        return x + 2

    # a watch inside another (the tuner's compile step around a fit's) logs nothing
    with CompileWatch() as outer, CompileWatch() as inner:
        assert add_two(1) == 3
    assert outer.compiled and inner.compiled
    assert caplog.messages.count(COMPILE_MESSAGE) == 1


def test_a_configuration_compiles_the_kernel_its_fit_runs():
    """``compile_configuration`` builds its tiny inputs as a fit does: the fit (on two
    threads: one variant serves any number) then needs no other specialisation."""
    config = check_params(WARPFactorizer().get_params())
    compile_configuration(config, 64)
    kernel = train.epoch_kernel(kernel_mode(config))
    assert len(kernel.signatures) == 1
    WARPFactorizer(epochs=1, n_threads=2).fit(make_interactions(60, 40, 500))
    assert len(kernel.signatures) == 1
