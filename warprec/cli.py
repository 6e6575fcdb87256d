"""Command-line interface: ``warprec fit | evaluate | tune | recommend | demo`` and
``warprec --version``.

Every command reads ratings files in any MovieLens layout (see
:func:`warprec.data.read_ratings`). Errors end with a one-line message on stderr and
exit code 2; nothing prints a traceback for bad input.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.resources
import json
import logging
import os
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
    from typing import Any, Literal, TextIO

    import pandas as pd
    from distributed import Client
    from numpy.typing import NDArray

    from ._base import FactorRecommender
    from .model import WARPFactorizer


#: The synthetic demo data shipped inside the package (``ratings.csv`` and ``movies.csv``,
#: made by ``data/make_synthetic.py`` in the repository).
DEMO_DATA = importlib.resources.files("warprec") / "demo_data"


class CLIError(Exception):
    """A user-facing error: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (the full usage is in ``--help``)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def _model_args(parser: argparse.ArgumentParser) -> None:
    g = parser.add_argument_group("model")
    g.add_argument("--factors", type=int, default=64, help="embedding dimension (default 64)")
    g.add_argument("--epochs", type=int, default=None,
                   help="training epochs (default 50, or at most 100 with early stopping)")
    g.add_argument("--learning-rate", type=float, default=None,
                   help="step size (default: automatic, from the positives per user)")
    g.add_argument("--alpha", type=float, default=None,
                   help="weight decay (default: automatic, see WARPFactorizer)")
    g.add_argument("--max-sampled", type=int, default=None,
                   help="negative draws per positive (default 100)")
    g.add_argument("--loss", choices=["warp", "warp-kos", "bpr", "ccl", "softmax"],
                   default="warp", help="warp (default), warp-kos, bpr, ccl (cosine "
                                        "contrastive loss) or softmax (sampled softmax)")
    g.add_argument("--n-negatives", type=int, default=None,
                   help="ccl, softmax: negatives per positive (default: see WARPFactorizer)")
    g.add_argument("--negative-sharing", type=int, default=None,
                   help="ccl, softmax: positives sharing one set of negative draws "
                        "(default 1: draws per positive)")
    g.add_argument("--margin", type=float, default=None,
                   help="ccl: negatives with a cosine above it are pushed away")
    g.add_argument("--negative-weight", type=float, default=None,
                   help="ccl: weight of the negatives' mean hinge")
    g.add_argument("--dropout", type=float, default=None,
                   help="ccl, softmax: share of the user vector's coordinates dropped per "
                        "positive (default 0; the published rate is 0.1)")
    g.add_argument("--temperature", type=float, default=None,
                   help="softmax: the cosines are divided by it (default 0.2)")
    g.add_argument("--feature-weight", type=float, default=None,
                   help="with --item-features / --user-features: a given feature's weight "
                        "against the entity's own indicator (default 1)")
    g.add_argument("--feature-negatives", type=float, default=None,
                   help="with --item-features: share of the positives whose negatives are "
                        "drawn among items sharing one of its features (default 0)")
    g.add_argument("--feature-normalization", choices=["none", "side", "row"], default=None,
                   help="with --item-features / --user-features: scale each row's given "
                        "features to sum the weight (side) or the whole row to sum 1 (row, "
                        "LightFM's Dataset) (default none)")
    g.add_argument("--rank-weighting", default="harmonic",
                   help="harmonic, auc, precision@K, log, owpc-mean, ... (default harmonic)")
    g.add_argument("--tuned", action="store_true",
                   help="use the documented configuration tuned on the ML-100K split "
                        "(warprec.model.TUNED_PARAMS)")
    g.add_argument("--early-stopping", action="store_true",
                   help="hold out 10%% of the training positives of up to 10,000 users, stop "
                        "once validation NDCG@10 has not improved for 10 epochs and keep the "
                        "best epoch (--epochs is then the maximum); without this flag, only "
                        "on data with 20,000 or more users (early_stopping='auto')")
    g.add_argument("--no-early-stopping", action="store_true",
                   help="train for --epochs epochs whatever the data's size")
    g.add_argument("--learning-rate-drop", type=float, default=None,
                   help="with early stopping: at the first validation plateau, go back to "
                        "the best epoch and multiply the learning rate by this factor "
                        "(default: 0.1 for ccl and softmax, no drop for warp)")
    g.add_argument("--refit", action="store_true",
                   help="with --early-stopping: then train again on all the positives for "
                        "the best epoch count (early_stopping='refit')")
    g.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
    g.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    g.add_argument("--quiet", action="store_true", help="no progress bar")


def _dask_args(parser: argparse.ArgumentParser, job: str, how: str) -> None:
    g = parser.add_argument_group("on a Dask cluster (needs warprec[dask])")
    g.add_argument("--dask-scheduler", metavar="ADDRESS",
                   help=f"{job} on the Dask cluster of this scheduler, {how}")
    g.add_argument("--workers", type=int, metavar="N",
                   help=f"{job} on a local Dask cluster of N single-threaded worker processes")


def _data_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--min-rating", type=float, default=None,
                        help="keep ratings >= this as positives (default: every row; a "
                             "warning says when the ratings look explicit)")
    parser.add_argument("--sep", default=None, help="field separator if not auto-detected")
    parser.add_argument("--user-col", default=None, metavar="NAME",
                        help="the user id column (default: detected, e.g. user_id, userId, "
                             "user, uid)")
    parser.add_argument("--item-col", default=None, metavar="NAME",
                        help="the item id column (default: detected, e.g. item_id, movieId, "
                             "item, iid)")


def _metric_list(text: str) -> list[str]:
    """``--metrics``: comma-separated metric names, each one of
    :data:`warprec.metrics.METRIC_NAMES`."""
    from .metrics import METRIC_NAMES

    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one metric")
    for name in names:
        if name not in METRIC_NAMES:
            raise argparse.ArgumentTypeError(
                f"unknown metric {name!r}; choose among {', '.join(METRIC_NAMES)}")
    return names


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the ``warprec`` command."""
    from . import __version__

    parser = _Parser(prog="warprec", description="WARP recommender.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("fit", help="fit a model on a ratings file and save it")
    p.add_argument("ratings", help="ratings file (u.data, ratings.dat, ratings.csv, any CSV, "
                                   "Parquet)")
    p.add_argument("-o", "--output", required=True, help="where to write the model (.npz)")
    p.add_argument("--item-features", help="CSV of item features with a header and an item "
                                           "id column (e.g. MovieLens movies.csv: its "
                                           "genres become features)")
    p.add_argument("--user-features", help="CSV of user features with a user id column")
    _dask_args(p, "train", "one shard of users per worker (see docs/scaling.md)")
    _data_args(p)
    _model_args(p)

    p = sub.add_parser("evaluate", help="fit on train, report metrics on test")
    p.add_argument("ratings", help="training ratings, or all ratings when --test is absent")
    p.add_argument("--test", help="test ratings file (default: a per-user random split)")
    p.add_argument("--model", help="evaluate this saved model instead of fitting one")
    p.add_argument("--test-fraction", type=float, default=0.2,
                   help="per-user fraction held out when --test is absent (default 0.2)")
    p.add_argument("-k", type=int, default=10, help="cut-off (default 10)")
    p.add_argument("--metrics", type=_metric_list, default=None, metavar="NAME[,NAME...]",
                   help="comma-separated metrics among precision, recall, map, mrr, ndcg, "
                        "hit_rate, auc, ndcg_graded (default: all but auc and ndcg_graded; "
                        "e.g. --metrics ndcg,auc: NDCG and the full AUC)")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    p.add_argument("--item-features", help="CSV of item features with an item id column, as "
                                           "for `warprec fit --item-features`: fit the "
                                           "hybrid model")
    p.add_argument("--cold-items", type=float, default=None, metavar="FRACTION",
                   help="also measure item cold start: hold out every rating of this share "
                        "of the items that have features (e.g. 0.2), fit on the rest, and "
                        "report the quality on the warm items and, ranking the held-out "
                        "items from their features alone, on the cold ones, beside the "
                        "popularity and feature-popularity baselines (needs "
                        "--item-features)")
    p.add_argument("--user-features", help="CSV of user features with a user id column, as "
                                           "for `warprec fit --user-features`")
    p.add_argument("--cold-users", type=float, default=None, metavar="FRACTION",
                   help="measure user cold start: hold out every rating of this share of "
                        "the users that have features, and report the quality for them, "
                        "ranking from their features alone, beside popularity (needs "
                        "--user-features)")
    _dask_args(p, "fit (unless --model) and evaluate",
               "one shard of users per worker (see docs/scaling.md)")
    _data_args(p)
    _model_args(p)

    p = sub.add_parser("tune", help="search hyperparameters within a time budget")
    p.add_argument("ratings", help="ratings file; tune holds out its own validation share")
    p.add_argument("--time-budget", type=float, default=120.0, metavar="SECONDS",
                   help="wall time of the whole search, final refit included (default 120)")
    p.add_argument("--clock", choices=("wall", "work"), default="wall",
                   help="what the budget counts: wall time (default), or the search's work "
                        "at a fixed reference speed (the same search on a loaded or quiet "
                        "machine; the wall time is then not bounded)")
    p.add_argument("--metric", default="ndcg@10",
                   help="validation metric <name>@<k> to maximise (default ndcg@10)")
    p.add_argument("--space", choices=("both", "warp", "ccl"), default="both",
                   help="search space: both losses (default: each configuration from "
                        "warprec.tuning.WARP_SEARCH_SPACE or CCL_SEARCH_SPACE), warp or ccl "
                        "(the cosine contrastive loss) alone")
    p.add_argument("--threads", type=int, default=None, help="threads (default: all cores)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("-o", "--output", help="write the best model, refit on all ratings (.npz)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--item-features", help="CSV of item features with an item id column: "
                                           "search the hybrid model, its features' weight "
                                           "included")
    p.add_argument("--user-features", help="CSV of user features with a user id column")
    p.add_argument("--cold-start", choices=("items", "users"), default=None,
                   help="validate every trial on held-out items (users) ranked from their "
                        "features alone, so that the search picks the configuration that "
                        "ranks new ones best (needs --item-features / --user-features)")
    _data_args(p)

    p = sub.add_parser("recommend", help="top-k items for users from a saved model")
    p.add_argument("model", help="model file written by `warprec fit`")
    p.add_argument("users", nargs="*", help="raw user ids")
    p.add_argument("--users-file", help="more user ids: a CSV or Parquet file with a user id "
                                        "column (user_id, userId, user, ... as in ratings "
                                        "files), or one id per line")
    p.add_argument("-k", type=int, default=10, help="items per user (default 10)")
    p.add_argument("--titles", help="movies.csv / u.item to show titles")
    p.add_argument("--include-seen", action="store_true", help="do not exclude training items")
    p.add_argument("--on-unknown", choices=("error", "skip", "popular"), default="error",
                   help="users the model was not fit on: error (default: stop and name "
                        "them), skip (leave them out, with a warning) or popular (the most "
                        "popular items, marked in the output's fallback column)")
    p.add_argument("--item-features", help="CSV of item features with an item id column, as "
                                           "for `warprec fit --item-features`: rank the items "
                                           "it lists, items unseen at fit included (a model "
                                           "fit with --item-features)")
    p.add_argument("--approximate", action="store_true",
                   help="candidates from an approximate nearest-neighbour index of the items "
                        "(saved in the model file, else built now), scored exactly: for "
                        "large catalogues; needs pip install 'warprec[ann]'")
    p.add_argument("--format", choices=("text", "csv", "json", "parquet"),
                   help="output format (default: from --output's extension, else text); csv, "
                        "json and parquet give rows user_id, item_id, score, rank[, title]")
    p.add_argument("-o", "--output", help="write the recommendations to this file")
    _dask_args(p, "recommend", "the users split into one partition per worker")

    p = sub.add_parser("demo", help="fit, evaluate and recommend on the embedded data")
    p.add_argument("--data", default=None, help=argparse.SUPPRESS)
    p.add_argument("--epochs", type=int, default=None)
    return parser


def _make_model(args: argparse.Namespace) -> WARPFactorizer:
    from .model import TUNED_PARAMS, WARPFactorizer

    params = dict(TUNED_PARAMS) if getattr(args, "tuned", False) else {}
    for name, value in (("epochs", args.epochs), ("learning_rate", args.learning_rate),
                        ("alpha", args.alpha), ("max_sampled", args.max_sampled),
                        ("n_negatives", args.n_negatives),
                        ("negative_sharing", args.negative_sharing), ("margin", args.margin),
                        ("negative_weight", args.negative_weight), ("dropout", args.dropout),
                        ("temperature", args.temperature),
                        ("feature_weight", args.feature_weight),
                        ("feature_normalization", args.feature_normalization),
                        ("feature_negatives", args.feature_negatives),
                        ("learning_rate_drop", args.learning_rate_drop)):
        if value is not None:
            params[name] = value
    return WARPFactorizer(n_components=args.factors, loss=args.loss,
                          rank_weighting=args.rank_weighting, n_threads=args.threads,
                          random_state=args.seed, verbose=not args.quiet,
                          early_stopping=_early_stopping(args), **params)


def _early_stopping(args: argparse.Namespace) -> bool | Literal["refit", "auto"]:
    """``early_stopping`` from ``--early-stopping``, ``--no-early-stopping`` and
    ``--refit`` ("auto", the library's default, without them)."""
    if args.early_stopping and args.no_early_stopping:
        raise CLIError("--early-stopping and --no-early-stopping contradict each other: "
                       "give one of them.")
    if args.refit and not args.early_stopping:
        raise CLIError("--refit needs --early-stopping: it trains again for the epoch count "
                       "that early stopping chose.")
    if args.no_early_stopping:
        return False
    if not args.early_stopping:
        return "auto"
    return "refit" if args.refit else True


def _read_positives(path: str | os.PathLike[str], args: argparse.Namespace) -> pd.DataFrame:
    from .data import positives, read_ratings

    try:
        frame = read_ratings(path, sep=args.sep, user_col=args.user_col,
                             item_col=args.item_col)
    except ImportError as exc:   # a Parquet file without pyarrow
        raise CLIError(str(exc)) from None
    except KeyError as exc:   # the id columns: read_ratings' hints, as command-line options
        text = _one_line(exc)
        if "user_col=" not in text and "item_col=" not in text:
            raise
        text = text.split(" Name it explicitly with ")[0]
        raise CLIError(text.replace("user_col=", "--user-col ").replace(
            "item_col=", "--item-col ") + (" Name the id columns with --user-col and "
                                           "--item-col." if "--user-col" not in text
                                           else "")) from None
    pos = positives(frame, min_rating=args.min_rating)
    if len(pos) == 0:
        raise CLIError(f"{path}: no rows left after --min-rating {args.min_rating}.")
    return pos


def _fit(model: WARPFactorizer, train: pd.DataFrame, out: TextIO, *,
         user_features: pd.DataFrame | None = None,
         item_features: pd.DataFrame | None = None) -> WARPFactorizer:
    tic = time.perf_counter()
    model.fit(train, user_features=user_features, item_features=item_features)
    seconds = time.perf_counter() - tic
    h = model.history_
    out.write(f"fitted {model.n_users_} users x {model.n_items_} items, {len(train)} positives, "
              f"{len(h)} epochs in {seconds:.2f} s (last epoch loss {h[-1]['loss']:.4f})\n"
              if h else "fitted with 0 epochs\n")
    if getattr(model, "best_epoch_", None) is not None:
        kept = (f"chose {model.best_epoch_} epochs, refit on all the positives"
                if getattr(model, "refit_", False) else f"kept epoch {model.best_epoch_}")
        out.write(f"early stopping {kept} (validation {model.validation_metric} "
                  f"{max(model.validation_scores_):.4f})\n")
    return model


def _check_output(path: str) -> None:
    """Fail before fitting (which may take long) if the model cannot be written there."""
    target = Path(path)
    if target.is_dir():
        raise CLIError(f"-o {path}: is a directory; give a file name, e.g. "
                       f"{target / 'model.npz'}.")
    folder = target.resolve().parent
    if not folder.is_dir():
        raise CLIError(f"-o {path}: the folder {folder} does not exist; create it first.")
    if not os.access(folder, os.W_OK):
        raise CLIError(f"-o {path}: the folder {folder} is not writable.")


def _read_side_features(args: argparse.Namespace) -> dict[str, pd.DataFrame]:
    """``--user-features`` / ``--item-features``: the frames fit takes, or None."""
    from .data import read_features

    return {f"{kind}_features": read_features(path, kind)
            for kind, path in (("user", getattr(args, "user_features", None)),
                               ("item", getattr(args, "item_features", None)))
            if path is not None}


def _on_dask(args: argparse.Namespace) -> bool:
    """Whether ``--dask-scheduler`` or ``--workers`` asks for a Dask cluster."""
    if args.workers is not None and args.workers < 1:
        raise CLIError(f"--workers must be a positive integer (got {args.workers}).")
    if args.dask_scheduler and args.workers:
        raise CLIError("give --dask-scheduler (a running cluster) or --workers (a local "
                       "one), not both.")
    return bool(args.dask_scheduler or args.workers)


@contextlib.contextmanager
def _dask_client(args: argparse.Namespace) -> Iterator[Client]:
    """A client of the cluster ``--dask-scheduler`` names, or of a local cluster of
    ``--workers`` single-threaded worker processes (closed afterwards)."""
    try:
        from distributed import Client

        from ._dask_fit import local_cluster
    except ImportError:
        raise CLIError("running on Dask needs it installed: pip install 'warprec[dask]'."
                       ) from None
    with contextlib.ExitStack() as stack:
        target = args.dask_scheduler
        if args.workers:
            # the local scheduler runs in this process: keep its notes on every P2P
            # shuffle (warprec.dask.evaluate shuffles the test rows by user, logged as
            # warnings) off the command's stderr
            shuffle_log = logging.getLogger("distributed.shuffle")
            stack.callback(shuffle_log.setLevel, shuffle_log.level)
            shuffle_log.setLevel(logging.ERROR)
            target = stack.enter_context(local_cluster(args.workers))
        yield stack.enter_context(Client(target))


def _check_dask_fit(args: argparse.Namespace) -> None:
    """Fail before any work on the options distributed training does not have."""
    if args.early_stopping or getattr(args, "item_features", None) or \
            getattr(args, "user_features", None):
        raise CLIError("--early-stopping and side features are not available with "
                       "distributed training; drop them, or fit on one machine.")


def _fit_on_dask(model: WARPFactorizer, train: pd.DataFrame, args: argparse.Namespace,
                 out: TextIO, client: Client | None = None) -> WARPFactorizer:
    """``warprec fit / evaluate --dask-scheduler / --workers``: :func:`warprec.dask.fit`,
    through ``client`` if given (else a client of :func:`_dask_client`, closed after)."""
    _check_dask_fit(args)
    from ._base import warn_if_explicit

    warn_if_explicit(train, source="the ratings")   # (what a local fit warns about)
    tic = time.perf_counter()
    from ._dask_fit import fit

    with contextlib.ExitStack() as stack:
        if client is None:
            client = stack.enter_context(_dask_client(args))
        params = {k: v for k, v in model.get_params().items() if k != "verbose"}
        model = fit(train, client, **params)
    h = model.history_
    out.write(f"fitted {model.n_users_} users x {model.n_items_} items, {len(train)} positives, "
              f"{len(h)} epochs on {h[-1]['workers'] if h else 0} Dask workers in "
              f"{time.perf_counter() - tic:.2f} s ({h[-1]['bytes_shipped'] / 1e6 if h else 0:.1f}"
              f" MB shipped per epoch)\n")
    return model


def cmd_fit(args: argparse.Namespace, out: TextIO) -> int:
    """``warprec fit``: read, keep positives, fit (on Dask with --dask-scheduler or
    --workers), save."""
    _check_output(args.output)
    train = _read_positives(args.ratings, args)
    if _on_dask(args):
        model = _fit_on_dask(_make_model(args), train, args, out)
    else:
        model = _fit(_make_model(args), train, out, **_read_side_features(args))
    path = model.save(args.output)
    out.write(f"saved model to {path}\n")
    return 0


def _metrics_table(rows: Sequence[tuple[str, Mapping[str, float]]], k: int) -> str:
    names = [n for n in rows[0][1] if n != "n_users"]
    lines = [f"{'model':<14}" + "".join(f"{n:>13}" for n in names)]
    for label, metrics in rows:
        lines.append(f"{label:<14}" + "".join(f"{metrics[n]:>13.4f}" for n in names))
    return "\n".join(lines) + "\n"


def _evaluate(model: FactorRecommender, test: pd.DataFrame, train: pd.DataFrame,
              args: argparse.Namespace, client: Client | None) -> dict[str, float | int]:
    """The metrics of ``model``: :func:`warprec.metrics.evaluate`, or with a Dask
    ``client`` :func:`warprec.dask.evaluate` (the same numbers, to the last bit) on the
    test and train rows split into one partition per worker."""
    if client is None:
        from .metrics import evaluate

        return evaluate(model, test, train=train, k=args.k, metrics=args.metrics)
    import dask.dataframe as dd

    from .dask import evaluate as evaluate_on_dask

    n_parts = max(1, len(client.scheduler_info()["workers"]))
    return evaluate_on_dask(model, dd.from_pandas(test, npartitions=n_parts, sort=False),
                            train=dd.from_pandas(train, npartitions=n_parts, sort=False),
                            k=args.k, metrics=args.metrics, client=client)


def cmd_evaluate(args: argparse.Namespace, out: TextIO) -> int:
    """``warprec evaluate``: fit (or load) a model, evaluate it and a popularity baseline;
    with ``--dask-scheduler`` / ``--workers`` both on a Dask cluster (the fit unless
    ``--model`` loads one)."""
    import numpy as np

    from .baselines import PopularityRecommender
    from .data import split_random
    from .model import WARPFactorizer

    if args.k < 1:
        raise CLIError(f"-k must be a positive integer (got {args.k}).")
    if args.cold_items is not None or args.cold_users is not None:
        return _evaluate_cold(args, out)
    on_dask = _on_dask(args)
    if on_dask and not args.model:
        _check_dask_fit(args)
    data = _read_positives(args.ratings, args)
    if args.test:
        train, test = data, _read_positives(args.test, args)
    else:
        if not 0.0 < args.test_fraction < 1.0:
            raise CLIError(f"--test-fraction must be in (0, 1) (got {args.test_fraction}).")
        train, test = split_random(data, test_fraction=args.test_fraction,
                                   random_state=args.seed)
        if len(test) == 0:
            raise CLIError(f"the random split left no test rows: with --test-fraction "
                           f"{args.test_fraction} a user needs at least "
                           f"{int(np.ceil(1 / args.test_fraction - 1e-9))} positives to have "
                           f"one held out. Pass --test FILE or a larger --test-fraction.")
    model = WARPFactorizer.load(args.model) if args.model else None
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(_dask_client(args)) if on_dask else None
        # (with --json the fit's report goes to stderr: stdout holds the JSON alone)
        report = sys.stderr if args.json else out
        if model is None and client is not None:
            if args.item_features:
                raise CLIError("--item-features: side features train on one machine; "
                               "leave out --dask-scheduler / --workers.")
            model = _fit_on_dask(_make_model(args), train, args, report, client)
        elif model is None:
            model = _fit(_make_model(args), train, report, **_read_side_features(args))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # users/items only in test: _report_unknown
            # the popularity baseline is a warprec factor model too (zero user factors,
            # the item counts as biases), so warprec.dask.evaluate takes it as well
            rows = [("warprec", _evaluate(model, test, train, args, client)),
                    ("popularity", _evaluate(PopularityRecommender().fit(train), test, train,
                                             args, client))]
    if rows[0][1]["n_users"] == 0:
        hint = "are the user ids of the test file the same as in the training file?"
        known = model.user_ids_
        if known is not None and len(known) and len(test) and \
                isinstance(known[0], str) != isinstance(test["user_id"].iloc[0], str):
            hint = ("the model's user ids are " + ("text" if isinstance(known[0], str) else
                                                   "numbers") + " but the test file's are "
                    + ("text" if isinstance(test["user_id"].iloc[0], str) else "numbers")
                    + "; one non-numeric id makes a whole column text")
        raise CLIError(f"no test user is known to the model ({hint}), so there is nothing "
                       f"to evaluate.")
    if args.json:
        out.write(json.dumps({label: m for label, m in rows}, indent=2) + "\n")
    else:
        out.write(f"evaluated on {rows[0][1]['n_users']} test users\n")
        out.write(_metrics_table(rows, args.k))
    _report_unknown(model, test)
    return 0


def _evaluate_cold(args: argparse.Namespace, out: TextIO) -> int:
    """``warprec evaluate --cold-items F`` / ``--cold-users F``: the warm and the cold
    entities' quality of the hybrid model and the baselines (see the options' help)."""
    import numpy as np

    from .baselines import FeaturePopularityRecommender, PopularityRecommender
    from .data import split_cold_items, split_cold_users, split_random
    from .evaluation import evaluate, evaluate_cold_items, evaluate_cold_users

    if args.cold_items is not None and args.cold_users is not None:
        raise CLIError("give --cold-items or --cold-users, not both: each makes its own "
                       "split.")
    kind = "item" if args.cold_items is not None else "user"
    fraction = args.cold_items if kind == "item" else args.cold_users
    option = f"--cold-{kind}s"
    for given, name in ((args.test, "--test"), (args.model, "--model"),
                        (args.dask_scheduler or args.workers, "--dask-scheduler/--workers")):
        if given:
            raise CLIError(f"{option} makes its own split and fits its own model on one "
                           f"machine: leave out {name}.")
    path = args.item_features if kind == "item" else args.user_features
    if not path:
        example = ("MovieLens movies.csv" if kind == "item"
                   else "a CSV with a userId column and columns such as age or gender")
        raise CLIError(f"{option} ranks for the held-out {kind}s from their features: pass "
                       f"--{kind}-features FILE (e.g. {example}).")
    if not 0.0 < fraction < 1.0:
        raise CLIError(f"{option} must be in (0, 1) (got {fraction}).")
    if not 0.0 < args.test_fraction < 1.0:
        raise CLIError(f"--test-fraction must be in (0, 1) (got {args.test_fraction}).")
    data = _read_positives(args.ratings, args)
    features = _read_side_features(args)
    own = features[f"{kind}_features"]
    split = split_cold_items if kind == "item" else split_cold_users
    try:
        rest, cold_test = split(data, fraction, args.seed, **{f"{kind}s": own[f"{kind}_id"]})
    except ValueError as exc:
        raise CLIError(f"{option} {fraction}: {exc}") from None
    train, warm_test = split_random(rest, test_fraction=args.test_fraction,
                                    random_state=args.seed)
    # (features of the entities fit sees; the cold ones' rows rank them afterwards)
    warm_features = {}
    for name, frame in features.items():
        key = name.replace("_features", "_id")     # user_id / item_id
        warm_features[name] = frame[frame[key].isin(train[key])]
    cold_features = own[own[f"{kind}_id"].isin(cold_test[f"{kind}_id"])]
    model = _fit(_make_model(args), train, sys.stderr if args.json else out, **warm_features)
    baselines = {"popularity": PopularityRecommender().fit(train)}
    if "item_features" in features:
        baselines["feature pop."] = FeaturePopularityRecommender().fit(
            train, item_features=warm_features["item_features"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # test users or items only in the held-out rows
        warm = [(label, evaluate(m, warm_test, train=train, k=args.k, metrics=args.metrics))
                for label, m in (("warprec", model), *baselines.items())]
        if kind == "item":
            cold = [(label, evaluate_cold_items(m, cold_test, cold_features, k=args.k,
                                                metrics=args.metrics))
                    for label, m in (("warprec", model),
                                     ("feature pop.", baselines["feature pop."]))]
        else:
            cold = [(label, evaluate_cold_users(m, cold_test, cold_features, k=args.k,
                                                metrics=args.metrics))
                    for label, m in (("warprec", model), *baselines.items())]
    if args.json:
        out.write(json.dumps({"warm": dict(warm), "cold": dict(cold)}, indent=2) + "\n")
        return 0
    share = f"{np.round(100 * fraction):.0f}% of those with features"
    out.write(f"warm: {train['item_id'].nunique()} items, {warm[0][1]['n_users']} test "
              f"users\n")
    out.write(_metrics_table(warm, args.k))
    if kind == "item":
        out.write(f"cold items: {len(cold_features)} items never trained on ({share}), "
                  f"ranked from their features, {cold[0][1]['n_users']} test users "
                  f"(popularity cannot rank them: they have no positives)\n")
    else:
        out.write(f"cold users: {cold[0][1]['n_users']} users never trained on ({share}), "
                  f"ranking from their features\n")
    out.write(_metrics_table([(label, {n: v for n, v in m.items() if n != "n_items"})
                              for label, m in cold], args.k))
    return 0


def _report_unknown(model: FactorRecommender, test: pd.DataFrame) -> None:
    """Warn (one line each on stderr) about test rows the model cannot score."""
    if model.user_ids_ is None or model.item_ids_ is None:   # (both None: a matrix fit)
        return
    users = test["user_id"].isin(set(model.user_ids_.tolist()))
    items = test["item_id"].isin(set(model.item_ids_.tolist()))
    if not users.all():
        warnings.warn(f"{int((~users).sum())} test rows of "
                      f"{test.loc[~users, 'user_id'].nunique()} users unseen in training "
                      "were left out of the evaluation.", stacklevel=2)
    if not (items | ~users).all():
        warnings.warn(f"{int((~items & users).sum())} test rows name items unseen in "
                      "training; they count as relevant items that are never recommended.",
                      stacklevel=2)


def cmd_tune(args: argparse.Namespace, out: TextIO) -> int:
    """``warprec tune``: :func:`warprec.tune` on a ratings file; the trials, the best
    parameters (or JSON) and optionally the best model."""
    import math

    from .tuning import CCL_SEARCH_SPACE, WARP_SEARCH_SPACE, tune

    if not (math.isfinite(args.time_budget) and args.time_budget > 0):
        raise CLIError(f"--time-budget must be a number of seconds > 0 "
                       f"(got {args.time_budget}).")
    if args.output:
        _check_output(args.output)
    kind = {"items": "item", "users": "user", None: None}[args.cold_start]
    if kind is not None and not getattr(args, f"{kind}_features"):
        raise CLIError(f"--cold-start {args.cold_start} ranks held-out {kind}s from their "
                       f"features: pass --{kind}-features too.")
    data = _read_positives(args.ratings, args)
    features = _read_side_features(args)
    # the ignores: TuneResult.best_model and .trials are annotated as object. "both" is
    # tune's default space (and its zero-shot start; with features, the hybrid space)
    result = tune(data, time_budget=args.time_budget, n_threads=args.threads,
                  random_state=args.seed, metric=args.metric, verbose=not args.quiet,
                  clock=args.clock, cold_start=args.cold_start,
                  search_space={"warp": WARP_SEARCH_SPACE, "ccl": CCL_SEARCH_SPACE,
                                "both": None}[args.space],
                  user_features=features.get("user_features"),
                  item_features=features.get("item_features"))
    path = (result.best_model.save(args.output)  # type: ignore[attr-defined]
            if args.output else None)
    trials: pd.DataFrame = result.trials  # type: ignore[assignment]
    if args.json:
        record = dict(best_params=result.best_params, best_score=result.best_score,
                      best_trial=result.best_trial, metric=result.metric,
                      elapsed_seconds=result.elapsed_seconds,
                      compile_seconds=result.compile_seconds,
                      time_budget=result.time_budget, clock=result.clock,
                      budget_seconds=result.budget_seconds, cold_start=result.cold_start,
                      trials=[{k: _json_value(v) for k, v in row.items()}
                              for row in trials.to_dict("records")])
        if path is not None:
            record["model"] = str(path)
        out.write(json.dumps(record, indent=2, default=_json_value, allow_nan=False) + "\n")
        return 0
    # (compilation comes first and counts in the budget: said when it took a noticeable time)
    compiled = (f", of which {result.compile_seconds:.1f} s to compile or load the kernels "
                f"first" if result.compile_seconds >= 1 else "")
    counted = (f", {result.budget_seconds:.1f} s of it counted as work"
               if result.clock == "work" else "")
    cold = f" on held-out {result.cold_start}" if result.cold_start else ""
    out.write(f"{len(trials)} trial evaluations of {trials['trial'].nunique()} configurations "
              f"in {result.elapsed_seconds:.1f} s (budget {result.time_budget:g} s"
              f"{counted}{compiled}); "
              f"best {min(10, trials['trial'].nunique())} by validation {result.metric}"
              f"{cold}:\n")
    out.write(_trials_table(trials, result.metric, 10, result.best_trial))
    kept = (" (the defaults: no trial beat them beyond the noise)"
            if result.best_trial == 0 else "")
    out.write(f"chosen: trial {result.best_trial}{kept}, marked *; parameters (validation "
              f"{result.metric} {result.best_score:.4f}):\n")
    for name, value in result.best_params.items():
        out.write(f"  {name} = {value!r}\n")
    if path is not None:
        out.write(f"saved model to {path}\n")
    return 0


def _trials_table(trials: pd.DataFrame, metric: str, top: int, chosen: int) -> str:
    """The ``top`` trials by score (each at its last evaluation) as a text table, the
    ``chosen`` trial marked with ``*`` (and listed even if its score is not among them)."""
    import pandas as pd

    columns = list(trials.columns)
    params = columns[columns.index("rung") + 1:columns.index("max_epochs")]
    shown = ["trial", "rung", *params, "epochs", "score", "seconds"]
    last = trials.drop_duplicates("trial", keep="last")   # each trial's final state
    best = last.sort_values("score", ascending=False, kind="stable").head(top)
    if chosen not in set(best["trial"]):
        best = pd.concat([best, last[last["trial"] == chosen]])
    rows = [[metric if c == "score" else c for c in shown]]
    for record in best.to_dict("records"):
        cells = []
        for c in shown:
            value = record[c]
            if c in params and _json_value(value) is None:
                cells.append("-")       # not a parameter of this trial's sub-space
            elif c == "score":
                cells.append(f"{value:.4f}")
            elif c == "seconds":
                cells.append(f"{value:.2f}")
            elif isinstance(value, float):
                cells.append(f"{value:.4g}")
            else:
                cells.append(str(value))
        if record["trial"] == chosen:
            cells[0] = f"*{cells[0]}"
        rows.append(cells)
    widths = [max(len(row[i]) for row in rows) for i in range(len(shown))]
    return "".join("  ".join(cell.rjust(w) for cell, w in zip(row, widths)) + "\n"
                   for row in rows)


def _json_value(value: object) -> object:
    """A JSON-ready value: numpy scalars as Python ones, NaN and pandas' NA as None
    (null)."""
    import pandas as pd

    if value is pd.NA:
        return None
    value = value.item() if hasattr(value, "item") else value
    return None if isinstance(value, float) and value != value else value


def cmd_recommend(args: argparse.Namespace, out: TextIO) -> int:
    """``warprec recommend``: top-k raw item ids (and titles) for raw user ids."""
    from .model import WARPFactorizer

    model = WARPFactorizer.load(args.model)
    if args.k < 1:
        raise CLIError(f"-k must be a positive integer (got {args.k}).")
    titles = None
    if args.titles:
        from .data import read_item_titles
        titles = read_item_titles(args.titles)
    users = [_parse_id(u, model.user_ids_, args.on_unknown)
             for u in args.users + _read_user_ids(args.users_file)]
    if not users:
        raise CLIError("no users given: list user ids after the model file, or pass "
                       "--users-file.")
    item_features = None
    if args.item_features:
        from .data import read_features

        item_features = read_features(args.item_features, "item")
    fmt = args.format or _format_of(args.output)
    if fmt == "parquet":
        if args.output is None:
            raise CLIError("Parquet output goes to a file: pass -o FILE.parquet.")
        _check_output(args.output)
        _need_parquet()
    if args.approximate:
        from . import _ann

        try:
            _ann.load_library()
        except ImportError as exc:
            raise CLIError(str(exc)) from None
    if _on_dask(args):
        if item_features is not None:
            raise CLIError("--item-features is not available on Dask: drop it, or "
                           "recommend on one machine.")
        if args.approximate:
            raise CLIError("--approximate is not available on Dask: drop it, or "
                           "recommend on one machine.")
        with _dask_client(args) as client:
            import dask.dataframe as dd
            import pandas as pd

            from .dask import recommend

            n_parts = max(1, min(len(client.scheduler_info()["workers"]), len(users)))
            parts = dd.from_pandas(pd.Series(users, name="user_id"), npartitions=n_parts)
            frame = recommend(model, parts, k=args.k, exclude_seen=not args.include_seen,
                              client=client, on_unknown=args.on_unknown,
                              ).compute().reset_index(drop=True)
    else:
        frame = model.recommend(users, k=args.k, exclude_seen=not args.include_seen,
                                as_frame=True, on_unknown=args.on_unknown,
                                item_features=item_features, approximate=args.approximate)
    if titles is not None:
        frame["title"] = [titles.get(item, "") for item in frame["item_id"]]
    with contextlib.ExitStack() as stack:
        target = out if args.output is None or fmt == "parquet" else stack.enter_context(
            open(args.output, "w", encoding="utf-8", newline=""))
        if fmt == "parquet":
            frame.to_parquet(args.output, index=False)
        elif fmt == "csv":
            frame.to_csv(target, index=False)
        elif fmt == "json":
            json.dump([{key: _json_value(value) for key, value in row.items()}
                       for row in frame.to_dict("records")], target, indent=1)
            target.write("\n")
        else:
            groups = dict(tuple(frame.groupby("user_id", sort=False)))
            for user in dict.fromkeys(users):
                target.write(f"user {user}:\n")
                rows = groups.get(user, frame.iloc[:0])
                if "fallback" in rows.columns and rows["fallback"].any():
                    target.write("  (not seen at fit time: the most popular items)\n")
                for row in rows.itertuples(index=False):
                    title = f"  {row.title}" if titles is not None else ""
                    target.write(f"  {row.rank:>3}. {row.item_id}{title}  ({row.score:.3f})\n")
    if args.output is not None:
        out.write(f"wrote {len(frame)} recommendations for {len(users)} users to "
                  f"{args.output} ({fmt})\n")
    return 0


def _format_of(path: str | None) -> str:
    """The output format named by a file's extension (text without one)."""
    if path is None:
        return "text"
    suffix = os.path.splitext(path)[1].lower()
    if suffix in (".csv", ".json"):
        return suffix[1:]
    if suffix in (".parquet", ".pq"):
        return "parquet"
    if suffix in ("", ".txt"):
        return "text"
    raise CLIError(f"cannot tell the format of {path!r} from its extension: use .csv, .json, "
                   f".parquet or .txt, or pass --format.")


def _need_parquet() -> None:
    """Fail at once (before any work) when no Parquet engine is installed."""
    for engine in ("pyarrow", "fastparquet"):
        try:
            __import__(engine)
        except ImportError:
            continue
        return
    raise CLIError("writing Parquet needs pyarrow, which warprec does not install by "
                   "default: pip install 'warprec[dask]' (or pip install pyarrow).")


def _read_user_ids(path: str | None) -> list[str]:
    """User ids (as strings) from a file: the user id column of a CSV with a header or of
    a Parquet file (named as :func:`warprec.data.read_ratings` recognises it: user_id,
    userId, user, uid ...), or one id per line (under an optional such header)."""
    if path is None:
        return []
    if os.path.splitext(path)[1].lower() in (".parquet", ".pq"):
        from ._files import check_path as _check_path
        from ._files import read_parquet as _read_parquet

        try:
            frame = _read_parquet(_check_path(path, allow_dir=True))
        except ImportError as exc:
            raise CLIError(str(exc)) from None
        return [str(user) for user in frame[_user_column(frame, path)].tolist()]
    try:
        with open(path, encoding="utf-8") as fh:
            lines = [line.strip() for line in fh if line.strip()]
    except OSError as exc:
        raise CLIError(f"cannot read the users file {path!r}: {exc.strerror or exc}.") from None
    sep = next((c for c in (",", "\t", ";") if lines and c in lines[0]), None)
    if sep is not None:
        import pandas as pd
        frame = pd.read_csv(path, dtype=str, keep_default_na=False, sep=sep)
        return frame[_user_column(frame, path)].str.strip().tolist()
    from ._columns import ALIASES, norm_name

    if lines and norm_name(lines[0]) in ("userid", *ALIASES["user_id"]):
        lines = lines[1:]   # a header line
    return lines


def _user_column(frame: pd.DataFrame, path: str) -> Hashable:
    """The user id column of a users file, found as in ratings files."""
    from ._columns import find_column

    try:
        column = find_column(frame, "user_id", None, False, f"the users file {path!r}")
    except KeyError:
        column = None
    if column is None:
        raise CLIError(f"the users file {path!r} has no user id column (looked for user_id, "
                       f"userId, user, uid, users in any case; columns: "
                       f"{', '.join(map(str, frame.columns))}); rename it.")
    return column


def _parse_id(text: str, known: NDArray[Any] | None,
              on_unknown: str = "error") -> int | float | str:

    """Command-line ids are strings; match the model's id type. An id that cannot be one
    of the model's (not a number where they are numbers) is an unknown user: kept as
    text unless ``on_unknown`` is "error"."""
    if known is None:  # a model fit on a matrix: users are row indices
        try:
            return int(text)
        except ValueError:
            raise CLIError(f"user {text!r} is not a row index; this model was fit on a "
                           f"matrix, so users are integers 0..n_users-1.") from None
    if len(known) and not isinstance(known[0], str):
        try:
            return type(known[0].item() if hasattr(known[0], "item") else known[0])(text)
        except ValueError:
            if on_unknown != "error":
                return text   # (an unknown user, skipped or served popular items)
            raise CLIError(f"user id {text!r} is not a number, but the model's ids are "
                           f"(--on-unknown skip or popular serves such users).") from None
    return text


def cmd_demo(args: argparse.Namespace, out: TextIO) -> int:
    """``warprec demo``: the whole loop on the embedded synthetic ratings."""
    from .baselines import PopularityRecommender
    from .data import positives, read_item_titles, read_ratings, split_random
    from .metrics import evaluate
    from .model import WARPFactorizer

    with contextlib.ExitStack() as files:
        if args.data is None:  # the package's files, as real paths even from a zip
            if not (DEMO_DATA / "ratings.csv").is_file():
                raise CLIError(f"the demo data is missing from the installed package "
                               f"({DEMO_DATA}); reinstall warprec.")
            path = files.enter_context(importlib.resources.as_file(DEMO_DATA / "ratings.csv"))
            titles_path = files.enter_context(
                importlib.resources.as_file(DEMO_DATA / "movies.csv"))
        else:
            path = Path(args.data)
            titles_path = path.with_name("movies.csv")
        frame = positives(read_ratings(path), min_rating=4.0)
        titles = read_item_titles(titles_path) if titles_path.exists() else None
    train, test = split_random(frame, test_fraction=0.2, random_state=0)
    out.write(f"data: {path.name}, {len(frame)} positives (rating >= 4), "
              f"{frame['user_id'].nunique()} users, {frame['item_id'].nunique()} items; "
              f"train {len(train)} / test {len(test)}\n")
    model = WARPFactorizer(epochs=30 if args.epochs is None else args.epochs, verbose=True)
    _fit(model, train, out)
    rows = [("warprec", evaluate(model, test, train=train, k=10)),
            ("popularity", evaluate(PopularityRecommender().fit(train), test, train=train, k=10))]
    out.write(_metrics_table(rows, 10))
    gain = rows[0][1]["ndcg@10"] / max(rows[1][1]["ndcg@10"], 1e-12)
    out.write(f"WARP NDCG@10 is {gain:.2f}x the popularity baseline's\n")
    user = train["user_id"].iloc[0]
    items, scores = model.recommend(user, k=5)
    out.write(f"top 5 for user {user}:\n")
    for item, score in zip(items, scores):
        name = titles.get(item, "") if titles is not None else ""
        out.write(f"  {item}  {name}  ({score:.3f})\n")
    return 0


COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "fit": cmd_fit, "evaluate": cmd_evaluate, "tune": cmd_tune, "recommend": cmd_recommend,
    "demo": cmd_demo}


def _one_line(exc: BaseException) -> str:
    message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
    message = str(message).strip()
    return message.splitlines()[0] if message else repr(exc)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    """Warnings as one line on stderr, without the source location."""
    text = str(message).strip().splitlines()
    (file or sys.stderr).write(f"warprec: warning: {text[0] if text else category.__name__}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``warprec`` command; returns the exit code.

    Bad input (including hyperparameters that make training diverge) ends with a
    one-line message and exit code 2; an unexpected internal error with a one-line
    message and exit code 1 (set ``WARPREC_DEBUG=1`` to see its traceback).
    """
    from .exceptions import DivergenceError

    parser = build_parser()
    args = parser.parse_args(argv)
    previous = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        return COMMANDS[args.command](args, sys.stdout)
    except (CLIError, OSError, ValueError, KeyError, TypeError, DivergenceError) as exc:
        # a diverged fit is bad input too: its hyperparameters (the message says which)
        sys.stderr.write(f"warprec {args.command}: error: {_one_line(exc)}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("warprec: interrupted\n")
        return 130
    except Exception as exc:  # noqa: BLE001 - never a traceback for the user
        if os.environ.get("WARPREC_DEBUG"):
            raise
        sys.stderr.write(f"warprec {args.command}: internal error: {type(exc).__name__}: "
                         f"{_one_line(exc)} (set WARPREC_DEBUG=1 for the traceback and "
                         f"please report it)\n")
        return 1
    finally:
        warnings.showwarning = previous


if __name__ == "__main__":
    sys.exit(main())
