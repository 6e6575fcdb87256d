"""Training on a Dask cluster: users split into shards, one shard per worker, the item side
combined after every epoch (``warprec.dask.fit``; the scheme and its measurements are in
docs/scaling.md).

Every worker holds one :class:`ShardTrainer` (a Dask actor): the positives of its users,
their factor and Adagrad rows, and a :class:`~warprec.WARPFactorizer` that trains on
them with warprec's own epoch kernel. An epoch is

1. the driver sends the item state (factors, biases and their Adagrad accumulators) to
   every worker;
2. each worker trains one epoch on its shard, starting from that state, and returns how
   its copy of the item state changed;
3. the driver adds the mean of the workers' changes to the item state
   (``combine="mean"``, the default) or their sum (``combine="sum"``).

User rows never leave their worker until the end. Each shard draws its own negatives and
order from counter-based streams keyed by its own seed (derived from ``random_state``
and the shard number), so with one thread per worker a fit is reproducible for the same
data, seed and number of workers. It is not the single-machine fit: a worker sees the
other shards' item updates only at the end of the epoch.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import scipy.sparse as sp

from ._defaults import WAIT_POLL_SECONDS
from ._loss_specs import loss_spec
from ._plan import resolve_epochs
from ._trainer import finite, record_epoch, unit_rows

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import dask.dataframe as dd
    from distributed import BaseActorFuture, Client, Future, LocalCluster
    from numpy.typing import NDArray

    from ._typing import Float32Array, Int64Array, InteractionData
    from .model import Callback, WARPFactorizer

#: The result of an actor's method call.
_R = TypeVar("_R")

log = logging.getLogger(__name__)

#: The arrays of the item side that the workers train and the driver combines.
ITEM_ARRAYS = ("item_factors_", "item_biases_", "item_grad_sq_", "bias_grad_sq_")
#: The arrays of the user side, kept on the workers during training.
USER_ARRAYS = ("user_factors_", "user_grad_sq_")
COMBINE = ("sum", "mean")


class ShardTrainer:
    """The training state of one shard of users (run as a Dask actor on a worker).

    Parameters
    ----------
    params : dict
        ``WARPFactorizer`` parameters, with the learning rate, decay and epoch order
        resolved on the whole data set (so that every shard trains with the same ones).
    indptr, indices : ndarray
        CSR arrays of the shard's positives (its users' rows over all items).
    user_state : dict of ndarray
        The shard's rows of :data:`USER_ARRAYS` (their starting values).
    seed : int
        The shard's seed.
    """

    def __init__(self, params: dict[str, Any], indptr: NDArray[np.integer[Any]],
                 indices: NDArray[np.integer[Any]], user_state: dict[str, Float32Array],
                 seed: int) -> None:
        from .model import WARPFactorizer

        n_users, d = user_state["user_factors_"].shape
        n_items = int(params.pop("n_items"))
        self.matrix = sp.csr_matrix((np.ones(indices.size, np.float32), indices, indptr),
                                    shape=(n_users, n_items))
        self.model = WARPFactorizer(**dict(params, epochs=0, random_state=seed))
        self.model.fit(self.matrix)  # allocates the state; no epoch runs
        for name in USER_ARRAYS:
            np.copyto(getattr(self.model, name), user_state[name])
        self.model.epochs = 1

    def epoch(self, item_state: dict[str, Float32Array],
              ) -> tuple[dict[str, Float32Array], dict[str, Any]]:
        """Train one epoch from ``item_state``; returns the change of every item array
        and the epoch's statistics (``WARPFactorizer.history_``)."""
        model = self.model
        for name in ITEM_ARRAYS:
            np.copyto(getattr(model, name), item_state[name])
        model.partial_fit(self.matrix)
        deltas = {name: getattr(model, name) - item_state[name] for name in ITEM_ARRAYS}
        return deltas, model.history_[-1]

    def users(self) -> dict[str, Float32Array]:
        """The shard's user rows (:data:`USER_ARRAYS`)."""
        return {name: getattr(self.model, name) for name in USER_ARRAYS}


def shard_bounds(indptr: NDArray[np.integer[Any]], n_shards: int) -> Int64Array:
    """Row bounds of ``n_shards`` contiguous blocks of users with about the same number of
    positives each (every block non-empty when there are enough users)."""
    n_users = indptr.size - 1
    n_shards = max(1, min(n_shards, n_users))
    targets = indptr[-1] * np.arange(1, n_shards) / n_shards
    cuts = np.searchsorted(indptr, targets, side="left")
    bounds = np.concatenate([[0], cuts, [n_users]]).astype(np.int64)
    return np.maximum.accumulate(bounds)


def fit_on_client(model: WARPFactorizer, client: Client, *, epochs: int, combine: str,
                  callback: Callback | None = None) -> WARPFactorizer:
    """Train ``model`` (a ``WARPFactorizer`` fitted for zero epochs on the whole data:
    its state allocated, its learning rate, decay and order resolved) for ``epochs``
    epochs on the workers of ``client``; returns ``model`` with the trained state."""
    # the actors' handles talk through the current client: make it this one, whatever
    # other clients the process has
    with client.as_current():
        return _fit_on_client(model, client, epochs=epochs, combine=combine,
                              callback=callback)


def _fit_on_client(model: WARPFactorizer, client: Client, *, epochs: int, combine: str,
                   callback: Callback | None) -> WARPFactorizer:
    """:func:`fit_on_client` with ``client`` current."""
    worker_info = client.scheduler_info()["workers"]
    workers = sorted(worker_info)
    if not workers:
        raise RuntimeError("The Dask cluster has no workers; start some (or pass a client "
                           "of a cluster that has them).")
    matrix = model.train_matrix_
    indptr = matrix.indptr.astype(np.int64)
    bounds = shard_bounds(indptr, len(workers))
    params = model.get_params()
    params.update(learning_rate=model.learning_rate_, alpha=model.alpha_,
                  sample_order=model.sample_order_, early_stopping=False, verbose=False,
                  n_items=matrix.shape[1])
    seeds = np.random.default_rng([model.seed_, 7]).integers(0, 2**31 - 1, len(bounds) - 1)
    actors = []
    for shard, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        if model.n_threads is None:  # the worker's threads
            params["n_threads"] = int(worker_info[workers[shard]].get("nthreads", 1))
        user_state = {name: getattr(model, name)[lo:hi] for name in USER_ARRAYS}
        shard_indptr = indptr[lo:hi + 1] - indptr[lo]
        shard_indices = matrix.indices[indptr[lo]:indptr[hi]]
        # (actor=True: the result is an Actor, a proxy whose method calls return futures,
        # not the ShardTrainer of submit's annotation)
        future: Future[Any] = client.submit(
            ShardTrainer, dict(params), shard_indptr, shard_indices, user_state,
            int(seeds[shard]), actor=True, workers=[workers[shard]],
            allow_other_workers=False, pure=False)
        with _failures("starting the shard trainers", 0):
            actors.append(future.result())
    item_bytes = sum(getattr(model, name).nbytes for name in ITEM_ARRAYS)
    for _ in range(epochs):
        epoch = model.epochs_done_
        tic = time.perf_counter()
        item_state = {name: getattr(model, name) for name in ITEM_ARRAYS}
        with _failures("training", epoch):
            pending = [actor.epoch(item_state) for actor in actors]
            results = _wait(pending, client, workers[:len(actors)])
        for name in ITEM_ARRAYS:
            total = np.sum([deltas[name] for deltas, _ in results], axis=0)
            if combine == "mean":
                total /= len(results)
            getattr(model, name)[...] += total
        if loss_spec(model.loss).sphere:   # a mean of unit rows is shorter: re-normalise
            unit_rows(model.item_factors_)
        if not finite(model.user_factors_, model.item_factors_, model.item_biases_):
            raise RuntimeError(f"Distributed training diverged in epoch {epoch}: the combined "
                               "item state is not finite. Lower learning_rate"
                               + (" or use combine='mean'." if combine == "sum" else "."))
        info = _combine_info(epoch, time.perf_counter() - tic, [r[1] for r in results])
        info["bytes_shipped"] = 2 * len(actors) * item_bytes
        record_epoch(model, info)
        log.debug("distributed epoch %d: %s", epoch, info)
        if callback is not None and callback(model, info) is False:
            break
    for actor, lo, hi in zip(actors, bounds[:-1], bounds[1:]):
        with _failures("collecting the user rows", model.epochs_done_):
            rows = actor.users().result()
        for name in USER_ARRAYS:
            getattr(model, name)[lo:hi] = rows[name]
    return model


def _combine_info(epoch: int, seconds: float, infos: Sequence[dict[str, Any]],
                  ) -> dict[str, Any]:
    """One history entry from the shards' entries: sums of counts, means of rates
    weighted by the shards' samples."""
    info = dict(epoch=epoch, seconds=seconds, workers=len(infos))
    weights = np.array([max(i.get("samples", 1), 1) for i in infos], dtype=np.float64)
    for key, value in infos[0].items():
        if key in ("epoch", "seconds") or not isinstance(value, (int, float)):
            continue
        values = np.array([i[key] for i in infos], dtype=np.float64)
        if isinstance(value, int):
            info[key] = int(values.sum())
        else:
            info[key] = float(values @ weights / weights.sum())
    return info


def _wait(pending: Sequence[BaseActorFuture[_R]], client: Client,
          addresses: Sequence[str]) -> list[_R]:
    """The results of the actor calls ``pending`` (on the workers ``addresses``), checking
    every ``WAIT_POLL_SECONDS`` while waiting that those workers are still in the cluster:
    a call on a worker that died after it was sent would otherwise wait for ever."""
    results: dict[int, _R] = {}
    waiting = set(range(len(pending)))
    checked = time.monotonic()
    while waiting:
        for k in [k for k in waiting if pending[k].done()]:
            results[k] = pending[k].result()
            waiting.discard(k)
        if waiting and time.monotonic() - checked >= WAIT_POLL_SECONDS:
            # asked of the scheduler itself: the client's cached view of the workers lags
            # (a worker closing gracefully is still listed but runs nothing more)
            alive = client.run_on_scheduler(lambda dask_scheduler: [
                address for address, worker in dask_scheduler.workers.items()
                if worker.status.name in ("running", "paused")])
            lost = [addresses[k] for k in sorted(waiting) if addresses[k] not in alive]
            if lost:
                raise RuntimeError(f"worker(s) {', '.join(lost)} left the cluster")
            checked = time.monotonic()
        elif waiting:
            time.sleep(0.002)
    return [results[k] for k in range(len(pending))]


@contextlib.contextmanager
def _failures(what: str, epoch: int) -> Iterator[None]:
    """Turn a lost worker or a failed task into an error that says no model is returned."""
    try:
        yield
    except Exception as exc:  # a lost worker, a restarted cluster, a failed task
        raise RuntimeError(f"Distributed training failed while {what} (epoch {epoch}): "
                           f"{type(exc).__name__}: {exc}. No model is returned: a shard's "
                           "state was lost or not updated; run warprec.dask.fit again.") from exc


def fit(interactions: InteractionData | dd.DataFrame | str | os.PathLike[str],
        client: Client | None = None, *, combine: str = "mean",
        callback: Callback | None = None, **params: Any) -> WARPFactorizer:
    """Train a :class:`~warprec.WARPFactorizer` on the workers of a Dask cluster.

    The users are split into one shard per worker (contiguous blocks with about the same
    number of positives); each worker trains its shard with warprec's epoch kernel, and
    after every epoch the driver combines the workers' changes of the item side (see
    docs/scaling.md for the scheme, what it ships and how it compares with one machine).

    Parameters
    ----------
    interactions : DataFrame, dask DataFrame, str, scipy.sparse matrix or Interactions
        The positives, as :meth:`WARPFactorizer.fit` takes them; a dask DataFrame or a
        path to Parquet (``user_id``, ``item_id`` columns) is read into the driver, which
        builds the id maps and the shards.
    client : distributed.Client, optional
        The cluster to train on; by default the current client, else a
        ``LocalCluster`` with one single-threaded worker process per core, closed after.
    combine : {"mean", "sum"}, default "mean"
        How the workers' changes of the item state are combined: averaged, or added (as
        if each worker's updates were applied one after another). With two workers the
        mean kept the single-machine quality on ML-100K and synthetic-5m and the sum lost
        1.5-2% (benchmarks/dask_fit.py); with more workers the sum overshoots more.
    callback : callable, optional
        ``callback(model, info)`` after every epoch on the driver (``info`` holds the
        epoch's statistics, ``seconds`` and ``bytes_shipped``); returning False stops.
    **params
        ``WARPFactorizer`` parameters. ``n_threads`` is the threads per worker (default:
        the worker's). Early stopping and side features are not available
        (``early_stopping="auto"``, the default, trains for ``epochs``).

    Returns
    -------
    WARPFactorizer
        Fitted: it recommends, evaluates and saves like a model fit on one machine.
        ``history_`` has one entry per epoch, with ``workers`` and ``bytes_shipped``.

    Raises
    ------
    RuntimeError
        If a worker is lost or a shard's epoch fails: no model is returned.
    """
    from .model import WARPFactorizer

    if combine not in COMBINE:
        raise ValueError(f"combine must be one of {COMBINE}, got {combine!r}.")
    for name, used in (("early_stopping", params.get("early_stopping", False)
                        not in (False, "auto")),
                       ("validation_data", params.get("validation_data") is not None),
                       ("learning_rate_drop", params.get("learning_rate_drop", "auto")
                        not in ("auto", 1))):
        if used:
            raise ValueError(f"{name} is not available in distributed training; fit "
                             "without it, or use warprec.tune on a sample to choose epochs.")
    # (early_stopping="auto", the default, trains without early stopping here)
    model = WARPFactorizer(**dict(params, early_stopping=False))
    epochs = resolve_epochs(model.epochs, early_stopping=False)
    model.set_params(epochs=0)
    model.fit(_local(interactions))  # id maps, state, learning rate, decay and order
    model.set_params(epochs=epochs)
    own = None
    if client is None:
        client, own = _default_client()
    try:
        fit_on_client(model, client, epochs=epochs, combine=combine, callback=callback)
    finally:
        if own is not None:
            client.close()
            own.close()
    return model


def _local(interactions: InteractionData | dd.DataFrame | str | os.PathLike[str],
           ) -> InteractionData:
    """A dask DataFrame or Parquet path as a pandas DataFrame; anything else as given."""
    if isinstance(interactions, (str, os.PathLike)):   # (os.PathLike: has __fspath__)
        import pandas as pd

        return pd.read_parquet(interactions)
    import dask.dataframe as dd

    if isinstance(interactions, dd.DataFrame):
        return interactions.compute()
    return interactions


def local_cluster(n_workers: int) -> LocalCluster:
    """A Dask ``LocalCluster`` of ``n_workers`` worker processes with one thread each (the
    shape distributed training is measured on: one kernel thread per shard)."""
    from distributed import LocalCluster

    return LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                        dashboard_address=None)


def _default_client() -> tuple[Client, LocalCluster | None]:

    """The current Dask client, or a new local cluster (returned to be closed)."""
    from distributed import Client, get_client

    try:
        return get_client(), None
    except ValueError:
        pass
    cluster = local_cluster(os.cpu_count() or 1)
    log.info("warprec.dask.fit: started a local cluster of %d workers",
             len(cluster.workers))
    return Client(cluster), cluster
