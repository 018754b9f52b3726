"""Property-based tests of the parsers (Hypothesis): real rows, randomly corrupted.

A small sample of the real files (the first Philly rows, three Gavel job types on one device)
is corrupted at random: a cell or value replaced, bytes cut, dropped or inserted. The parser
must answer with a DataError or with a correct table, never with another exception. Where the
corruption is one replaced value, "correct" is exact: the table holds that value as Python
reads it; elsewhere the table must keep the contracts (finite positive numbers, whole GPUs,
normalized throughputs at most datasets.MAX_NORM).
"""

import csv
import io
import json
import math
import tempfile
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings, strategies as st

from coloc import datasets
from coloc.datasets import DataError

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])
PHILLY_ROWS = 20
GAVEL_TYPES = ["('ResNet-18 (batch size 16)', 1)", "('LM (batch size 5)', 1)", "('A3C', 1)"]
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


@pytest.fixture(scope="module")
def philly_text(mirror) -> str:
    with open(mirror / "philly" / "philly.csv") as fh:
        return "".join(next(fh) for _ in range(PHILLY_ROWS + 1))


@pytest.fixture(scope="module")
def gavel_sample(mirror) -> dict:
    device = json.loads((mirror / "gavel" / "simulation_throughputs.json").read_text())["k80"]
    return {"k80": {a: {b: v for b, v in device[a].items() if b in ("null", *GAVEL_TYPES)} for a in GAVEL_TYPES}}


def parsed(suffix: str, data: bytes, parse):
    """``parse(path)`` of ``data`` written to a file: the result, or None after a DataError."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"sample{suffix}"
        path.write_bytes(data)
        try:
            result = parse(path)
        except DataError as err:
            assert str(path) in str(err)  # the error names the file
            event("refused (DataError)")
            return None
        event("accepted")
        return result


# ---------------------------------------------------------------------------- corruptions

cell_text = st.one_of(
    st.text(st.characters(blacklist_characters=',"\r\n', blacklist_categories=["Cs"]), max_size=12),
    st.floats().map(repr), st.integers(-10**30, 10**30).map(str),
    st.sampled_from(["", " ", "NaN", "nan", "inf", "-inf", "Infinity", "1e400", "0", "-1", "1.5", "2.0", " 3 ",
                     "1_000", "0x10", "2017-10-09 07:01:55", "2017-02-30 00:00:00", "None", "null", "NA"]),
)


@st.composite
def byte_corruption(draw, data: bytes) -> bytes:
    """``data`` cut short, or with a byte span dropped, or random bytes inserted, or a line repeated."""
    at = draw(st.integers(0, len(data)))
    kind = draw(st.sampled_from(["cut", "drop", "insert", "repeat line"]))
    if kind == "cut":
        return data[:at]
    if kind == "drop":
        return data[:at] + data[at + draw(st.integers(1, 8)):]
    if kind == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=8) | st.sampled_from([b",", b"\n", b'"', b"\x00"])) + data[at:]
    lines = data.splitlines(keepends=True)
    i = at % len(lines)
    return b"".join(lines[:i + 1] + lines[i:])


# ---------------------------------------------------------------------------- Philly

def load_philly(path):
    return datasets.load_philly(path, ["w"])


def philly_reference(text: str) -> list[tuple] | None:
    """The rows as Python reads them (submit time, duration, GPUs, cluster), or None if a value is invalid."""
    rows = list(csv.DictReader(io.StringIO(text)))
    try:
        stamps = [datetime.strptime(r["timestamp"], TIME_FORMAT) for r in rows]
        durations, gpus, gpu_time = ([float(r[c]) for r in rows] for c in ("duration", "num_gpus", "gpu_time"))
    except ValueError:
        return None
    numbers_ok = all(math.isfinite(x) and x > 0 for x in [*durations, *gpus, *gpu_time])
    if not numbers_ok or not all(g.is_integer() and g <= datasets.MAX_GPUS for g in gpus):
        return None
    if not all(r["cluster"].strip() for r in rows):
        return None
    first = min(stamps)
    return sorted(((s - first).total_seconds(), d, int(g), r["cluster"])
                  for s, d, g, r in zip(stamps, durations, gpus, rows, strict=True))


def assert_trace_contract(trace):
    assert list(trace.columns) == ["job_id", "submit_time", "duration", "num_gpus", "workload", "cluster"]
    assert len(trace) > 0 and trace["job_id"].tolist() == list(range(len(trace)))
    assert np.isfinite(trace["submit_time"]).all() and (trace["submit_time"] >= 0).all()
    assert trace["submit_time"].is_monotonic_increasing and trace["submit_time"].iloc[0] == 0
    assert np.isfinite(trace["duration"]).all() and (trace["duration"] > 0).all()
    assert trace["num_gpus"].dtype.kind == "i" and (trace["num_gpus"] >= 1).all()
    assert all(isinstance(c, str) and c.strip() for c in trace["cluster"])


@SETTINGS
@given(data=st.data())
def test_philly_one_cell_replaced_gives_data_error_or_that_value(philly_text, data):
    lines = philly_text.splitlines(keepends=True)
    header = lines[0].rstrip("\n").split(",")
    row = data.draw(st.integers(1, len(lines) - 1), label="row")
    column = data.draw(st.integers(0, len(header) - 1), label="column")
    cells = lines[row].rstrip("\n").split(",")
    cells[column] = data.draw(cell_text, label="new cell")
    lines[row] = ",".join(cells) + "\n"
    text = "".join(lines)
    trace = parsed(".csv", text.encode(), load_philly)
    expected = philly_reference(text)
    if trace is None:
        return
    assert expected is not None, f"accepted {cells[column]!r} in column {header[column]!r}"
    got = sorted(zip(trace["submit_time"], trace["duration"], trace["num_gpus"], trace["cluster"], strict=True))
    assert got == expected
    assert_trace_contract(trace)


@SETTINGS
@given(data=st.data())
def test_philly_bytes_corrupted_give_data_error_or_a_valid_trace(philly_text, data):
    corrupted = data.draw(byte_corruption(philly_text.encode()), label="bytes")
    trace = parsed(".csv", corrupted, load_philly)
    if trace is not None:
        assert_trace_contract(trace)


# ---------------------------------------------------------------------------- Gavel

def load_gavel(path):
    return datasets.load_gavel(path, devices=["k80"])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**25, 10**25) | st.floats() | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
throughputs = st.floats(0, 50) | st.integers(0, 50) | st.floats() | st.integers(0, 10**400) | json_values


def assert_gavel_contract(tables):
    solo, pairs = tables
    assert np.isfinite(solo["throughput"]).all() and (solo["throughput"] > 0).all()
    tput = pairs[["tput_a", "tput_b"]].to_numpy()
    assert np.isfinite(tput).all() and (tput >= 0).all()
    norms = pairs.loc[pairs["feasible"], ["norm_a", "norm_b"]].to_numpy()
    assert np.isfinite(norms).all() and (norms <= datasets.MAX_NORM).all()
    assert pairs.loc[~pairs["feasible"], ["norm_a", "norm_b"]].isna().all().all()
    assert (pairs["workload_a"] <= pairs["workload_b"]).all()


def solo_of(tables, job_key: str) -> float:
    workload = datasets.gavel_workload_id(job_key.split("'")[1])
    solo = tables[0].set_index("workload")["throughput"]
    return float(solo[workload])


@SETTINGS
@given(data=st.data())
def test_gavel_solo_value_replaced_gives_data_error_or_that_value(gavel_sample, data):
    job = data.draw(st.sampled_from(GAVEL_TYPES), label="job")
    value = data.draw(throughputs, label="solo throughput")
    sample = json.loads(json.dumps(gavel_sample))
    sample["k80"][job]["null"] = value
    tables = parsed(".json", json.dumps(sample).encode(), load_gavel)
    if tables is None:
        return
    assert solo_of(tables, job) == float(value)
    assert_gavel_contract(tables)


@SETTINGS
@given(data=st.data())
def test_gavel_pair_replaced_both_ways_gives_data_error_or_that_pair(gavel_sample, data):
    a, b = data.draw(st.sampled_from(GAVEL_TYPES), label="a"), data.draw(st.sampled_from(GAVEL_TYPES), label="b")
    ta = data.draw(throughputs, label="tput a")
    tb = ta if a == b else data.draw(throughputs, label="tput b")  # a self-pair reads the same both ways
    sample = json.loads(json.dumps(gavel_sample))
    sample["k80"][a][b] = [ta, tb]
    sample["k80"][b][a] = [tb, ta]
    tables = parsed(".json", json.dumps(sample).encode(), load_gavel)
    if tables is None:
        return
    assert_gavel_contract(tables)
    wa, wb = (datasets.gavel_workload_id(k.split("'")[1]) for k in (a, b))
    pairs = tables[1].set_index(["workload_a", "workload_b"])
    row = pairs.loc[(min(wa, wb), max(wa, wb))]
    got = (row["tput_a"], row["tput_b"]) if wa <= wb else (row["tput_b"], row["tput_a"])
    assert got == (float(ta), float(tb))
    if ta or tb:
        assert row["feasible"] and math.isclose(got[0] / solo_of(tables, a), row["norm_a" if wa <= wb else "norm_b"])


@SETTINGS
@given(data=st.data())
def test_gavel_bytes_corrupted_give_data_error_or_valid_tables(gavel_sample, data):
    corrupted = data.draw(byte_corruption(json.dumps(gavel_sample, indent=1).encode()), label="bytes")
    tables = parsed(".json", corrupted, load_gavel)
    if tables is not None:
        assert_gavel_contract(tables)


# ---------------------------------------------------------------------------- users' pairs CSV

USER_HEADER = ["device", "workload_a", "workload_b", "norm_a", "norm_b"]
USER_SETTINGS = settings(max_examples=60, deadline=None, derandomize=True)
norm_values = st.floats(0.01, datasets.MAX_NORM).map(lambda x: round(x, 3))


@st.composite
def user_pairs(draw) -> list[list[str]]:
    """Valid rows: distinct unordered pairs of job types on one device, normalized throughputs in range."""
    pairs = draw(st.lists(st.tuples(st.sampled_from("pqrs"), st.sampled_from("pqrs")).map(lambda p: tuple(sorted(p))),
                          min_size=1, max_size=6, unique=True))
    return [["k80", a, b, str(draw(norm_values)), str(draw(norm_values))] for a, b in pairs]


def csv_text(header: list[str], rows: list[list[str]]) -> bytes:
    return ("\n".join(",".join(r) for r in [header, *rows]) + "\n").encode()


@USER_SETTINGS
@given(rows=user_pairs(), data=st.data())
def test_user_rows_with_fields_more_or_less_than_the_header_are_refused(rows, data):
    """Any rows (all of them, or some) given one field more or less than the header: refused, naming the row
    and both counts; never read with the columns shifted or a blank filled in."""
    changed = data.draw(st.sets(st.integers(0, len(rows) - 1), min_size=1), label="rows changed")
    extra = data.draw(st.integers(-2, 2).filter(bool), label="fields added")
    bad = [r + [str(data.draw(norm_values))] * extra if i in changed and extra > 0 else
           (r[:extra] if i in changed else r) for i, r in enumerate(rows)]
    first = min(changed)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pairs.csv"
        path.write_bytes(csv_text(USER_HEADER, bad))
        with pytest.raises(DataError) as err:
            datasets.load_user(path)
    assert f"{path}: row {first + 2} (line {first + 2} of the file) has {5 + extra} fields, expected 5" in str(err.value)


@USER_SETTINGS
@given(rows=user_pairs(), data=st.data())
def test_user_header_with_a_repeated_column_is_refused_and_the_unchanged_file_read_exactly(rows, data):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pairs.csv"
        path.write_bytes(csv_text(USER_HEADER, rows))
        pairs = datasets.load_user(path)[1]
        assert pairs[["workload_a", "workload_b", "norm_a", "norm_b"]].values.tolist() == \
            [[a, b, float(x), float(y)] for _, a, b, x, y in rows]
        repeated = data.draw(st.sampled_from(USER_HEADER), label="repeated column")
        at = data.draw(st.integers(0, len(USER_HEADER)), label="where")
        header = USER_HEADER[:at] + [repeated] + USER_HEADER[at:]
        path.write_bytes(csv_text(header, [r[:at] + [data.draw(norm_values).__str__()] + r[at:] for r in rows]))
        with pytest.raises(DataError, match=f"column '{repeated}' appears twice in the header"):
            datasets.load_user(path)
