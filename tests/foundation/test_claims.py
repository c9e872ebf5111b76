import json
import math
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from servesim._yaml import StrictYAMLError, strict_yaml_load
from servesim.analysis.claims import (
    KINDS,
    STATUSES,
    UNDIAGNOSED,
    Check,
    ClaimsError,
    check_claims,
    decide,
    evaluate,
    load_all_claims,
    load_claims,
    readme_section,
    summary,
    to_markdown,
    write_report,
)


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


NO_NULL = {"none": "a plain measurement of the demo figure"}


def claim(**kw):
    """A demo claim; a measured one says `null_system: none` unless the test gives its own."""
    base = {"id": "demo-01-x", "source": "paper", "kind": "measured", "where": "§1", "claim": "x is 10",
            "figure": "fig01_x", "metric": "x", "check": "approx", "expected": 10, "tolerance": {"rel": 0.1},
            "null_system": NO_NULL}
    base.update(kw)
    if base["kind"] != "measured" and base["null_system"] is NO_NULL:
        base["null_system"] = None
    return {k: v for k, v in base.items() if v is not None}


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
    # issue 12: booleans strictly, and NaN never passes
    (Check("true"), float("nan"), False),
    (Check("true"), "false", False),
    (Check("true"), "true", False),
    (Check("true"), 1, False),
    (Check("gt", 0), float("nan"), False),
    (Check("lt", 1), True, False),
    (Check("ordering", "ascending"), [1, float("nan"), 3], False),
])
def test_evaluate(check, observed, ok):
    assert evaluate(check, observed) is ok


def test_statuses(tmp_path):
    write(tmp_path, [
        claim(id="demo-01-a"),
        claim(id="demo-02-a", expected=20),
        claim(id="demo-03-a", figure="fig09_missing"),
        claim(id="demo-04-a", not_reproducible="no public trace"),
        claim(id="demo-05-a", quick="skip"),
        claim(id="demo-06-a", quick={"check": "gt", "expected": 0}, expected=1000),
        claim(id="demo-07-a", figure="fig02_notrun"),
    ])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.5})
    notebook(tmp_path, "demo", "fig02_notrun", None)
    rows = {r["id"]: r for r in check_claims(tmp_path, "quick")}
    assert rows["demo-01-a"]["status"] == "PASS" and rows["demo-01-a"]["observed"] == "10.5"
    assert rows["demo-02-a"]["status"] == "FAIL"
    assert rows["demo-03-a"]["status"] == "PENDING" and "does not exist" in rows["demo-03-a"]["reason"]
    assert rows["demo-04-a"]["status"] == "NOT-REPRODUCIBLE" and rows["demo-04-a"]["reason"] == "no public trace"
    assert rows["demo-05-a"]["status"] == "NOT-CHECKED"
    assert rows["demo-06-a"]["status"] == "PASS"  # quick check: x > 0
    assert rows["demo-07-a"]["status"] == "PENDING" and "not been run" in rows["demo-07-a"]["reason"]
    # at full scale nothing has run
    full = {r["id"]: r for r in check_claims(tmp_path, "full")}
    assert full["demo-01-a"]["status"] == "PENDING"


@pytest.mark.parametrize("kind", ["stated", "arithmetic", "calibration"])
def test_only_measured_claims_get_pass_or_fail(tmp_path, kind):
    write(tmp_path, [claim(id="demo-01-a", kind=kind), claim(id="demo-02-a", kind=kind, expected=20),
                     claim(id="demo-03-a", kind=kind, figure="fig09_missing")])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.0})
    rows = {r["id"]: r for r in check_claims(tmp_path, "quick")}
    assert rows["demo-01-a"]["status"] == "CONSISTENT" and rows["demo-01-a"]["kind"] == kind
    assert rows["demo-02-a"]["status"] == "INCONSISTENT"
    assert rows["demo-02-a"]["diagnosis"] == ""  # only a measured FAIL is reported undiagnosed
    assert rows["demo-03-a"]["status"] == "PENDING"
    assert not {r["status"] for r in rows.values()} & {"PASS", "FAIL"}


def test_diagnosis_per_claim_and_per_scale(tmp_path):
    write(tmp_path, [
        claim(id="demo-01-a", expected=20,
              diagnosis={"kind": "substitute-data", "why": "synthetic trace lacks bursts"}),
        claim(id="demo-02-a", expected=20, diagnosis={"full": {"kind": "open", "why": "the queue model may be wrong"}}),
        claim(id="demo-03-a", expected=20),
        claim(id="demo-04-a", diagnosis={"kind": "open", "why": "kept for a claim that passes"}),
        claim(id="demo-05-a", kind="arithmetic", expected=20,
              diagnosis={"kind": "paper-inconsistent", "why": "the paper's sum of its own labels differs"}),
    ])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.0})
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.0}, scale="full")
    q = {r["id"]: r for r in check_claims(tmp_path, "quick")}
    f = {r["id"]: r for r in check_claims(tmp_path, "full")}
    assert q["demo-01-a"]["diagnosis"] == "substitute-data" and "bursts" in q["demo-01-a"]["reason"]
    assert f["demo-01-a"]["diagnosis"] == "substitute-data"
    assert q["demo-02-a"]["diagnosis"] == UNDIAGNOSED and f["demo-02-a"]["diagnosis"] == "open"
    assert q["demo-03-a"]["diagnosis"] == UNDIAGNOSED
    assert q["demo-04-a"]["status"] == "PASS" and q["demo-04-a"]["diagnosis"] == ""
    assert q["demo-05-a"]["status"] == "INCONSISTENT" and q["demo-05-a"]["diagnosis"] == "paper-inconsistent"
    s = summary(list(q.values()))
    assert s["undiagnosed"] == 2 and s["fail_diagnoses"]["substitute-data"] == 1
    md = to_markdown(list(q.values()), "quick")
    assert "Measured FAILs without a diagnosis" in md and "`demo-03-a`" in md


def test_a_diagnosis_cites_metrics_of_the_run_it_explains(tmp_path):
    """{key}, {figure/key} and {key:spec} in a diagnosis are the scale's metrics; other braces
    are text; a cited key the metrics lack is an error naming the claim and the key."""
    why = ("x is {x} ({x:.1f} to one place), y in fig02 is {fig02_y/y:.0%}, "
           "its flag {fig02_y/flag}; over {P1, P6} nothing is read; {fig02_y/gone:.2f} was not measured")
    write(tmp_path, [claim(id="demo-01-a", expected=20, diagnosis={"kind": "open", "why": why})])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.04})
    notebook(tmp_path, "demo", "fig02_y", {"y": 0.25, "flag": True, "gone": None})
    notebook(tmp_path, "demo", "fig01_x", {"x": 12.5}, scale="full")
    notebook(tmp_path, "demo", "fig02_y", {"y": 0.5, "flag": False, "gone": None}, scale="full")
    q = check_claims(tmp_path, "quick")[0]["reason"]
    assert q == ("x is 10 (10.0 to one place), y in fig02 is 25%, its flag True; over {P1, P6} nothing is read; "
                 "n/a was not measured")
    assert check_claims(tmp_path, "full")[0]["reason"].startswith("x is 12.5 (12.5 to one place), y in fig02 is 50%")
    write(tmp_path, [claim(id="demo-01-a", expected=20, diagnosis={"kind": "open", "why": "see {fig02_y/z} here"})])
    with pytest.raises(ClaimsError, match="demo-01-a.*'z'.*fig02_y"):
        check_claims(tmp_path, "quick")
    write(tmp_path, [claim(id="demo-01-a", expected=20, diagnosis={"kind": "open", "why": "see {flag_x/y} here"})])
    with pytest.raises(ClaimsError, match="demo-01-a.*flag_x/y.*does not exist"):
        check_claims(tmp_path, "quick")


def test_diagnoses_share_a_paragraph_written_once_in_texts(tmp_path):
    """[[name]] in a diagnosis is the file's texts[name] (its placeholders rendered as the rest);
    an unknown name and a text no diagnosis uses are errors naming the file or the claim."""
    def write_texts(texts, whys):
        f = write(tmp_path, [claim(id=f"demo-0{i}-a", expected=20, diagnosis={"kind": "open", "why": w})
                             for i, w in enumerate(whys, 1)])
        doc = yaml.safe_load(f.read_text())
        f.write_text(yaml.safe_dump({"paper": "demo", "texts": texts, "claims": doc["claims"]}))
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.04})
    write_texts({"why_x": "x came out at {x:.1f} on the substitute trace"},
                ["First: [[why_x]].", "Second, with more: [[why_x]]; and so on."])
    r = {row["id"]: row["reason"] for row in check_claims(tmp_path, "quick")}
    assert r == {"demo-01-a": "First: x came out at 10.0 on the substitute trace.",
                 "demo-02-a": "Second, with more: x came out at 10.0 on the substitute trace; and so on."}
    write_texts({"why_x": "x came out at {x:.1f} on the substitute trace"}, ["First: [[why_y]]."])
    with pytest.raises(ClaimsError, match=r"demo-01-a.*\[\[why_y\]\].*defined: \['why_x'\]"):
        check_claims(tmp_path, "quick")
    write_texts({"why_x": "x came out at {x:.1f} on the substitute trace", "unused": "nobody cites this one"},
                ["First: [[why_x]]."])
    with pytest.raises(ClaimsError, match=r"demo.yaml: texts \['unused'\] are used by no diagnosis"):
        check_claims(tmp_path, "quick")


def test_cli_fails_on_undiagnosed_only_when_asked(tmp_path, capsys):
    from servesim.cli_data import _claims

    write(tmp_path, [claim(expected=20)])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.0})

    class Args:
        scale, root, md, csv, readme, fail_undiagnosed, paper = "quick", str(tmp_path), None, None, None, False, None

    assert _claims(Args) == 0
    Args.fail_undiagnosed = True
    assert _claims(Args) == 2
    assert "1 measured FAIL(s) without a diagnosis" in capsys.readouterr().err


def test_unknown_metric_is_an_error(tmp_path):
    f = write(tmp_path, [claim(metric="nope")])
    notebook(tmp_path, "demo", "fig01_x", {"x": 1})
    with pytest.raises(ClaimsError, match=r"demo-01-x.*no metric\(s\) \['nope'\]"):
        check_claims(tmp_path, "quick")
    assert f.exists()


@pytest.mark.parametrize("value", ["false", "true", 1, 0.0])
def test_true_check_needs_a_json_boolean(tmp_path, value):
    """Issue 12: a string or number under check "true" is a notebook bug, named, never a PASS."""
    f = write(tmp_path, [claim(check="true", expected=None, tolerance=None)])
    notebook(tmp_path, "demo", "fig01_x", {"x": value})
    with pytest.raises(ClaimsError, match="needs a JSON boolean") as e:
        check_claims(tmp_path, "quick")
    assert str(f) in str(e.value) and "demo-01-x" in str(e.value)


def test_true_check_nan_or_null_is_not_checked(tmp_path):
    write(tmp_path, [claim(check="true", expected=None, tolerance=None)])
    (tmp_path / "notebooks/demo").mkdir(parents=True)
    (tmp_path / "notebooks/demo/fig01_x.ipynb").write_text("{}")
    m = tmp_path / "results/quick/demo/fig01_x/metrics.json"
    m.parent.mkdir(parents=True)
    m.write_text('{"x": NaN}')  # what json.dumps writes for float("nan")
    [row] = check_claims(tmp_path, "quick")
    assert row["status"] == "NOT-CHECKED"


def test_number_check_refuses_a_boolean_or_string(tmp_path):
    write(tmp_path, [claim()])
    notebook(tmp_path, "demo", "fig01_x", {"x": "10"})
    with pytest.raises(ClaimsError, match="needs a number"):
        check_claims(tmp_path, "quick")


@pytest.mark.parametrize("bad,msg", [
    ({"check": "approx", "tolerance": None}, "tolerance"),
    ({"check": "wobbly"}, "is not one of"),
    ({"check": True, "expected": None, "tolerance": None}, "in quotes"),
    ({"check": "ordering", "expected": "ascending", "metric": "x", "tolerance": None}, "list of >= 2"),
    ({"check": "range", "expected": 3, "tolerance": None}, "is not of type 'array'"),
    ({"check": "range", "expected": [2, 1], "tolerance": None}, "reversed range"),
    ({"tolerance": {"rel": -0.1}}, "less than the minimum of 0"),
    ({"tolerance": {"abs": float("nan")}}, "finite"),
    ({"expected": float("inf")}, "finite"),
    ({"expected": True}, "is not of type 'number'"),
    ({"surprise": 1}, "surprise"),
    ({"quick": "maybe"}, "quick: must be `skip`"),
    ({"quick": {"check": "range", "expected": [5, 1]}}, "quick.expected is a reversed range"),
    ({"kind": None}, "'kind' is a required property"),
    ({"kind": "echo"}, "is not one of"),
    ({"diagnosis": {"kind": "bug", "why": "long enough reason"}}, "diagnosis: must be"),
    # the error of the branch the entry was meant for, not "'kind', 'why' were unexpected"
    ({"diagnosis": {"kind": "open", "why": "short"}}, r"diagnosis: must be .*\('short' is too short\)"),
    ({"id": "other-01-x"}, "must start with the paper key"),
    ({"id": "demo-1"}, "does not match"),
    ({"metric": ["x", "y"]},
     r"metric: must be one snake_case metric key \(a list of >= 2 keys for check: ordering\), got \['x', 'y'\]"),
    ({"metric": "Bad Key"}, "metric: must be one snake_case"),
])
def test_malformed_claims_name_the_file_and_claim(tmp_path, bad, msg):
    c = claim(**{k: v for k, v in bad.items() if v is not None})
    for k, v in bad.items():
        if v is None:
            c.pop(k, None)
    f = write(tmp_path, [c])
    with pytest.raises(ClaimsError, match=msg) as e:
        load_claims(f)
    assert str(f) in str(e.value) and (c["id"] in str(e.value))


def test_missing_keys_and_duplicates(tmp_path):
    c = claim()
    del c["metric"]
    with pytest.raises(ClaimsError, match="'metric' is a required property"):
        load_claims(write(tmp_path, [c]))
    f = write(tmp_path, [claim(), claim()])
    with pytest.raises(ClaimsError, match="demo-01-x: duplicate id") as e:
        load_claims(f)
    assert str(f) in str(e.value)


def test_duplicate_ids_across_files(tmp_path, monkeypatch):
    """Ids start with their file's paper key, so a clash across files needs a renamed paper;
    the cross-file check still names both files."""
    import servesim.analysis.claims as cl

    d = tmp_path / "claims"
    d.mkdir()
    for name in ("aa", "bb"):
        (d / f"{name}.yaml").write_text(yaml.safe_dump({"paper": name, "claims": [claim(id=f"{name}-01-x")]}))
    assert [c.id for c in load_all_claims(d)] == ["aa-01-x", "bb-01-x"]
    real = cl.load_claims
    monkeypatch.setattr(cl, "load_claims", lambda f, s=None: [
        cl.Claim(**{**c.__dict__, "id": "aa-01-x"}) for c in real(f, s)])
    with pytest.raises(ClaimsError, match=r"bb\.yaml: claim aa-01-x: duplicate id \(also in .*aa\.yaml\)"):
        load_all_claims(d)


def test_paper_must_match_file_name(tmp_path):
    f = write(tmp_path, [claim()])
    g = f.with_name("other.yaml")
    f.rename(g)
    with pytest.raises(ClaimsError, match="paper is 'demo' but the file is named other.yaml"):
        load_claims(g)


def test_duplicate_yaml_keys_are_errors(tmp_path):
    f = write(tmp_path, [claim()])
    text = f.read_text()
    assert "  id: demo-01-x\n" in text
    f.write_text(text.replace("  id: demo-01-x\n", "  id: demo-01-x\n  kind: stated\n"))
    with pytest.raises(ClaimsError, match=r"duplicate key 'kind'") as e:
        load_claims(f)
    assert str(f) in str(e.value) and "line" in str(e.value)


def test_strict_yaml_load():
    assert strict_yaml_load("a: yes\nb: true\nc: off\n") == {"a": "yes", "b": True, "c": "off"}
    assert strict_yaml_load("base: &b {x: 1}\nd:\n  <<: *b\n  x: 2\n") == {"base": {"x": 1}, "d": {"x": 2}}
    with pytest.raises(StrictYAMLError, match=r"^f\.yaml: line 3: duplicate key 'x' \(first at line 2\)"):
        strict_yaml_load("a:\n  x: 1\n  x: 2\n", source="f.yaml")
    with pytest.raises(StrictYAMLError, match=r"^f\.yaml: not valid YAML: line \d+, column \d+: "):
        strict_yaml_load("a: [1\n", source="f.yaml")


def test_report_files(tmp_path):
    write(tmp_path, [claim(), claim(id="demo-02-x", not_reproducible="needs production telemetry"),
                     claim(id="demo-03-x", kind="stated")])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10})
    s = write_report(tmp_path, "quick", tmp_path / "r.md", tmp_path / "r.csv")
    assert s["PASS"] == 1 and s["NOT-REPRODUCIBLE"] == 1 and s["CONSISTENT"] == 1 and s["total"] == 3
    assert s["per_kind"]["stated"]["CONSISTENT"] == 1
    header = (tmp_path / "r.csv").read_text().splitlines()[0]
    assert header == ("id,paper,kind,where,claim,expected,observed,tolerance,status,null_system,null_observed,"
                      "null_status,diagnosis,reason,readings")
    md = (tmp_path / "r.md").read_text()
    assert "needs production telemetry" in md and "| demo |" in md


def test_project_claims_files_load(project_root):
    """Every claims file of the project validates against the schema; ids are unique across papers."""
    claims = load_all_claims(project_root / "workflow" / "claims")
    ids = [c.id for c in claims]
    assert len(ids) == len(set(ids))
    assert {c.kind for c in claims} <= set(KINDS)
    assert to_markdown([], "quick").startswith("# Claims report")


def _readme_rows(section: str, title_start: str) -> dict[tuple[str, str], list[str]]:
    """{(paper, scale): cells after those two} of the first table after `title_start`."""
    if title_start not in section:
        return {}
    part = section.split(title_start, 1)[1]
    rows = {}
    for line in part.splitlines()[2:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[(cells[0], cells[1])] = cells[2:]
    return rows


NR_COL_MEASURED = 1 + 3 + 4  # after the count, PASS / WEAK / FAIL and the 4 diagnosis columns
NR_COL_ECHO = 3 + 2  # after the 3 echo kinds and CONSISTENT / INCONSISTENT


def test_readme_claims_table_agrees_with_claims_files(project_root):
    """The README's generated tables count every claim of each kind at both scales, and the page they
    point to lists every NOT-REPRODUCIBLE claim with its reason."""
    from servesim.analysis.claims import README_BEGIN, README_END

    text = (project_root / "README.md").read_text()
    section = text.split(README_BEGIN, 1)[1].split(README_END, 1)[0]
    claims = load_all_claims(project_root / "workflow" / "claims")
    measured = _readme_rows(section, "Measured claims")
    echo = _readme_rows(section, "Stated settings")
    stale = "README claims table is stale: regenerate it with `servesim claims --readme README.md`"
    for scale in ("quick", "full"):
        assert ("**all**", scale) in measured and ("**all**", scale) in echo, \
            f"README claims tables have no {scale} totals row: run `servesim claims --readme README.md`"
        m, e = measured[("**all**", scale)], echo[("**all**", scale)]
        assert int(m[0]) == sum(c.kind == "measured" for c in claims), stale
        for i, k in enumerate(KINDS[1:]):
            assert int(e[i]) == sum(c.kind == k for c in claims), stale
        nr = [c for c in claims if c.not_reproducible]
        assert int(m[NR_COL_MEASURED]) + int(e[NR_COL_ECHO]) == len(nr), stale
    from servesim.analysis.claims import NR_DOC

    assert f"`{NR_DOC}`" in section, f"the README's claims section does not point to {NR_DOC}"
    doc = (project_root / NR_DOC).read_text()
    for c in (c for c in claims if c.not_reproducible):
        assert f"`{c.id}`" in doc, f"{c.id} (NOT-REPRODUCIBLE) missing from {NR_DOC}: {stale}"


def test_readme_section_round_trips_through_the_parser(tmp_path):
    """The parser the README test uses reads what readme_section writes, quick beside full."""
    write(tmp_path, [claim(), claim(id="demo-02-x", kind="arithmetic"),
                     claim(id="demo-03-x", not_reproducible="needs production telemetry")])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10})
    rows = check_claims(tmp_path, "quick")
    sec = readme_section(rows, "quick", full_rows=[], full_sources={"demo": "snapshot at abc"})
    m, e = _readme_rows(sec, "Measured claims"), _readme_rows(sec, "Stated settings")
    assert m[("**all**", "quick")][:4] == ["2", "1", "0", "0"] and m[("**all**", "quick")][NR_COL_MEASURED] == "1"
    assert e[("**all**", "quick")][:3] == ["0", "1", "0"] and e[("**all**", "quick")][3] == "1"
    assert m[("**all**", "full")][0] == "0" and m[("demo", "full")][-1] == "snapshot at abc"


def test_update_readme_writes_the_not_reproducible_page(tmp_path):
    """The README's section names the count and the page; the page lists each claim with its reason."""
    from servesim.analysis.claims import NR_DOC, README_BEGIN, README_END
    from servesim.analysis.claims_pages import update_readme

    write(tmp_path, [claim(), claim(id="demo-03-x", not_reproducible="needs production telemetry")])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10})
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{README_BEGIN}\nSTALE-TABLE\n{README_END}\n\n## After\n")
    update_readme(readme, check_claims(tmp_path, "quick"), "quick")
    text = readme.read_text()
    assert "STALE-TABLE" not in text and "## After" in text and f"Not reproducible: 1 claims, each with its reason, in `{NR_DOC}`" in text
    doc = (tmp_path / NR_DOC).read_text()
    assert "## demo" in doc and "- `demo-03-x`" in doc and "needs production telemetry" in doc
    assert "`demo-01" not in doc  # only the NOT-REPRODUCIBLE ones
    from servesim.analysis.claims import UNMET_DOC

    assert not (tmp_path / UNMET_DOC).exists()  # no snapshot rows: no unmet page
    update_readme(readme, check_claims(tmp_path, "quick"), "quick", full_rows=[])
    assert (tmp_path / UNMET_DOC).read_text().startswith("# What each unmet claim needs")


def test_not_reproducible_claim_needs_no_metric(tmp_path):
    write(tmp_path, [claim(metric="absent", not_reproducible="needs production telemetry")])
    notebook(tmp_path, "demo", "fig01_x", {"x": 1})
    [row] = check_claims(tmp_path, "quick")
    assert row["status"] == "NOT-REPRODUCIBLE" and row["observed"] == ""


def test_null_metric_is_not_checked_and_names_the_key(tmp_path):
    # a notebook that could not measure a value writes null: not a FAIL, and no crash in orderings
    write(tmp_path, [claim(id="demo-01-a", metric="x", check="lt", expected=1.0, tolerance=None),
                     claim(id="demo-02-a", metric=["x", "y"], check="ordering", expected="ascending", tolerance=None)])
    notebook(tmp_path, "demo", "fig01_x", {"x": None, "y": 2.0}, scale="full")
    rows = check_claims(tmp_path, "full")
    assert [r["status"] for r in rows] == ["NOT-CHECKED", "NOT-CHECKED"]
    assert all("['x']" in r["reason"] for r in rows)


# ---- generated malformed entries (issue 12) ---------------------------------------------------

_JUNK = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=True),
                  st.text(max_size=8), st.lists(st.integers(-3, 3), max_size=3),
                  st.dictionaries(st.sampled_from(["abs", "rel", "check", "kind", "why", "x"]),
                                  st.one_of(st.integers(-2, 2), st.text(max_size=4)), max_size=3))
_KEYS = ["source", "kind", "where", "claim", "figure", "metric", "check", "expected", "tolerance", "quick",
         "not_reproducible", "note", "diagnosis", "bogus"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.sampled_from(_KEYS), st.one_of(st.just("<drop>"), _JUNK)), min_size=1, max_size=3))
def test_generated_malformed_claims_give_a_clear_error(tmp_path, edits):
    """Any mutation of a valid entry either still validates or raises ClaimsError naming the file
    and the claim id; never another exception."""
    c = claim(id="demo-01-x")
    for key, value in edits:
        if value == "<drop>":
            c.pop(key, None)
        else:
            c[key] = value
    f = tmp_path / "workflow" / "claims" / "demo.yaml"
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(yaml.safe_dump({"paper": "demo", "claims": [c]}, allow_unicode=True))
    try:
        [loaded] = load_claims(f)
    except ClaimsError as e:
        assert str(f) in str(e) and "demo-01-x" in str(e), str(e)
        return
    # it validated: then it is a usable claim
    assert loaded.kind in KINDS and loaded.full.kind in {"approx", "range", "lt", "le", "gt", "ge", "ordering", "true"}
    for x in ([loaded.full.expected] if not isinstance(loaded.full.expected, list) else loaded.full.expected):
        assert not isinstance(x, float) or math.isfinite(x)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.sampled_from(list("ab:- \n[]{}'\"#&*!|>,1.")), max_size=60))
def test_generated_malformed_yaml_gives_a_clear_error(tmp_path, text):
    f = tmp_path / "demo.yaml"
    f.write_text(text)
    with pytest.raises(ClaimsError) as e:
        load_claims(f)
    assert str(f) in str(e.value)


def test_statuses_constant():
    assert STATUSES == ("PASS", "WEAK", "FAIL", "CONSISTENT", "INCONSISTENT", "NOT-REPRODUCIBLE", "PENDING", "NOT-CHECKED")


_CHECKS = [claim(), claim(check="range", expected=[1, 2], tolerance=None),
           claim(check="lt", expected=3, tolerance=None),
           claim(check="true", expected=None, tolerance=None),
           claim(check="ordering", expected="ascending", metric=["x", "y"], tolerance=None)]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(which=st.integers(0, len(_CHECKS) - 1), x=_JUNK, y=_JUNK, kind=st.sampled_from(KINDS))
def test_generated_metric_values_give_a_status_or_a_clear_error(tmp_path, which, x, y, kind):
    """Whatever a notebook writes, the checker returns a known status or a ClaimsError naming the
    claims file, the claim and the metrics file; a PASS needs a finite number (or JSON true)."""
    import shutil

    shutil.rmtree(tmp_path / "results", ignore_errors=True)
    c = {**_CHECKS[which], "kind": kind}
    if kind != "measured":
        c.pop("null_system")
    f = write(tmp_path, [c])
    notebook(tmp_path, "demo", "fig01_x", {"x": x, "y": y})
    try:
        [row] = check_claims(tmp_path, "quick")
    except ClaimsError as e:
        assert str(f) in str(e) and "demo-01-x" in str(e) and "metrics.json" in str(e), str(e)
        return
    assert row["status"] in STATUSES
    if row["status"] in ("PASS", "CONSISTENT"):
        vals = [x, y] if which == 4 else [x]
        assert all(v is True if which == 3 else (isinstance(v, (int, float)) and not isinstance(v, bool)
                                                  and math.isfinite(v)) for v in vals)


# ---- nulls (issue 26): a PASS must be able to fail ----------------------------------------------

def _null(metric="x_null", system="the naive demo system"):
    return {"system": system, "metric": metric}


@pytest.mark.parametrize("x,x_null,status,null_status", [
    (10.5, 30.0, "PASS", "FAIL"),      # the claim holds and its null does not: a reproduction
    (10.5, 9.5, "WEAK", "PASS"),       # the null passes the same check: WEAK
    (10.5, None, "WEAK", "NOT-MEASURED"),
    (30.0, 10.0, "FAIL", "PASS"),      # a FAIL stays a FAIL whatever the null does
])
def test_null_decides_pass_or_weak(tmp_path, x, x_null, status, null_status):
    write(tmp_path, [claim(null_system=_null(), diagnosis={"kind": "open", "why": "a demo failure reason"})])
    notebook(tmp_path, "demo", "fig01_x", {"x": x, "x_null": x_null})
    [row] = check_claims(tmp_path, "quick")
    assert (row["status"], row["null_status"]) == (status, null_status)
    assert row["null_system"] == "the naive demo system"
    if status == "WEAK":
        assert row["reason"].startswith("WEAK:")
    assert summary([row])[status] == 1


def test_undeclared_null_is_weak_and_none_keeps_pass(tmp_path):
    write(tmp_path, [claim(null_system=None), claim(id="demo-02-x")])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.0})
    rows = {r["id"]: r for r in check_claims(tmp_path, "quick")}
    assert rows["demo-01-x"]["status"] == "WEAK" and rows["demo-01-x"]["null_status"] == "MISSING"
    assert rows["demo-02-x"]["status"] == "PASS" and rows["demo-02-x"]["null_status"] == "NONE"
    assert rows["demo-02-x"]["null_system"].startswith("none: a plain measurement")


def test_ordering_null_replaces_the_system_under_test(tmp_path):
    c = claim(check="ordering", expected="ascending", metric=["ours", "baseline"], tolerance=None,
              null_system=_null(["naive", "baseline"]))
    write(tmp_path, [c])
    notebook(tmp_path, "demo", "fig01_x", {"ours": 1.0, "baseline": 2.0, "naive": 1.5})
    [row] = check_claims(tmp_path, "quick")
    assert row["status"] == "WEAK" and row["null_observed"] == "[1.5, 2]"
    notebook(tmp_path, "demo", "fig01_x", {"ours": 1.0, "baseline": 2.0, "naive": 2.5})
    [row] = check_claims(tmp_path, "quick")
    assert row["status"] == "PASS" and row["null_status"] == "FAIL"


def test_null_in_another_figure(tmp_path):
    write(tmp_path, [claim(null_system={**_null(), "figure": "fig02_naive"})])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.0})
    with pytest.raises(ClaimsError, match="demo-01-x.*null's figure fig02_naive"):
        check_claims(tmp_path, "quick")
    notebook(tmp_path, "demo", "fig02_naive", {"x_null": 50.0})
    [row] = check_claims(tmp_path, "quick")
    assert row["status"] == "PASS"


def test_null_metric_is_checked_even_where_the_claim_is_not(tmp_path):
    """A missing null key is an error whenever the claim's own metrics exist (so a test-scale run
    proves every null is written), also where the quick scale skips the check."""
    write(tmp_path, [claim(null_system=_null(), quick="skip")])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.0})
    with pytest.raises(ClaimsError, match=r"demo-01-x.*no null metric\(s\) \['x_null'\]"):
        check_claims(tmp_path, "quick")


@pytest.mark.parametrize("edit,msg", [
    ({"null_system": {"system": "a naive demo system", "metric": ["a", "b"]}}, "null_system.metric must have"),
    ({"check": "ordering", "expected": "ascending", "metric": ["a", "b"], "tolerance": None,
      "null_system": {"system": "a naive demo system", "metric": "a"}}, "a list of 2 keys"),
    ({"kind": "stated", "null_system": {"none": "a stated setting of the demo"}}, "null_system is for measured"),
    ({"tolerance": {"rel": 0.5}}, "needs a written reason: add tolerance_why"),
    ({"quick": {"check": "approx", "expected": 10, "tolerance": {"rel": 1.0}}}, "quick.tolerance rel 1.0"),
    ({"null_system": {"none": "short"}}, "null_system"),
    ({"null_system": {"system": "a naive demo system"}}, "null_system"),
])
def test_malformed_nulls_and_loose_tolerances(tmp_path, edit, msg):
    f = write(tmp_path, [claim(**edit)])
    with pytest.raises(ClaimsError, match=msg) as e:
        load_claims(f)
    assert "demo-01-x" in str(e.value)


def test_loose_tolerance_with_its_reason_loads(tmp_path):
    f = write(tmp_path, [claim(tolerance={"rel": 0.6}, tolerance_why="the paper reads it off a log-scale plot")])
    [c] = load_claims(f)
    assert c.tolerance_why.startswith("the paper")


def test_paper_filter_reads_only_that_file(tmp_path):
    write(tmp_path, [claim()])
    write(tmp_path, [claim(id="other-01-x", tolerance={"rel": 0.9})], paper="other")  # malformed
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.0})
    assert [r["id"] for r in check_claims(tmp_path, "quick", papers=["demo"])] == ["demo-01-x"]
    with pytest.raises(ClaimsError, match="other-01-x"):
        check_claims(tmp_path, "quick")
    with pytest.raises(ClaimsError, match="no claims file for paper"):
        check_claims(tmp_path, "quick", papers=["nope"])


# ---- censored values: a bound is not a measurement ----------------------------------------------

@pytest.mark.parametrize("check,value,bound,verdict", [
    (Check("ge", 1.2), 3.0, "lower", True),                     # every value >= 3 holds
    (Check("ge", 5.0), 3.0, "lower", None),                     # 3 fails, 6 holds: open
    (Check("le", 2.0), 3.0, "lower", False),                    # every value >= 3 fails
    (Check("lt", 3.0), 3.0, "lower", False),
    (Check("approx", 2.5, {"rel": 0.25}), 3.0, "lower", None),  # 3.0 inside, 4.0 outside: open
    (Check("approx", 2.5, {"rel": 0.1}), 3.0, "lower", False),  # the bound is above the band
    (Check("approx", 2.5, {"rel": 0.25}), 2.0, "upper", None),
    (Check("range", [1, 25]), 0.0, "upper", False),
    (Check("gt", 1.0), 3.0, "unknown", None),
    (Check("approx", 2.5, {"rel": 0.25}), 3.0, None, True),     # measured: as evaluate
    (Check("approx", 0.0, {"abs": 0.5}), 0.4, "upper", None),   # abs alone, around 0
    (Check("approx", 2.0, {"abs": 0.1, "rel": 0.5}), 2.5, "lower", None),   # the wider one: [1, 3]
    (Check("approx", 2.0, None), 2.0, "lower", False),          # no tolerance accepts nothing
])
def test_a_bound_decides_a_check_only_when_every_allowed_value_agrees(check, value, bound, verdict):
    assert decide(check, value, bound) is verdict


def test_an_ordering_on_bounds_is_decided_pairwise():
    asc = Check("ordering", "ascending")
    assert decide(asc, [1.0, 2.0], [None, "lower"]) is True      # 1 < every value >= 2
    assert decide(asc, [1.0, 2.0], ["lower", None]) is None       # 1.5 < 2, 3 > 2
    assert decide(asc, [3.0, 2.0], ["lower", None]) is False      # every value >= 3 exceeds 2
    assert decide(Check("ordering", "descending"), [2.0, 1.0], ["lower", "upper"]) is True


def test_a_censored_metric_is_not_checked_and_a_censored_null_makes_weak(tmp_path):
    write(tmp_path, [claim(null_system=_null(), expected=2.5, tolerance={"rel": 0.25}),
                     claim(id="demo-02-x", metric="y", check="ge", expected=1.2, tolerance=None, null_system=_null())])
    notebook(tmp_path, "demo", "fig01_x", {"x": 3.0, "x__bound": "lower", "y": 3.0, "y__bound": "lower",
                                           "x_null": 2.0, "x_null__bound": "lower"})
    rows = {r["id"]: r for r in check_claims(tmp_path, "quick")}
    x, y = rows["demo-01-x"], rows["demo-02-x"]
    assert x["status"] == "NOT-CHECKED" and x["reason"].startswith("censored: x is a lower bound")
    assert (y["status"], y["null_status"]) == ("WEAK", "PASS")   # every null value >= 2 meets ge 1.2
    notebook(tmp_path, "demo", "fig01_x", {"x": 3.0, "y": 3.0, "y__bound": "lower", "x_null": 1.0,
                                           "x_null__bound": "lower"})
    rows = {r["id"]: r for r in check_claims(tmp_path, "quick")}
    y = rows["demo-02-x"]
    assert (y["status"], y["null_status"]) == ("WEAK", "CENSORED") and "bound" in y["reason"]


def test_a_bound_of_another_kind_is_an_error_naming_the_key(tmp_path):
    write(tmp_path, [claim()])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.0, "x__bound": "below"})
    with pytest.raises(ClaimsError, match=r"demo-01-x.*x__bound = 'below'"):
        check_claims(tmp_path, "quick")


def _with_readings(tmp: Path, claims: list[dict], readings: dict) -> Path:
    f = write(tmp, claims)
    f.write_text(yaml.safe_dump({"paper": "demo", "readings": readings, "claims": claims}))
    return f


READINGS = {"oracle": "the demo system with a forecast that sees the future (a diagnostic reading)"}


def test_a_reading_is_judged_with_the_claims_check_and_reported_beside_its_status(tmp_path):
    """A claim's value under a named reading: the claim's own check on it, in the report's
    readings column and section; the claim's status stays the default reading's."""
    fail = claim(diagnosis={"kind": "open", "why": "a demo failure reason"},
                 readings=[{"reading": "oracle", "metric": "x_oracle"}])
    order = claim(id="demo-02-x", check="ordering", expected="ascending", metric=["a", "b"], tolerance=None,
                  readings=[{"reading": "oracle", "metric": ["a_oracle", "b"], "figure": "fig02_y"}])
    _with_readings(tmp_path, [fail, order], READINGS)
    notebook(tmp_path, "demo", "fig01_x", {"x": 20.0, "x_oracle": 10.5, "a": 1.0, "b": 2.0})
    notebook(tmp_path, "demo", "fig02_y", {"a_oracle": 3.0, "b": 2.0})
    rows = {r["id"]: r for r in check_claims(tmp_path, "quick")}
    assert rows["demo-01-x"]["status"] == "FAIL" and rows["demo-01-x"]["readings"] == "oracle: 10.5 (PASS)"
    assert rows["demo-02-x"]["status"] == "PASS" and rows["demo-02-x"]["readings"] == "oracle: [3, 2] (FAIL)"
    md = to_markdown(list(rows.values()), "quick")
    assert "## Measured claims under named readings" in md
    assert "- `oracle`: 2 claims; the check holds under it for 1: 1 that FAIL by default, and it fails for 1" in md
    assert "| demo-01-x | FAIL | 20 | oracle | 10.5 | PASS |" in md
    notebook(tmp_path, "demo", "fig01_x", {"x": 20.0, "x_oracle": float("nan"), "a": 1.0, "b": 2.0})
    assert check_claims(tmp_path, "quick")[0]["readings"] == "oracle: nan (NOT-MEASURED)"


@pytest.mark.parametrize("readings,entry,needle", [
    ({}, {"reading": "oracle", "metric": "x_oracle"}, "reading 'oracle' is not defined in the file's readings"),
    (READINGS, {"reading": "oracle", "metric": ["x_oracle", "y"]}, r"readings\[0\].metric must have the claim's shape"),
    (READINGS, {"reading": "oracle"}, "readings"),
])
def test_bad_readings_are_named(tmp_path, readings, entry, needle):
    f = _with_readings(tmp_path, [claim(readings=[entry])], readings)
    with pytest.raises(ClaimsError, match=needle):
        load_claims(f)


def test_a_reading_metric_its_figure_lacks_is_an_error(tmp_path):
    _with_readings(tmp_path, [claim(readings=[{"reading": "oracle", "metric": "x_oracle"}])], READINGS)
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.0})
    with pytest.raises(ClaimsError, match="demo-01-x.*no metric.*x_oracle.*of reading oracle"):
        check_claims(tmp_path, "quick")


def test_a_reading_run_only_at_full_scale_is_not_read_at_quick(tmp_path):
    _with_readings(tmp_path, [claim(readings=[{"reading": "oracle", "metric": "x_oracle", "scales": ["full"]}])],
                   READINGS)
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.0})
    assert check_claims(tmp_path, "quick")[0]["readings"] == ""
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.0}, scale="full")
    with pytest.raises(ClaimsError, match="x_oracle.*of reading oracle"):
        check_claims(tmp_path, "full")


def test_the_unmet_page_groups_each_non_pass_claim_by_what_it_needs(tmp_path):
    """docs/unmet-claims.md: a FAIL a reading passes, a FAIL none passes (with its diagnosis), a
    WEAK (with its null); PASSes and the echo kinds are not listed; the counts add up."""
    from servesim.analysis import unmet_doc
    from servesim.analysis.claims import UNMET_DOC

    by_reading = claim(diagnosis={"kind": "open", "why": "the demo link decides it"},
                       readings=[{"reading": "oracle", "metric": "x_oracle"}])
    no_reading = claim(id="demo-02-x", metric="y", diagnosis={"kind": "substitute-data", "why": "demo trace too short"},
                       readings=[{"reading": "oracle", "metric": "y_oracle"}])
    weak = claim(id="demo-03-x", metric="z", null_system={"system": "round-robin", "metric": "z_null"})
    passing = claim(id="demo-04-x", metric="w")
    stated = claim(id="demo-05-x", kind="stated", metric="v", expected=1)
    _with_readings(tmp_path, [by_reading, no_reading, weak, passing, stated], READINGS)
    notebook(tmp_path, "demo", "fig01_x", {"x": 20.0, "x_oracle": 10.5, "y": 30.0, "y_oracle": 40.0, "z": 10.0,
                                           "z_null": 10.2, "w": 10.0, "v": 3.0}, scale="full")
    rows = check_claims(tmp_path, "full")
    assert [unmet_doc.group(r) for r in rows] == ["reading", "no-reading", "weak", None, None]
    c = unmet_doc.counts(rows)
    assert (c["judged"], c["PASS"], c["WEAK"], c["FAIL, a reading gives it"]) == (4, 1, 1, 1)
    assert c["FAIL, no reading: substitute-data"] == 1 and c["FAIL, no reading: open"] == 0
    out = unmet_doc.write(tmp_path, rows, {"demo": "`results-full/` at abc"})
    text = out.read_text()
    assert out == tmp_path / UNMET_DOC
    assert "| demo | 4 | 1 | 1 | 1 | 0 | 1 | 0 | 0 | `results-full/` at abc |" in text
    assert "Holds under `oracle` 10.5 (PASS). Diagnosis open: the demo link decides it" in text
    assert "No named reading passes it (tried: `oracle` 40 (FAIL)). Diagnosis substitute-data: demo trace too short" in text
    assert "Its null, round-robin, gives 10.2 (PASS)" in text
    assert "`demo-04-x`" not in text and "`demo-05-x`" not in text
    assert unmet_doc.write(tmp_path, None) is None  # no snapshot: no page


def test_the_unmet_page_lists_every_non_pass_claim_of_the_published_snapshot(project_root):
    """The page in docs/ is the one the published report gives (regenerate: `servesim claims --readme
    README.md`), and the README's claims section points to it."""
    from servesim.analysis import snapshot, unmet_doc
    from servesim.analysis.claims import README_BEGIN, README_END, UNMET_DOC

    rows = snapshot.read_report(project_root)
    if rows is None:
        pytest.skip("no published snapshot in this checkout")
    section = (project_root / "README.md").read_text().split(README_BEGIN, 1)[1].split(README_END, 1)[0]
    assert f"`{UNMET_DOC}`" in section, f"the README's claims section does not point to {UNMET_DOC}"
    sources = {p: f"`{snapshot.SNAPSHOT}/` at {st.get('commit', '?')[:10]}" for p, st in snapshot.stamps(project_root).items()}
    assert (project_root / UNMET_DOC).read_text() == unmet_doc.page(rows, sources), \
        f"{UNMET_DOC} is stale: regenerate it with `servesim claims --readme README.md`"


def test_a_check_that_cannot_fail_is_weak_whatever_it_measures(tmp_path):
    """`null_system: {cannot_fail: why}`: the check holds and the claim is WEAK with the reason;
    a FAIL stays a FAIL (its check did fail)."""
    why = "a moving average has nothing to fit, so every implementation trains it faster"
    write(tmp_path, [claim(null_system={"cannot_fail": why}),
                     claim(id="demo-02-x", metric="y", null_system={"cannot_fail": why},
                           diagnosis={"kind": "open", "why": "the demo would settle it"})])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.0, "y": 30.0})
    a, b = check_claims(tmp_path, "quick")
    assert (a["status"], a["null_status"], a["null_system"]) == ("WEAK", "CANNOT-FAIL", f"cannot fail: {why}")
    assert a["reason"].startswith("WEAK: its check holds for any system (cannot fail: a moving average")
    assert (b["status"], b["null_status"]) == ("FAIL", "CANNOT-FAIL")
