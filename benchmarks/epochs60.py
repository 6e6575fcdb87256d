"""Issue 2's speed bar: seconds for 60 epochs on the ML-100K split, after compilation.

Runs warprec at LightFM's reference settings (lr 0.02, max_sampled 10, d 64) with 1 and 2
threads, alternating, and prints fit and kernel seconds (the first fit compiles and is not
timed). Usage: python benchmarks/epochs60.py [--repeats 2]
"""

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from warprec import WARPFactorizer

SPLIT = Path(__file__).resolve().parents[2] / "shared" / "data" / "ml-100k-split"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    train = pd.read_csv(SPLIT / "train.csv")
    WARPFactorizer(epochs=1).fit(train)  # compile (or load the cache) outside the timing
    for _ in range(args.repeats):
        for threads in (1, 2):
            model = WARPFactorizer(epochs=60, n_threads=threads, learning_rate=0.02)
            tic = time.perf_counter()
            model.fit(train)
            seconds = time.perf_counter() - tic
            kernel = sum(h["seconds"] for h in model.history_)
            sys.stdout.write(f"{threads} thread(s): 60 epochs in {seconds:.2f} s "
                             f"(kernel {kernel:.2f} s)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
