"""How error messages show offending values and rows.

Internal API (shared by the readers, the frame functions, the splitters and
:class:`~warprec.interactions.Interactions`): :data:`MAX_SHOWN`, :func:`show` and
:func:`describe_rows`. Not part of warprec's public API; may change without notice.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["MAX_SHOWN", "describe_rows", "show"]

#: How many values or rows a message lists before it gives only their number.
MAX_SHOWN = 5


def show(values: Iterable[Any], limit: int = MAX_SHOWN) -> str:
    """The first ``limit`` values as a comma-separated list of their reprs (NumPy
    scalars shown as Python ones), followed by the total number when some are left
    out."""
    values = list(values)
    shown = ", ".join(repr(v.item() if isinstance(v, np.generic) else v)
                      for v in values[:limit])
    if len(values) > limit:
        shown += f", ... ({len(values)} in total)"
    return shown


def describe_rows(positions: ArrayLike, header: bool | None) -> str:
    """Human-readable location of some rows (file lines when read from a file).

    Parameters
    ----------
    positions : array_like of int
        0-based row positions; the first :data:`MAX_SHOWN` are shown.
    header : bool or None
        None for a DataFrame given by the user (positions are shown as they are);
        otherwise whether the file had a header line (positions become 1-based data
        line numbers).
    """
    shown = np.asarray(positions)[:MAX_SHOWN]
    if header is None:  # a DataFrame given by the user: show positional rows
        return "row positions " + ", ".join(str(int(p)) for p in shown)
    offset = 2 if header else 1
    return "data lines " + ", ".join(str(int(p) + offset) for p in shown) + \
        " (counting from 1, blank lines not counted)"
