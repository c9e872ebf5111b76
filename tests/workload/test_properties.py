"""Property-based tests of every loader and the scenario schema (hypothesis, bounded examples).

For generated inputs, valid or malformed, a loader either returns a valid table holding exactly
the valid rows, or raises WorkloadError naming the file and the first bad line: never another
exception, never a silently shorter table.
"""

import csv
import io
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from servesim.workload import WorkloadError  # noqa: E402
from servesim.workload.loaders import load_aegaeon, load_azure, load_sageserve  # noqa: E402
from servesim.workload.schema import MAX_TOKENS, validate  # noqa: E402
from servesim.workload.sharegpt import ReadStats, iter_conversations  # noqa: E402

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
JUNK = st.text(alphabet=st.sampled_from(list("0123456789:.-+eE ,x\"\n\tnaif")), max_size=12)


def _csv(header, rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def _write(tmp_path_factory, name: str, text: str) -> Path:
    p = tmp_path_factory.mktemp("prop") / name
    p.write_text(text)
    return p


def _check_outcome(path, load, valid: list[bool], lenient: bool):
    """The oracle: strict -> all rows or an error at the first bad line; lenient -> exactly the valid rows."""
    n_valid = sum(valid)
    if not lenient and not all(valid):
        with pytest.raises(WorkloadError) as err:
            load(path, lenient=False)
        first = valid.index(False) + 2  # header is line 1
        assert str(path) in str(err.value) and f"line {first}:" in str(err.value)
        return
    if n_valid == 0:
        with pytest.raises(WorkloadError, match="no valid rows|line|missing|out of range") as err:
            load(path, lenient=lenient)
        assert str(path) in str(err.value)
        return
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = load(path, lenient=lenient)
    validate(df)
    assert len(df) == n_valid and df.attrs["dropped_rows"] == len(valid) - n_valid  # nothing lost silently
    assert sorted(df["request_id"]) == [i for i, ok in enumerate(valid) if ok]


# ------------------------------------------------------------------ Aegaeon CSV
BAD_CLOCK = ["", "abc", "00:00:01.5:9", "-1:00:00", "00:61:00", "00:00:75", "inf", "1e400", "12", "::"]
BAD_INT_POS = ["", "x", "1.5", "0", "-3", "nan", "inf", str(MAX_TOKENS + 1)]
BAD_INT_NONNEG = ["", "x", "2.5", "-1", "nan", "1e30"]


@st.composite
def aegaeon_rows(draw):
    n = draw(st.integers(1, 8))
    rows, valid = [], []
    for _ in range(n):
        h, m, s = draw(st.integers(0, 30)), draw(st.integers(0, 59)), draw(st.integers(0, 59))
        clock = f"{h:02d}:{m:02d}:{s:02d}.{draw(st.integers(0, 999)):03d}"
        fields = [clock, draw(st.sampled_from(["m1", "m2", " m3 "])), str(draw(st.integers(1, 5000))),
                  str(draw(st.integers(0, 5000)))]
        bad = draw(st.sampled_from([None, 0, 1, 2, 3]) if draw(st.booleans()) else st.just(None))
        if bad is not None:
            fields[bad] = draw(st.sampled_from([BAD_CLOCK, ["", "  "], BAD_INT_POS, BAD_INT_NONNEG][bad]))
        rows.append(fields)
        valid.append(bad is None)
    return rows, valid


@FAST
@given(aegaeon_rows(), st.booleans())
def test_aegaeon_rows_valid_or_named(tmp_path_factory, data, lenient):
    rows, valid = data
    p = _write(tmp_path_factory, "w.csv", _csv(["Request Time", "Model Name", "Input Length", "Output Length"], rows))
    _check_outcome(p, load_aegaeon, valid, lenient)


# ------------------------------------------------------------------ Azure CSV
BAD_STAMP = ["", "bad", "2024-13-45 00:00:00", "yesterday", "12:00"]


@st.composite
def azure_rows(draw):
    n = draw(st.integers(1, 8))
    rows, valid = [], []
    for _ in range(n):
        stamp = f"2024-05-12 {draw(st.integers(0, 23)):02d}:{draw(st.integers(0, 59)):02d}:" \
                f"{draw(st.integers(0, 59)):02d}.{draw(st.integers(0, 999999)):06d}+00:00"
        fields = [stamp, str(draw(st.integers(1, 9000))), str(draw(st.integers(0, 900)))]
        bad = draw(st.sampled_from([None, 0, 1, 2]) if draw(st.booleans()) else st.just(None))
        if bad is not None:
            fields[bad] = draw(st.sampled_from([BAD_STAMP, BAD_INT_POS, BAD_INT_NONNEG][bad]))
        rows.append(fields)
        valid.append(bad is None)
    return rows, valid


@FAST
@given(azure_rows(), st.booleans())
def test_azure_rows_valid_or_named(tmp_path_factory, data, lenient):
    rows, valid = data
    p = _write(tmp_path_factory, "AzureLLMInferenceTrace_code.csv",
               _csv(["TIMESTAMP", "ContextTokens", "GeneratedTokens"], rows))
    _check_outcome(p, load_azure, valid, lenient)


# ------------------------------------------------------------------ arbitrary text: only clear errors
SAGESERVE_HEADER = ["request_id", "batch_id", "client_tenant", "request_type", "scenario", "sla", "utility", "regions",
                    "model_type", "workload_type", "application_id", "arrival_timestamp", "batch_size",
                    "prompt_size", "token_size"]
HEADERS = {load_aegaeon: ["Request Time", "Model Name", "Input Length", "Output Length"],
           load_azure: ["TIMESTAMP", "ContextTokens", "GeneratedTokens"], load_sageserve: SAGESERVE_HEADER}


@FAST
@given(st.sampled_from(sorted(HEADERS, key=lambda f: f.__name__)),
       st.lists(st.lists(JUNK, min_size=0, max_size=16), min_size=0, max_size=6), st.booleans(), st.booleans())
def test_loaders_on_junk_give_a_table_or_a_named_error(tmp_path_factory, load, rows, lenient, header):
    text = _csv(HEADERS[load] if header else ["a", "b"], rows)
    p = _write(tmp_path_factory, "trace.csv", text)
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = load(p, lenient=lenient)
    except WorkloadError as exc:
        assert str(p) in str(exc)
        return
    validate(df)
    assert np.isfinite(df["arrival_s"]).all() and (df["arrival_s"] >= 0).all()
    # every data row kept or counted (a line that is blank or whitespace only is not a row to the CSV reader)
    meaningful = sum(1 for r in rows if len(r) > 1 or (len(r) == 1 and r[0].strip()))
    assert meaningful <= len(df) + df.attrs["dropped_rows"] <= len(rows)


# ------------------------------------------------------------------ ShareGPT JSON
CONV = st.fixed_dictionaries({"id": st.text(max_size=5), "conversations": st.lists(
    st.fixed_dictionaries({"from": st.sampled_from(["human", "gpt"]), "value": st.text(max_size=20)}), max_size=3)})


@FAST
@given(st.lists(CONV, max_size=6), st.integers(0, 10_000), st.integers(3, 40), st.booleans())
def test_sharegpt_truncation_is_a_prefix_never_an_error(tmp_path_factory, convs, cut, chunk, indent):
    text = json.dumps(convs, indent=1 if indent else None)
    cut = min(cut, len(text))
    p = _write(tmp_path_factory, "s.json", text[:cut] if cut else text)
    stats = ReadStats(str(p))
    try:
        got = list(iter_conversations(p, stats=stats, chunk_chars=chunk, lenient=False))
    except WorkloadError as exc:  # only a file cut before its opening "[" is not an array
        assert str(p) in str(exc) and "not a JSON array" in str(exc) and not text[:cut].strip()
        return
    assert got == convs[:len(got)]
    assert stats.truncated or len(got) == len(convs)


@FAST
@given(st.lists(CONV, min_size=1, max_size=6), st.data(), st.integers(3, 40))
def test_sharegpt_syntax_error_is_named_not_truncation(tmp_path_factory, convs, data, chunk):
    text = json.dumps(convs, indent=1)
    i = data.draw(st.integers(0, len(text) - 1))
    bad = text[:i] + "#" + text[i + 1:]  # '#' is valid JSON only inside a string
    p = _write(tmp_path_factory, "s.json", bad)
    try:
        expect = json.loads(bad)
    except json.JSONDecodeError:
        expect = None
    if expect is not None:  # still JSON ('#' inside a string): the same elements, malformed ones counted
        stats = ReadStats(str(p))
        got = list(iter_conversations(p, stats=stats, chunk_chars=chunk, lenient=True))
        assert got == [c for c in expect if isinstance(c, dict) and isinstance(c.get("conversations"), list)]
        assert len(got) + stats.dropped == len(expect)
        return
    with pytest.raises(WorkloadError) as err:
        list(iter_conversations(p, chunk_chars=chunk, lenient=True))
    assert str(p) in str(err.value)
    assert "JSON syntax error" in str(err.value) or "not a JSON array" in str(err.value)


# ------------------------------------------------------------------ scenario schema
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "scenarios" / "one_region.yaml"
BAD_VALUES = [None, -1, 0, "x", 1e309, [], {}, "maybe", -1e-9]


def _paths(obj, prefix=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_scenario_mutations_are_valid_or_name_the_key(data):
    from servesim.fleet.scenario import ScenarioError, parse_scenario

    doc = yaml.safe_load(EXAMPLE.read_text())
    paths = list(_paths(doc))
    path = data.draw(st.sampled_from(paths))
    action = data.draw(st.sampled_from(["set", "delete", "unknown"]))
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    if action == "set":
        parent[key] = data.draw(st.sampled_from(BAD_VALUES))
    elif action == "delete" and isinstance(parent, dict):
        del parent[key]
    elif isinstance(parent, dict):
        key = "no_such_key"
        parent[key] = 1
    try:
        sc = parse_scenario(doc, "s.yaml")
    except ScenarioError as exc:
        msg = str(exc)
        assert msg.startswith("s.yaml")
        # names the key changed, or (a renamed region or model) the keys that refer to it
        named = [str(k) for k in path if isinstance(k, str)] + [str(key)]
        assert any(n in msg for n in named) or re.match(r"s\.yaml: [A-Za-z_][\w.]*: ", msg), (path, action, msg)
        return
    assert sc.name  # a valid scenario
