"""Reading interaction data, id maps, positive filtering and train/test splits.

Everything in this module works on a *canonical long-format* :class:`pandas.DataFrame`
with one row per (user, item) event and the columns

``user_id``
    Raw user id, kept as read (integer ids stay integers, string ids stay strings).
``item_id``
    Raw item id, same rule.
``rating`` (optional)
    Numeric rating or weight.
``timestamp`` (optional)
    Any sortable value (unix seconds in every MovieLens file).

:func:`read_ratings` and :func:`standardize_frame` produce such frames;
:func:`positives`, :func:`deduplicate`, :func:`split_random`,
:func:`split_leave_k_out`, :func:`split_temporal`, :func:`split_cold_items` and
:func:`split_cold_users` transform them, and
:class:`Interactions` turns one into the sparse user x item matrix with two-way id maps.

Id rules (used everywhere)
--------------------------
* Integer ids (including integral floats such as ``3.0`` and object columns that only
  hold integers) become ``int64``; string ids stay strings.
* A column that mixes integers and strings (``1`` and ``"1"``, or ``1`` and ``"a"``) is
  rejected with a :class:`TypeError`: silently converting would either merge ``1`` and
  ``"1"`` or keep them apart, and neither is safe to guess. Convert it yourself with
  ``df["user_id"] = df["user_id"].astype(str)``.
* Missing ids (NaN/None, typically from truncated lines) raise a :class:`ValueError`
  that gives the number of rows and how to drop them.

Duplicated (user, item) rows
----------------------------
Nothing here drops duplicates silently. :func:`read_ratings`, :func:`standardize_frame`,
:func:`positives` and the split functions keep every row as it is (the split functions
warn with :class:`~warprec.exceptions.WarprecWarning`, because copies of one pair can
land on both sides of a split); :func:`deduplicate` resolves them explicitly (default
``how="last"``: keep the latest event); :class:`Interactions` sums the weights of
duplicated pairs into one matrix entry.

Every function returns new objects and never modifies its input.

Where the code lives
--------------------
This module gathers the public names of four modules with one job each:
:mod:`warprec.readers` (files to frames), :mod:`warprec.frames` (canonical frames,
positives, duplicates), :mod:`warprec.splitting` (train/test splits) and
:mod:`warprec.interactions` (the sparse matrix with id maps). Import from here or from
them; the objects are the same.
"""

from __future__ import annotations

from .frames import CANONICAL_COLUMNS, deduplicate, load_frame, positives, standardize_frame
from .interactions import Interactions
from .readers import read_features, read_interaction_lists, read_item_titles, read_ratings
from .splitting import (split_cold_items, split_cold_users, split_leave_k_out, split_random,
                        split_temporal)

__all__ = [
    "CANONICAL_COLUMNS",
    "Interactions",
    "deduplicate",
    "load_frame",
    "positives",
    "read_features",
    "read_interaction_lists",
    "read_item_titles",
    "read_ratings",
    "split_leave_k_out",
    "split_cold_items",
    "split_cold_users",
    "split_random",
    "split_temporal",
    "standardize_frame",
]
