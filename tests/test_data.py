"""Tests of warprec.data: reading, id maps, positives, duplicates and splits."""

from __future__ import annotations

import gzip
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from warprec.data import (
    Interactions,
    deduplicate,
    load_frame,
    positives,
    read_item_titles,
    read_ratings,
    split_leave_k_out,
    split_random,
    split_temporal,
    standardize_frame,
)
from warprec.exceptions import WarprecWarning

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
REPO = Path(__file__).resolve().parents[1]


def shared(relative: str) -> Path:
    path = SHARED / relative
    if not path.exists():
        pytest.skip(f"shared MovieLens data not available ({path})")
    return path


def write(tmp_path: Path, name: str, text: str, encoding: str = "utf-8") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode(encoding))
    return path


@pytest.fixture
def frame():
    return pd.DataFrame({
        "user_id": [1, 1, 1, 2, 2, 3],
        "item_id": [10, 20, 30, 10, 40, 20],
        "rating": [5.0, 3.0, 4.0, 4.5, 1.0, 2.0],
        "timestamp": [100, 300, 200, 50, 60, 70],
    })


# --------------------------------------------------------------------------------------
# read_ratings: formats
# --------------------------------------------------------------------------------------
def test_read_udata_layout(tmp_path):
    path = write(tmp_path, "u.data", "196\t242\t3\t881250949\n186\t302\t3\t891717742\n")
    df = read_ratings(path)
    assert list(df.columns) == ["user_id", "item_id", "rating", "timestamp"]
    assert df["user_id"].tolist() == [196, 186]
    assert df["item_id"].dtype == np.int64
    assert df["timestamp"].tolist() == [881250949, 891717742]
    assert read_ratings(path, format="ml-100k").equals(df)


def test_read_dat_layout(tmp_path):
    path = write(tmp_path, "ratings.dat", "1::1193::5::978300760\n1::661::3::978302109\n")
    df = read_ratings(path)
    assert df["item_id"].tolist() == [1193, 661]
    assert df["rating"].tolist() == [5, 3]
    assert read_ratings(path, format="ml-1m").equals(df)
    assert read_ratings(path, sep="::").equals(df)


def test_read_dat_with_header_and_colons_in_fields(tmp_path):
    path = write(tmp_path, "r.dat", "UserID::MovieID::Rating\na:b::7::4\nc::8::5\n")
    df = read_ratings(path)
    assert df["user_id"].tolist() == ["a:b", "c"]
    assert df["rating"].tolist() == [4, 5]


def test_read_ml_latest_csv(tmp_path):
    path = write(tmp_path, "ratings.csv",
                 "userId,movieId,rating,timestamp\n1,1,4.0,964982703\n1,3,3.5,964981247\n")
    df = read_ratings(path)
    assert df["rating"].tolist() == [4.0, 3.5]
    assert df["user_id"].dtype == np.int64
    assert read_ratings(path, format="ml-latest").equals(df)


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_column_names_detected_case_insensitively(tmp_path, sep):
    text = sep.join(["UID", "Movie_ID", "Score", "TS", "extra"]) + "\n" + \
        sep.join(["u1", "m9", "2.5", "7", "x"]) + "\n"
    df = read_ratings(write(tmp_path, "x.txt", text))
    assert list(df.columns) == ["user_id", "item_id", "rating", "timestamp"]
    assert df.iloc[0].tolist() == ["u1", "m9", 2.5, 7]


def test_string_ids_stay_strings(tmp_path):
    df = read_ratings(write(tmp_path, "s.csv", "user,item\nalice,x1\nbob,x2\n"))
    assert df["user_id"].tolist() == ["alice", "bob"]
    assert list(df.columns) == ["user_id", "item_id"]


def test_explicit_columns(tmp_path):
    path = write(tmp_path, "e.csv", "who,what,stars,when\n1,2,3,4\n")
    df = read_ratings(path, user_col="who", item_col="WHAT", rating_col="stars",
                      timestamp_col="when")
    assert df.iloc[0].tolist() == [1, 2, 3, 4]
    df = read_ratings(path, user_col=0, item_col=1, rating_col=False, timestamp_col=False)
    assert list(df.columns) == ["user_id", "item_id"]


def test_headerless_positional_columns(tmp_path):
    path = write(tmp_path, "h.csv", "5,x,1,2,3\n6,y,1,2,3\n")
    with pytest.raises(KeyError, match="user_col=0"):
        read_ratings(path)
    df = read_ratings(path, user_col=1, item_col=0, rating_col=4)
    assert df.iloc[1].tolist() == ["y", 6, 3]


def test_gzip(tmp_path):
    path = tmp_path / "r.csv.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("userId,movieId,rating\n1,2,3.0\n")
    assert read_ratings(path).iloc[0].tolist() == [1, 2, 3.0]


def test_dataframe_input(frame):
    raw = frame.rename(columns={"user_id": "userId", "item_id": "movieId"})
    before = raw.copy()
    for fn in (read_ratings, standardize_frame, load_frame):
        out = fn(raw)
        assert out.equals(frame)
    assert raw.equals(before)


def test_integral_float_ids_become_int():
    df = standardize_frame(pd.DataFrame({"user": [1.0, 2.0], "item": [3.0, 4.0]}))
    assert df["user_id"].dtype == np.int64


# --------------------------------------------------------------------------------------
# read_ratings: errors
# --------------------------------------------------------------------------------------
def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        read_ratings(tmp_path / "nope.csv")


def test_directory(tmp_path):
    write(tmp_path, "u.data", "1\t2\t3\t4\n")
    with pytest.raises(ValueError, match="directory.*u.data"):
        read_ratings(tmp_path)


def test_binary_file(tmp_path):
    path = tmp_path / "x.npz"
    path.write_bytes(b"PK\x03\x04\x00\x00binary\x00\xff")
    with pytest.raises(ValueError, match=r"x\.npz.*binary"):
        read_ratings(path)


def test_non_utf8_file_suggests_encoding(tmp_path):
    path = write(tmp_path, "l.csv", "user,item\nJosé,1\n", encoding="latin-1")
    with pytest.raises(ValueError, match=r"l\.csv.*encoding='latin-1'"):
        read_ratings(path)
    assert read_ratings(path, encoding="latin-1")["user_id"].tolist() == ["José"]


def test_empty_file(tmp_path):
    with pytest.raises(ValueError, match="empty"):
        read_ratings(write(tmp_path, "e.csv", "\n\n"))


def test_wrong_columns_message(tmp_path):
    path = write(tmp_path, "w.csv", "a,b,c\n1,2,3\n")
    with pytest.raises(KeyError, match=r"Columns found: 'a', 'b', 'c'.*user_id, userId.*user_col="):
        read_ratings(path)


def test_ambiguous_columns():
    df = pd.DataFrame({"user_id": [1], "USER_ID": [2], "item": [3]})
    with pytest.raises(KeyError, match="user_col="):
        standardize_frame(df)


def test_unknown_explicit_column(tmp_path):
    path = write(tmp_path, "w.csv", "user,item\n1,2\n")
    with pytest.raises(KeyError, match=r"user_col='nobody'.*'user', 'item'"):
        read_ratings(path, user_col="nobody")


def test_non_numeric_rating(tmp_path):
    path = write(tmp_path, "r.csv", "user,item,rating\n1,2,4\n1,3,good\n")
    with pytest.raises(ValueError, match=r"non-numeric.*'good'.*data lines 3"):
        read_ratings(path)


def test_truncated_rows(tmp_path):
    path = write(tmp_path, "u.data", "1\t2\t3\t4\n1\t3\t5\t6\n2\t7\n")
    with pytest.raises(ValueError, match=r"1 rows have no rating.*data lines 3.*truncated"):
        read_ratings(path)
    path = write(tmp_path, "t.csv", "user,item\n1,2\n3\n4\n")
    with pytest.raises(ValueError, match=r"2 rows have no item id.*dropna"):
        read_ratings(path)


def test_extra_fields(tmp_path):
    path = write(tmp_path, "x.csv", "user,item\n1,2\n1,2,3,4\n")
    with pytest.raises(ValueError, match=r"x\.csv.*number of fields"):
        read_ratings(path)


def test_nan_ids_in_frame():
    df = pd.DataFrame({"user_id": [1, None, None], "item_id": [1, 2, 3]})
    with pytest.raises(ValueError, match=r"2 rows have no user id.*row positions 1, 2.*dropna"):
        standardize_frame(df)


def test_mixed_type_ids_raise():
    df = pd.DataFrame({"user_id": pd.Series([1, "a", 2], dtype=object), "item_id": [1, 2, 3]})
    with pytest.raises(TypeError, match=r"mixes integers and strings.*astype\(str\)"):
        standardize_frame(df)
    with pytest.raises(TypeError, match="mixes integers and strings"):
        Interactions.from_frame(df)


def test_unknown_format(tmp_path):
    with pytest.raises(ValueError, match="ml-100k"):
        read_ratings(write(tmp_path, "a.csv", "user,item\n1,2\n"), format="xlsx")


# --------------------------------------------------------------------------------------
# titles
# --------------------------------------------------------------------------------------
def test_titles_csv(tmp_path):
    path = write(tmp_path, "movies.csv", 'movieId,title,genres\n1,"Toy, Story (1995)",A|B\n'
                                         "2,Jumanji (1995),C\n")
    titles = read_item_titles(path)
    assert titles.index.name == "item_id" and titles.name == "title"
    assert titles.loc[1] == "Toy, Story (1995)"


def test_titles_uitem_latin1(tmp_path):
    path = write(tmp_path, "u.item", "1|Toy Story (1995)|01-Jan-1995||url|0|1\n"
                                     "2|Café (1996)|01-Jan-1996||url|0|1\n", encoding="latin-1")
    titles = read_item_titles(path)
    assert titles.loc[2] == "Café (1996)"
    assert titles.index.dtype == np.int64


def test_titles_dat_with_colons(tmp_path):
    path = write(tmp_path, "movies.dat", "1::Star Wars: Episode IV (1977)::Sci-Fi\n"
                                         "2::Heat (1995)::Action\n")
    assert read_item_titles(path).loc[1] == "Star Wars: Episode IV (1977)"


def test_titles_missing(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_item_titles(tmp_path / "movies.csv")
    with pytest.raises(KeyError, match="title"):
        read_item_titles(write(tmp_path, "m.csv", "movieId,name2\n1,x\n"))


# --------------------------------------------------------------------------------------
# positives and duplicates
# --------------------------------------------------------------------------------------
def test_positives(frame):
    before = frame.copy()
    out = positives(frame, min_rating=4)
    assert out["rating"].tolist() == [5.0, 4.0, 4.5]
    assert out.index.equals(pd.RangeIndex(3))
    assert len(positives(frame)) == len(frame)
    assert frame.equals(before)


def test_positives_without_rating(frame):
    with pytest.raises(KeyError, match="rating"):
        positives(frame.drop(columns="rating"), min_rating=4)
    assert len(positives(frame.drop(columns="rating"))) == len(frame)


@pytest.fixture
def dups():
    return pd.DataFrame({
        "user_id": [1, 1, 2, 1, 2],
        "item_id": [5, 5, 6, 5, 7],
        "rating": [3.0, 5.0, 1.0, 4.0, 2.0],
        "timestamp": [30, 10, 5, 20, 1],
    })


@pytest.mark.parametrize("how, rating, ts", [
    ("last", 3.0, 30),   # latest timestamp
    ("first", 5.0, 10),  # earliest timestamp
    ("max", 5.0, 10),
    ("sum", 12.0, 30),
])
def test_deduplicate(dups, how, rating, ts):
    before = dups.copy()
    out = deduplicate(dups, how=how)
    assert len(out) == 3
    row = out[(out.user_id == 1) & (out.item_id == 5)].iloc[0]
    assert (row["rating"], row["timestamp"]) == (rating, ts)
    assert dups.equals(before)


def test_deduplicate_without_timestamp_uses_row_order(dups):
    df = dups.drop(columns="timestamp")
    last = deduplicate(df)
    assert last.rating.tolist() == [1.0, 4.0, 2.0]       # last row of the pair, in place
    first = deduplicate(df, how="first")
    assert first.rating.tolist() == [3.0, 1.0, 2.0]


def test_deduplicate_errors(dups):
    with pytest.raises(ValueError, match=r"1 \(user, item\) pairs occur more than once "
                                         r"\(3 rows\), e.g. \(1, 5\)\. "):
        deduplicate(dups, how="error")
    assert len(deduplicate(dups.iloc[2:], how="error")) == 3
    with pytest.raises(KeyError, match="rating"):
        deduplicate(dups.drop(columns="rating"), how="sum")
    with pytest.raises(ValueError, match="how="):
        deduplicate(dups, how="mean")


# --------------------------------------------------------------------------------------
# Interactions
# --------------------------------------------------------------------------------------
def test_interactions_from_frame(frame):
    X = Interactions.from_frame(frame.iloc[::-1])
    assert X.shape == (3, 4) and X.n_users == 3 and X.n_items == 4 and X.nnz == 6
    assert X.user_ids.tolist() == [1, 2, 3] and X.item_ids.tolist() == [10, 20, 30, 40]
    assert X.user_ids.dtype == np.int64
    assert isinstance(X.matrix, sp.csr_matrix) and X.matrix.dtype == np.float32
    assert X.matrix.has_sorted_indices
    assert X.matrix[X.user_index(2), X.item_index(40)] == 1.0
    assert X.user_index([3, 1]).tolist() == [2, 0]
    assert X.user_index(3).shape == () and X.user_index(3).dtype == np.int64
    assert "n_users=3" in repr(X)


def test_interactions_duplicates_are_summed():
    df = pd.DataFrame({"user_id": ["a", "a", "b"], "item_id": ["x", "x", "y"],
                       "w": [1.5, 2.0, 1.0]})
    X = Interactions.from_frame(df, weight_col="w")
    assert X.nnz == 2 and X.matrix[0, 0] == 3.5
    assert X.user_ids.dtype == object and X.user_ids.tolist() == ["a", "b"]
    assert Interactions.from_frame(df).matrix[0, 0] == 2.0


def test_interactions_bad_weights():
    df = pd.DataFrame({"user_id": [1, 2, 3], "item_id": [1, 2, 3], "w": [1.0, 0.0, np.nan]})
    with pytest.raises(ValueError, match=r"finite and > 0.*2 rows.*row positions 1, 2"):
        Interactions.from_frame(df, weight_col="w")


def test_interactions_missing_columns(frame):
    with pytest.raises(KeyError, match=r"\['who'\].*user_col="):
        Interactions.from_frame(frame, user_col="who")


def test_interactions_given_maps(frame):
    train = Interactions.from_frame(frame[frame.user_id < 3])
    test = pd.DataFrame({"user_id": [1, 2, 9, 9], "item_id": [40, 99, 10, 10]})
    with pytest.raises(KeyError, match=r"ids not in the given maps: user ids 9; item ids 99"):
        Interactions.from_frame(test, user_ids=train.user_ids, item_ids=train.item_ids)
    with pytest.warns(WarprecWarning, match="dropped 3 of 4 rows"):
        X = Interactions.from_frame(test, user_ids=train.user_ids, item_ids=train.item_ids,
                                    unknown="drop")
    assert X.shape == train.shape and X.nnz == 1
    assert X.matrix[train.user_index(1), train.item_index(40)] == 1.0


def test_user_index_unknown(frame):
    X = Interactions.from_frame(frame)
    with pytest.raises(KeyError, match=r"unknown user id\(s\): 7, 8.*not in the data"):
        X.user_index([1, 7, 8])
    with pytest.raises(KeyError, match="unknown item"):
        X.item_index("10")


def test_from_matrix():
    dense = np.array([[0, 2, 0], [1, 0, 0]], dtype=np.float64)
    X = Interactions.from_matrix(dense)
    assert X.nnz == 2 and X.user_ids.tolist() == [0, 1]
    coo = sp.coo_matrix(([1.0, 1.0, 0.0], ([0, 0, 1], [2, 2, 1])), shape=(2, 3))
    Y = Interactions.from_matrix(coo, user_ids=["a", "b"], item_ids=[7, 8, 9])
    assert Y.nnz == 1 and Y.matrix[0, 2] == 2.0        # summed, explicit zero removed
    assert Y.item_index(9) == 2
    with pytest.raises(ValueError, match="finite and >= 0"):
        Interactions.from_matrix(-dense)
    with pytest.raises(ValueError, match="repeated ids"):
        Interactions.from_matrix(dense, user_ids=[1, 1])
    with pytest.raises(ValueError, match="does not match"):
        Interactions.from_matrix(dense, user_ids=[1, 2, 3])


def test_to_frame_round_trip(frame):
    X = Interactions.from_frame(frame, weight_col="rating")
    back = X.to_frame()
    assert list(back.columns) == ["user_id", "item_id", "weight"]
    Y = Interactions.from_frame(back, weight_col="weight")
    assert (X.matrix != Y.matrix).nnz == 0
    assert np.array_equal(X.user_ids, Y.user_ids)


ids_int = st.lists(st.integers(-10**12, 10**12), min_size=1, max_size=30)
ids_str = st.lists(st.text(min_size=0, max_size=6), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(users=st.one_of(ids_int, ids_str), items=st.one_of(ids_int, ids_str),
       data=st.data())
def test_id_maps_round_trip(users, items, data):
    n = data.draw(st.integers(1, 40))
    u = [data.draw(st.sampled_from(users)) for _ in range(n)]
    i = [data.draw(st.sampled_from(items)) for _ in range(n)]
    df = pd.DataFrame({"user_id": pd.Series(u, dtype=object),
                       "item_id": pd.Series(i, dtype=object)})
    X = Interactions.from_frame(df)
    # maps are sorted, unique and invert each other
    assert list(X.user_ids) == sorted(set(u)) and list(X.item_ids) == sorted(set(i))
    rows, cols = X.user_index(u), X.item_index(i)
    assert [X.user_ids[r] for r in rows] == u and [X.item_ids[c] for c in cols] == i
    assert np.array_equal(X.user_index(X.user_ids), np.arange(X.n_users))
    # every event is in the matrix, duplicates summed
    assert X.matrix.sum() == n
    counts = pd.Series(list(zip(rows, cols))).value_counts()
    for (r, c), k in counts.items():
        assert X.matrix[r, c] == k
    back = X.to_frame()
    assert sorted(zip(back.user_id, back.item_id)) == sorted(set(zip(u, i)))


# --------------------------------------------------------------------------------------
# splits
# --------------------------------------------------------------------------------------
@pytest.fixture
def many():
    rng = np.random.default_rng(3)
    n = 2000
    return pd.DataFrame({"user_id": rng.integers(0, 100, n), "item_id": np.arange(n),
                         "rating": rng.integers(1, 6, n), "timestamp": rng.permutation(n)})


def _check_partition(df, train, test):
    assert len(train) + len(test) == len(df)
    both = pd.concat([train, test]).sort_values("item_id").reset_index(drop=True)
    assert both.equals(df.sort_values("item_id").reset_index(drop=True))
    assert train.index.equals(pd.RangeIndex(len(train)))


def test_split_random(many):
    before = many.copy()
    state = np.random.get_state()[1].copy()
    train, test = split_random(many, test_fraction=0.25, random_state=7)
    assert np.array_equal(np.random.get_state()[1], state)   # global RNG untouched
    assert many.equals(before)
    _check_partition(many, train, test)
    n_u = many.user_id.value_counts()
    t_u = test.user_id.value_counts().reindex(n_u.index, fill_value=0)
    assert (t_u == np.floor(0.25 * n_u)).all()
    again = split_random(many, test_fraction=0.25, random_state=7)
    assert again[1].equals(test)
    assert not split_random(many, 0.25, random_state=8)[1].equals(test)
    assert (train.item_id.diff().dropna() > 0).all()          # input order kept


def test_split_random_small_users_stay_in_train():
    df = pd.DataFrame({"user_id": [1, 1, 1, 1, 2, 2, 2, 2, 2],
                       "item_id": range(9)})
    train, test = split_random(df, 0.2)
    assert test.user_id.tolist() == [2] and len(train) == 8
    with pytest.raises(ValueError, match="test_fraction"):
        split_random(df, 1.0)


def test_split_warns_on_duplicates():
    df = pd.DataFrame({"user_id": [1] * 6, "item_id": [1, 1, 2, 3, 4, 5]})
    with pytest.warns(WarprecWarning, match="1 rows repeat.*deduplicate"):
        split_random(df)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        split_random(deduplicate(df))


def test_split_leave_k_out(many):
    train, test = split_leave_k_out(many, k=2, random_state=1)
    _check_partition(many, train, test)
    assert (test.user_id.value_counts() == 2).all()
    assert test.user_id.nunique() == many.user_id.nunique()
    _train_t, test_t = split_leave_k_out(many, k=2, by="time")
    last = many.sort_values("timestamp").groupby("user_id").tail(2)
    assert set(test_t.item_id) == set(last.item_id)
    small = pd.DataFrame({"user_id": [1, 2, 2], "item_id": [1, 2, 3], "timestamp": [1, 2, 3]})
    tr, te = split_leave_k_out(small, k=1, by="time")
    assert te.item_id.tolist() == [3] and tr.user_id.tolist() == [1, 2]
    with pytest.raises(KeyError, match="timestamp"):
        split_leave_k_out(small.drop(columns="timestamp"), by="time")
    with pytest.raises(ValueError, match="positive integer"):
        split_leave_k_out(small, k=0)


def test_split_temporal(many):
    train, test = split_temporal(many, last_n=3)
    _check_partition(many, train, test)
    assert set(test.item_id) == set(many.sort_values("timestamp").groupby("user_id")
                                    .tail(3).item_id)
    train, test = split_temporal(many, time_cut=1500)
    assert (test.timestamp >= 1500).all() and (train.timestamp < 1500).all()
    _check_partition(many, train, test)
    with pytest.raises(ValueError, match="exactly one"):
        split_temporal(many)
    with pytest.raises(ValueError, match="exactly one"):
        split_temporal(many, last_n=1, time_cut=3)
    with pytest.raises(KeyError, match="timestamp.*split_random"):
        split_temporal(many.drop(columns="timestamp"), last_n=1)


def test_split_requires_columns():
    with pytest.raises(KeyError, match="standardize_frame"):
        split_random(pd.DataFrame({"u": [1], "i": [2]}))


# --------------------------------------------------------------------------------------
# real MovieLens files (skipped when ../shared/data is absent)
# --------------------------------------------------------------------------------------
def test_real_ml100k():
    df = read_ratings(shared("ml-100k/u.data"))
    assert df.shape == (100_000, 4)
    assert df.user_id.nunique() == 943 and df.item_id.nunique() == 1682
    titles = read_item_titles(shared("ml-100k/u.item"))
    assert len(titles) == 1682 and titles.loc[1] == "Toy Story (1995)"
    X = Interactions.from_frame(positives(df, 4))
    assert X.nnz == 55_375


def test_real_ml_latest_small():
    df = read_ratings(shared("ml-latest-small/ratings.csv"))
    assert df.shape == (100_836, 4) and df.rating.dtype == np.float64
    assert df.user_id.nunique() == 610 and df.item_id.nunique() == 9724
    titles = read_item_titles(shared("ml-latest-small/movies.csv"))
    assert titles.loc[1] == "Toy Story (1995)"
    assert titles.index.is_unique


def test_reproduces_shared_split():
    ratings = read_ratings(shared("ml-100k/u.data"))
    ref_train = read_ratings(shared("ml-100k-split/train.csv"))
    ref_test = read_ratings(shared("ml-100k-split/test.csv"))
    assert (len(ref_train), len(ref_test), ref_test.user_id.nunique()) == (44_679, 10_696, 938)
    train, test = split_random(positives(ratings, min_rating=4), test_fraction=0.2,
                               random_state=42)
    assert (len(train), len(test), test.user_id.nunique()) == (44_679, 10_696, 938)
    key = ["user_id", "item_id"]
    for ours, ref in ((train, ref_train), (test, ref_test)):
        assert ours.sort_values(key).reset_index(drop=True).equals(
            ref.sort_values(key).reset_index(drop=True))
