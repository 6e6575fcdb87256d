"""Regenerate the synthetic demo data shipped in the package (``ratings.csv`` and
``movies.csv`` in ``warprec/demo_data/``).

Usage (from the repository root)::

    python data/make_synthetic.py            # (re)write warprec/demo_data/*.csv
    python data/make_synthetic.py --check    # exit 1 if the files differ from a fresh run
    python data/make_synthetic.py --out DIR  # write somewhere else

The output is bit-for-bit reproducible: everything comes from
:func:`warprec.datasets.make_ratings` with a fixed seed, plus a second fixed-seed
generator for the film years. No MovieLens data is used.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

try:
    from warprec.datasets import make_ratings
except ImportError:  # run from a checkout without installing warprec
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from warprec.datasets import make_ratings

#: Where the package keeps its demo data (found at run time with importlib.resources).
OUT = Path(__file__).resolve().parents[1] / "warprec" / "demo_data"

#: The MovieLens genre names; taste dimension ``k`` is genre ``GENRES[k]``.
GENRES = ("Action", "Adventure", "Animation", "Children", "Comedy", "Crime",
          "Documentary", "Drama", "Fantasy", "Film-Noir", "Horror", "Musical",
          "Mystery", "Romance", "Sci-Fi", "Thriller", "War", "Western")

#: Arguments of :func:`warprec.datasets.make_ratings` for the demo data.
PARAMS = {
    "n_users": 1500,
    "n_items": 1500,
    "n_ratings": 100_000,
    "rank": len(GENRES),
    "min_per_user": 20,
    "half_stars": True,
    "random_state": 20240607,
}
YEAR_SEED = 1994


def build() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Return ``(ratings, movies)`` exactly as they are written to disk.

    ``ratings`` has the ML ``ratings.csv`` columns ``userId,movieId,rating,timestamp``;
    ``movies`` has ``movieId,title,genres`` with made-up titles and the genres of each
    film's planted taste cluster (``|``-separated, like MovieLens).
    """
    df, truth = make_ratings(**PARAMS, return_truth=True)
    ratings = df.rename(columns={"user_id": "userId", "item_id": "movieId"})
    n_items = PARAMS["n_items"]
    years = np.random.default_rng(YEAR_SEED).integers(1950, 2016, size=n_items)
    item_genres = truth.item_genres
    genres = ["|".join(GENRES[k] for k in np.flatnonzero(row)) for row in item_genres]
    movies = pd.DataFrame({
        "movieId": np.arange(1, n_items + 1),
        "title": [f"Synthetic Film {i:04d} ({y})" for i, y in
                  zip(range(1, n_items + 1), years)],
        "genres": genres,
    })
    return ratings, movies


def render() -> dict[str, bytes]:
    """File name -> exact file content."""
    ratings, movies = build()
    return {
        "ratings.csv": ratings.to_csv(index=False, lineterminator="\n").encode("utf-8"),
        "movies.csv": movies.to_csv(index=False, lineterminator="\n").encode("utf-8"),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT,
                        help="output directory (default: warprec/demo_data/)")
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 if the files are missing or differ")
    args = parser.parse_args(argv)
    files = render()
    if args.check:
        stale = [name for name, content in files.items()
                 if not (args.out / name).exists()
                 or (args.out / name).read_bytes() != content]
        for name in stale:
            print(f"{args.out / name} is missing or out of date", file=sys.stderr)
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (args.out / name).write_bytes(content)
        print(f"wrote {args.out / name} ({len(content):,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
