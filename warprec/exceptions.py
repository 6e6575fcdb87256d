"""Warning and error classes raised by warprec."""

from __future__ import annotations


class WarprecWarning(UserWarning):
    """Base class of every warning warprec emits (filter it with ``warnings``)."""


class NotFittedError(ValueError, AttributeError):
    """Raised when a method needs a fitted model and ``fit`` has not been called."""


class InvalidParameterError(ValueError, TypeError):
    """Raised when a parameter or argument has a value or type that is not allowed.

    A subclass of both :class:`ValueError` and :class:`TypeError` (as in scikit-learn),
    so code that caught either for a bad parameter keeps working. The message names the
    parameter, the value given and what is allowed.
    """


class DivergenceError(FloatingPointError):
    """Training produced non-finite parameters.

    Attributes
    ----------
    epoch : int
        The (0-based, counted over the model's whole life) epoch during which an update
        made a parameter NaN or infinite (or the scores could overflow float32). The
        parameters stay finite: the training kernel resets such coordinates (factors to
        0, Adagrad accumulators to 1) or, with max-norm, does not apply the update.
    """

    def __init__(self, message: str, epoch: int) -> None:
        super().__init__(message)
        self.epoch = epoch
