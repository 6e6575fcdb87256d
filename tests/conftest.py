"""Shared test fixtures: paths to the shared MovieLens data (tests skip without it)."""

import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS))  # so tests can `import naive`

SHARED_DATA = TESTS.parents[1] / "shared" / "data"
ML100K_SPLIT = SHARED_DATA / "ml-100k-split"


@pytest.fixture(scope="session")
def ml100k_split():
    """(train, test) DataFrames of the fixed ML-100K benchmark split, or skip."""
    if not (ML100K_SPLIT / "train.csv").exists():
        pytest.skip(f"shared MovieLens split not found at {ML100K_SPLIT}")
    import pandas as pd
    return pd.read_csv(ML100K_SPLIT / "train.csv"), pd.read_csv(ML100K_SPLIT / "test.csv")
