"""Warning and error classes raised by warprec."""

from __future__ import annotations


class WarprecWarning(UserWarning):
    """Base class of every warning warprec emits (filter it with ``warnings``)."""


class NotFittedError(ValueError, AttributeError):
    """Raised when a method needs a fitted model and ``fit`` has not been called."""


class DivergenceError(FloatingPointError):
    """Training produced non-finite parameters.

    Attributes
    ----------
    epoch : int
        The (0-based, counted over the model's whole life) epoch during which the
        parameters stopped being finite. The model keeps the parameters of the last
        finite epoch.
    """

    def __init__(self, message: str, epoch: int):
        super().__init__(message)
        self.epoch = epoch
