"""The holes issue 12 found in input validation, each closed: the error names file and row/line."""

import json

import numpy as np
import pytest

from servesim.workload import WorkloadError
from servesim.workload.loaders import load_aegaeon
from servesim.workload.schema import MAX_TOKENS, make, validate
from servesim.workload.sharegpt import ReadStats, iter_conversations


def _table():
    df = make(np.array([0.0, 1.0, 2.0]), [10, 10, 10], [5, 5, 5])
    return df.astype({"arrival_s": "float64", "deadline_s": "float64"})


@pytest.mark.parametrize("col,value,what", [
    ("arrival_s", np.inf, "arrival_s=inf is not a finite time"),
    ("arrival_s", -1.0, "arrival_s=-1.0 is not a finite time"),
    ("deadline_s", np.inf, "deadline_s=inf is infinite"),
    ("prompt_tokens", MAX_TOKENS + 1, "prompt_tokens=10485761 is out of range"),
    ("output_tokens", -1, "output_tokens=-1 is out of range"),
])
def test_schema_rejects_with_row(col, value, what):
    df = _table()
    if col == "arrival_s" and value == -1.0:
        df.loc[0, col] = value  # first row, so the table stays sorted
        row = 0
    else:
        df.loc[2, col] = value
        row = 2
    with pytest.raises(WorkloadError, match=f"w.parquet: row {row}: {what}"):
        validate(df, "w.parquet")


AEG = "Request Time,Model Name,Input Length,Output Length\n"


def test_aegaeon_one_bad_clock_names_its_own_line_and_lenient_drops_only_it(tmp_path):
    p = tmp_path / "synth.csv"
    p.write_text(AEG + "00:00:01.500,m1,10,5\n00:00:02.5:9,m1,10,5\n00:01:02,m2,12,0\n")
    with pytest.raises(WorkloadError, match=r"synth.csv: line 3: bad row \(Request Time unparseable\)"):
        load_aegaeon(p)
    with pytest.warns(UserWarning, match="dropped 1 bad row"):
        df = load_aegaeon(p, lenient=True)
    assert df["request_id"].tolist() == [0, 2] and df["arrival_s"].tolist() == [1.5, 62.0]
    assert df.attrs["dropped_rows"] == 1 and df.attrs["dropped_lines"] == [3]


def test_aegaeon_lenient_with_every_row_bad_is_an_error_not_an_empty_workload(tmp_path):
    p = tmp_path / "synth.csv"
    p.write_text(AEG + "x,m1,10,5\n")
    with pytest.raises(WorkloadError, match="no valid rows"), pytest.warns(UserWarning):
        load_aegaeon(p, lenient=True)


def _sharegpt(tmp_path, n=200):
    convs = [{"id": str(i), "conversations": [{"from": "human", "value": f"q{i}"}, {"from": "gpt", "value": "a"}]}
             for i in range(n)]
    return convs, json.dumps(convs, indent=1)


@pytest.mark.parametrize("lenient", [True, False])
def test_sharegpt_syntax_error_mid_file_is_reported_at_its_line(tmp_path, lenient):
    convs, text = _sharegpt(tmp_path)
    i = text.index('"q120"')
    bad = text[:i - 2] + "#" + text[i - 1:]  # breaks the ':' before "q120"
    line = bad.count("\n", 0, i - 2) + 1
    p = tmp_path / "s.json"
    p.write_text(bad)
    with pytest.raises(WorkloadError, match=f"s.json: line {line} column \\d+ \\(element 120\\): JSON syntax error"):
        list(iter_conversations(p, chunk_chars=256, lenient=lenient))


def test_sharegpt_truncation_is_still_truncation(tmp_path):
    convs, text = _sharegpt(tmp_path)
    p = tmp_path / "s.json"
    for cut in (len(text) // 2, len(text) - 1):  # mid-element, and only the closing "]" missing
        p.write_text(text[:cut])
        stats = ReadStats(str(p))
        got = list(iter_conversations(p, stats=stats, chunk_chars=256))
        assert stats.truncated and got == convs[:len(got)] and 0 < len(got) <= len(convs)
    assert len(got) == len(convs)


def test_strict_yaml_duplicate_keys_and_booleans():
    from servesim._yaml import StrictYAMLError, strict_yaml_load, parse_bool

    with pytest.raises(StrictYAMLError, match="c.yaml: line 3: duplicate key 'seed' \\(first at line 1\\)"):
        strict_yaml_load("seed: 1\nname: x\nseed: 2\n", "c.yaml")
    assert strict_yaml_load("a: &b {x: 1}\nc:\n  <<: *b\n  x: 2\n", "c.yaml")["c"] == {"x": 2}  # merge override is fine
    assert parse_bool("Yes", "allow_download") is True and parse_bool(False, "k") is False
    with pytest.raises(StrictYAMLError, match="allow_download='maybe': expected a boolean"):
        parse_bool("maybe", "allow_download")


def test_scenario_with_duplicate_key_is_an_error(tmp_path):
    from servesim.fleet.scenario import ScenarioError, load_scenario

    p = tmp_path / "s.yaml"
    p.write_text("name: a\nseed: 1\nname: b\n")
    with pytest.raises(ScenarioError, match="s.yaml: line 3: duplicate key 'name'"):
        load_scenario(p)


def test_unbounded_sampling_is_refused_before_the_run():
    from servesim.fleet.limits import MAX_SAMPLES, check_sampling
    from servesim.fleet.scenario import ScenarioError

    check_sampling(10.0, 7 * 86400.0)
    with pytest.raises(ScenarioError, match="output.sample_s=1e-06 over a horizon of 900 s"):
        check_sampling(1e-6, 900.0)
    with pytest.raises(ScenarioError, match="not finite"):
        check_sampling(1.0, float("inf"))
    assert MAX_SAMPLES >= 7 * 86400  # a week at 1 s still runs


def test_a_files_rows_out_of_arrival_order_are_put_in_order_but_a_built_table_must_be_sorted(tmp_path):
    """A hand-edited workload file may list rows in any order (read sorts them, stably, and a
    scenario's ``limit`` keeps the first arrivals); a table a generator built out of order is a bug."""
    from servesim.workload.schema import read
    from servesim.workload.spec import FileWorkload, materialise

    df = make(np.array([0.0, 1.0, 1.0, 2.0]), [11, 12, 13, 10], [5, 5, 5, 5]).iloc[[3, 0, 1, 2]]
    path = tmp_path / "w.csv"
    df.to_csv(path, index=False)
    got = read(path)
    assert got.arrival_s.tolist() == [0.0, 1.0, 1.0, 2.0]
    assert got.prompt_tokens.tolist() == [11, 12, 13, 10]  # each row kept whole; the tie keeps its order
    two = materialise(FileWorkload(file=str(path), limit=2), np.random.default_rng(0))
    assert two.arrival_s.tolist() == [0.0, 1.0] and two.prompt_tokens.tolist() == [11, 12]
    with pytest.raises(WorkloadError, match="row 1: arrival_s goes back in time"):
        validate(df.astype({"arrival_s": "float64", "deadline_s": "float64"}), "<generated>")
