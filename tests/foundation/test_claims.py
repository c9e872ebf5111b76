import json
from pathlib import Path

import pytest
import yaml

from servesim.analysis.claims import Check, ClaimsError, check_claims, evaluate, load_claims, to_markdown, write_report


def write(tmp: Path, claims: list[dict], paper="demo") -> Path:
    d = tmp / "workflow" / "claims"
    d.mkdir(parents=True, exist_ok=True)
    f = d / f"{paper}.yaml"
    f.write_text(yaml.safe_dump({"paper": paper, "claims": claims}))
    return f


def notebook(tmp: Path, paper: str, fig: str, metrics: dict | None, scale="quick"):
    nb = tmp / "notebooks" / paper / f"{fig}.ipynb"
    nb.parent.mkdir(parents=True, exist_ok=True)
    nb.write_text("{}")
    if metrics is not None:
        m = tmp / "results" / scale / paper / fig / "metrics.json"
        m.parent.mkdir(parents=True, exist_ok=True)
        m.write_text(json.dumps(metrics))


def claim(**kw):
    base = {"id": "demo-1", "where": "§1", "claim": "x is 10", "figure": "fig01_x", "metric": "x",
            "check": "approx", "expected": 10, "tolerance": {"rel": 0.1}}
    base.update(kw)
    return base


@pytest.mark.parametrize("check,observed,ok", [
    (Check("approx", 10, {"rel": 0.1}), 10.9, True),
    (Check("approx", 10, {"rel": 0.1}), 11.1, False),
    (Check("approx", 10, {"abs": 0.5}), 9.6, True),
    (Check("approx", 10, {"abs": 0.5}), 9.4, False),
    (Check("approx", 10, {"abs": 0.5, "rel": 0.2}), 11.5, True),  # either tolerance suffices
    (Check("range", [1, 2]), 1.5, True),
    (Check("range", [1, 2]), 2.5, False),
    (Check("lt", 3), 2.9, True),
    (Check("lt", 3), 3, False),
    (Check("le", 3), 3, True),
    (Check("gt", 0), 0, False),
    (Check("ge", 0), 0, True),
    (Check("ordering", "ascending"), [1, 2, 3], True),
    (Check("ordering", "ascending"), [1, 3, 2], False),
    (Check("ordering", "descending"), [3, 2, 1], True),
    (Check("ordering", "descending"), [3, 3, 1], False),  # strict
    (Check("true"), True, True),
    (Check("true"), False, False),
    (Check("approx", 10, {"rel": 0.1}), None, False),  # a null metric never passes
])
def test_evaluate(check, observed, ok):
    assert evaluate(check, observed) is ok


def test_statuses(tmp_path):
    write(tmp_path, [
        claim(id="demo-1"),
        claim(id="demo-2", expected=20),
        claim(id="demo-3", figure="fig09_missing"),
        claim(id="demo-4", not_reproducible="no public trace"),
        claim(id="demo-5", quick="skip"),
        claim(id="demo-6", quick={"check": "gt", "expected": 0}, expected=1000),
        claim(id="demo-7", figure="fig02_notrun"),
    ])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.5})
    notebook(tmp_path, "demo", "fig02_notrun", None)
    rows = {r["id"]: r for r in check_claims(tmp_path, "quick")}
    assert rows["demo-1"]["status"] == "PASS" and rows["demo-1"]["observed"] == "10.5"
    assert rows["demo-2"]["status"] == "FAIL"
    assert rows["demo-3"]["status"] == "PENDING" and "does not exist" in rows["demo-3"]["reason"]
    assert rows["demo-4"]["status"] == "NOT-REPRODUCIBLE" and rows["demo-4"]["reason"] == "no public trace"
    assert rows["demo-5"]["status"] == "NOT-CHECKED"
    assert rows["demo-6"]["status"] == "PASS"  # quick check: x > 0
    assert rows["demo-7"]["status"] == "PENDING" and "not been run" in rows["demo-7"]["reason"]
    # at full scale nothing has run
    full = {r["id"]: r for r in check_claims(tmp_path, "full")}
    assert full["demo-1"]["status"] == "PENDING"


def test_unknown_metric_is_an_error(tmp_path):
    f = write(tmp_path, [claim(metric="nope")])
    notebook(tmp_path, "demo", "fig01_x", {"x": 1})
    with pytest.raises(ClaimsError, match=r"demo-1.*no metric\(s\) \['nope'\]"):
        check_claims(tmp_path, "quick")
    assert f.exists()


@pytest.mark.parametrize("bad,msg", [
    ({"check": "approx", "tolerance": None}, "tolerance"),
    ({"check": "wobbly"}, "not one of"),
    ({"check": "ordering", "expected": "ascending", "metric": "x"}, "list of >= 2"),
    ({"check": "range", "expected": 3}, r"\[lo, hi\]"),
    ({"surprise": 1}, "unknown key"),
    ({"quick": "maybe"}, "quick must be"),
])
def test_malformed_claims_name_the_claim(tmp_path, bad, msg):
    f = write(tmp_path, [claim(**bad)])
    with pytest.raises(ClaimsError, match=msg) as e:
        load_claims(f)
    assert "demo-1" in str(e.value) and str(f) in str(e.value)


def test_missing_keys_and_duplicates(tmp_path):
    c = claim()
    del c["metric"]
    with pytest.raises(ClaimsError, match="missing key"):
        load_claims(write(tmp_path, [c]))
    with pytest.raises(ClaimsError, match="duplicate id"):
        load_claims(write(tmp_path, [claim(), claim()]))


def test_report_files(tmp_path):
    write(tmp_path, [claim(), claim(id="demo-2", not_reproducible="needs production telemetry")])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10})
    s = write_report(tmp_path, "quick", tmp_path / "r.md", tmp_path / "r.csv")
    assert s["PASS"] == 1 and s["NOT-REPRODUCIBLE"] == 1 and s["total"] == 2
    header = (tmp_path / "r.csv").read_text().splitlines()[0]
    assert header == "id,paper,where,claim,expected,observed,tolerance,status,reason"
    md = (tmp_path / "r.md").read_text()
    assert "needs production telemetry" in md and "| demo |" in md


def test_project_claims_files_load(project_root):
    """Every claims file of the project parses, and ids are unique across papers."""
    ids = []
    for f in sorted((project_root / "workflow" / "claims").glob("*.yaml")):
        ids += [c.id for c in load_claims(f)]
    assert len(ids) == len(set(ids))
    assert to_markdown([], "quick").startswith("# Claims report")


def test_readme_claims_table_agrees_with_claims_files(project_root):
    """The README's generated table lists every claim and every NOT-REPRODUCIBLE one with its reason."""
    import re

    from servesim.analysis.claims import README_BEGIN, README_END

    text = (project_root / "README.md").read_text()
    section = text.split(README_BEGIN, 1)[1].split(README_END, 1)[0]
    claims = []
    for f in sorted((project_root / "workflow" / "claims").glob("*.yaml")):
        claims += load_claims(f)
    if not claims:
        return
    m = re.search(r"\| \*\*all\*\* \| (\d+) \| \d+ \| \d+ \| (\d+) \|", section)
    assert m, "README claims table has no totals row: run `servesim claims --readme README.md`"
    nr = [c for c in claims if c.not_reproducible]
    assert int(m.group(1)) == len(claims), "README claims table is stale: regenerate it"
    assert int(m.group(2)) == len(nr), "README claims table is stale: regenerate it"
    for c in nr:
        assert f"`{c.id}`" in section, f"{c.id} (NOT-REPRODUCIBLE) missing from the README table"


def test_not_reproducible_claim_needs_no_metric(tmp_path):
    write(tmp_path, [claim(metric="absent", not_reproducible="needs production telemetry")])
    notebook(tmp_path, "demo", "fig01_x", {"x": 1})
    [row] = check_claims(tmp_path, "quick")
    assert row["status"] == "NOT-REPRODUCIBLE" and row["observed"] == ""


def test_null_metric_is_not_checked_and_names_the_key(tmp_path):
    # a notebook that could not measure a value writes null: not a FAIL, and no crash in orderings
    write(tmp_path, [claim(id="demo-1", metric="x", check="lt", expected=1.0, tolerance=None),
                     claim(id="demo-2", metric=["x", "y"], check="ordering", expected="ascending", tolerance=None)])
    notebook(tmp_path, "demo", "fig01_x", {"x": None, "y": 2.0}, scale="full")
    rows = check_claims(tmp_path, "full")
    assert [r["status"] for r in rows] == ["NOT-CHECKED", "NOT-CHECKED"]
    assert all("['x']" in r["reason"] for r in rows)
