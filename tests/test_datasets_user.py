"""Users' own measurements as CSV: parsed into the canonical tables, bad rows named."""
import numpy as np
import pytest

from coloc.datasets import DataError, load_user

SOLO = "device,workload,throughput\nv100,x,10\nv100,y,4\nv100,z,2\n"


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_throughputs_with_a_solo_table_become_normalized_ordered_pairs(tmp_path):
    text = "device,workload_a,workload_b,tput_a,tput_b,feasible\nv100,y,x,2,5,\nv100,x,x,6,6,true\nv100,x,z,,,false\n"
    solo, pairs = load_user(write(tmp_path, "p.csv", text), write(tmp_path, "s.csv", SOLO))
    assert list(solo["throughput"]) == [10.0, 4.0, 2.0]
    first = pairs.iloc[0]  # (y, x) given: stored as (x, y) with its numbers swapped
    assert (first["workload_a"], first["workload_b"], first["tput_a"], first["tput_b"]) == ("x", "y", 5.0, 2.0)
    assert first["norm_a"] == pytest.approx(0.5) and first["norm_b"] == pytest.approx(0.5)
    assert list(pairs["feasible"]) == [True, True, False]
    assert np.isnan(pairs.iloc[2]["norm_a"])


def test_normalized_throughputs_need_no_solo_table(tmp_path):
    text = "device,workload_a,workload_b,norm_a,norm_b\nk80,p,q,0.5,0.9\nk80,q,q,0.7,0.7\n"
    solo, pairs = load_user(write(tmp_path, "p.csv", text))
    assert solo.empty and list(solo.columns) == ["device", "workload", "throughput"]
    assert list(pairs["norm_b"]) == [0.9, 0.7] and pairs["tput_a"].isna().all()


@pytest.mark.parametrize("text, solo, message", [
    ("device,workload_a,workload_b,norm_a,norm_b\nv100,x,y,0.5,abc\n", None,
     r"p.csv: row 2 \(line 2 of the file\), column 'norm_b': got 'abc', expected a normalized throughput"),
    ("device,workload_a,workload_b,norm_a,norm_b\nv100,x,y,0.5,0.5\nv100,x,z,0.5,3\n", None,
     r"row 3 .*column 'norm_b': got '3'"),
    ("device,workload_a,workload_b,norm_a,norm_b\nv100,x,y,0.5,0.5\nv100,y,x,0.4,0.4\n", None,
     r"row 3 .*column 'workload_b'.*one row per device and unordered pair"),
    ("device,workload_a,workload_b,norm_a\nv100,x,y,0.5\n", None, r"p.csv: expected columns norm_a, norm_b"),
    ("device,workload_a,workload_b,tput_a,tput_b\nv100,x,y,1,1\n", None, r"p.csv: throughputs .*need a solo table"),
    ("device,workload_a,workload_b,tput_a,tput_b\nv100,x,w,1,1\n", SOLO, r"row 2 .*column 'workload_b': got 'w'"),
    ("device,workload_a,workload_b,tput_a,tput_b\nv100,x,y,30,1\n", SOLO, r"row 2 .*column 'tput_a': got '30'"),
    ("device,workload_a,workload_b,norm_a,norm_b,tput_a,tput_b\nv100,x,y,0.9,0.5,5,2\n", SOLO,
     r"row 2 .*column 'norm_a': got '0.9', expected tput_a / solo"),
    ("device,workload_a,workload_b,norm_a,norm_b,feasible\nv100,x,y,0.5,0.5,maybe\n", None,
     r"row 2 .*column 'feasible': got 'maybe', expected true or false"),
    ("device,workload_a,workload_b,norm_a,norm_b\nv100,,y,0.5,0.5\n", None, r"row 2 .*column 'workload_a': got ''"),
])
def test_a_bad_row_is_named_by_file_row_and_column(tmp_path, text, solo, message):
    with pytest.raises(DataError, match=message):
        load_user(write(tmp_path, "p.csv", text), write(tmp_path, "s.csv", solo) if solo else None)


def test_a_bad_solo_row_is_named(tmp_path):
    solo = write(tmp_path, "s.csv", "device,workload,throughput\nv100,x,10\nv100,x,12\n")
    pairs = write(tmp_path, "p.csv", "device,workload_a,workload_b,norm_a,norm_b\nv100,x,x,0.5,0.5\n")
    with pytest.raises(DataError, match=r"s.csv: row 3 .*column 'workload'.*one row per device and job type"):
        load_user(pairs, solo)
    solo.write_text("device,workload,throughput\nv100,x,-1\n")
    with pytest.raises(DataError, match=r"s.csv: row 2 .*column 'throughput': got '-1'"):
        load_user(pairs, solo)


@pytest.mark.parametrize("text, message", [
    # every row a field more than the header: pandas would make the first column the index, the rest shifted
    ("device,workload_a,workload_b,norm_a,norm_b\na100,x,y,0.5,0.6,0.7\na100,x,x,0.5,0.5,0.9\n",
     r"p.csv: row 2 \(line 2 of the file\) has 6 fields, expected 5 as the header"),
    ("device,workload_a,workload_b,norm_a,norm_b\na100,x,y,0.5,0.6\na100,x,x,0.5\n",
     r"p.csv: row 3 \(line 3 of the file\) has 4 fields, expected 5"),
    ("device,workload_a,workload_b,norm_a,norm_b,norm_a\na100,x,y,0.5,0.6,0.7\n",
     r"p.csv: column 'norm_a' appears twice in the header \(fields 4 and 6 of"),
    ("device, workload_a,workload_b,norm_a,norm_b,workload_a\na100,x,y,0.5,0.6,z\n",
     r"column 'workload_a' appears twice in the header"),
])
def test_a_row_with_a_field_more_or_less_and_a_repeated_column_are_refused(tmp_path, text, message):
    with pytest.raises(DataError, match=message):
        load_user(write(tmp_path, "p.csv", text))


def test_blank_lines_are_skipped_and_a_quoted_comma_is_one_field(tmp_path):
    text = 'device,workload_a,workload_b,norm_a,norm_b\n\nk80,"p,1",q,0.5,0.9\n\n'
    assert load_user(write(tmp_path, "p.csv", text))[1]["workload_a"].tolist() == ["p,1"]
