"""warprec.data.read_interaction_lists: the LightGCN / KGAT 'user item item ...' layout."""

import gzip
from pathlib import Path

import pytest

from warprec.data import read_interaction_lists

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "amazon-book-kgat"


def test_reads_lines(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("0 5 6 7\n1 5\n\n2\n3 9 9\n")
    df = read_interaction_lists(path)
    assert df["user_id"].tolist() == [0, 0, 0, 1, 3, 3]
    assert df["item_id"].tolist() == [5, 6, 7, 5, 9, 9]
    assert str(df["user_id"].dtype) == "int64"


def test_compressed(tmp_path):
    path = tmp_path / "train.txt.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("4 1 2\n")
    assert read_interaction_lists(path)["item_id"].tolist() == [1, 2]


@pytest.mark.parametrize("text, match", [("0 1 x\n", "line 1"), ("0 1\n1 -2\n", "line 2"),
                                         ("\n\n", "no 'user item")])
def test_bad_files(tmp_path, text, match):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(ValueError, match=match):
        read_interaction_lists(path)


@pytest.mark.skipif(not (SHARED / "test.txt").exists(), reason="amazon-book-kgat not present")
def test_amazon_book_test_file():
    df = read_interaction_lists(SHARED / "test.txt")
    assert len(df) == 193_920 and df["user_id"].nunique() == 70_591
