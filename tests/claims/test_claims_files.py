"""Structure checks of the claims files (workflow/claims/<paper>.yaml).

The claims checker (`servesim claims`) reads these same keys; this test catches a malformed entry
before a workflow run does. Format: workflow/claims/README.md.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CLAIMS_DIR = ROOT / "workflow" / "claims"
SPECS_DIR = ROOT / ".." / "shared" / "specs"
PAPERS = ("sageserve", "preserve", "oserve", "aegaeon")

REQUIRED = ("id", "source", "kind", "where", "claim", "figure", "metric", "check")
OPTIONAL = ("expected", "tolerance", "quick", "not_reproducible", "note")
CHECKS = {"approx", "range", "lt", "le", "gt", "ge", "ordering", "true"}
SOURCES = {"sageserve": {"journal", "conference"}}
ID_RE = re.compile(r"^(?P<paper>[a-z]+)-(?P<num>\d{2})(?P<letter>[a-z]?)-[a-z0-9]+(-[a-z0-9]+)*$")
NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")

# Metric names of the first figures, fixed in their notebooks and claims.
CONTRACT_METRICS = {
    ("sageserve", "fig02_tps_boxplots"): {
        f"{m}_{g}_tps_{q}"
        for m in ("llama2_70b", "bloom_176b")
        for g in ("a100", "h100")
        for q in ("q1", "median", "q3")
    },
    ("aegaeon", "tab01_kv_cache"): {
        "kv_kib_per_token_qwen_7b",
        "kv_kib_per_token_internlm2_5_7b_chat",
        "kv_kib_per_token_llama_13b",
        "kv_kib_per_token_qwen_72b",
    },
    ("aegaeon", "fig04_active_models"): {
        "expected_active_formula",
        "expected_active_fraction",
        "simulated_active_mean",
        "aggregate_rps",
        "models_per_gpu_bound",
    },
    ("oserve", "tab01_spatial_cv"): {f"cv_s{i}" for i in range(1, 6)},
    ("oserve", "tab02_temporal_cv"): {f"cv_t{i}" for i in range(1, 5)},
    ("oserve", "tab01_spatial_speedup"): {f"speedup_s{i}" for i in range(1, 6)},
    ("oserve", "tab02_temporal_speedup"): {f"speedup_t{i}" for i in range(1, 5)},
}


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def load(paper: str) -> dict:
    path = CLAIMS_DIR / f"{paper}.yaml"
    assert path.exists(), f"{path} is missing"
    with path.open() as fh:
        doc = yaml.safe_load(fh)
    assert isinstance(doc, dict), f"{path}: top level must be a mapping"
    return doc


def check_value(kind: str, expected: object, metric: object, where: str) -> list[str]:
    """Errors in one (check, expected, metric) triple; `where` names the entry."""
    errs: list[str] = []
    if kind not in CHECKS:
        return [f"{where}: unknown check {kind!r} (valid: {sorted(CHECKS)})"]
    if kind == "ordering":
        if not (isinstance(metric, list) and len(metric) >= 2):
            errs.append(f"{where}: ordering needs a list of >= 2 metric keys")
        if expected not in ("ascending", "descending"):
            errs.append(f"{where}: ordering expects 'ascending' or 'descending', got {expected!r}")
    elif kind == "range":
        if not (isinstance(expected, list) and len(expected) == 2 and all(map(_is_number, expected))
                and expected[0] <= expected[1]):
            errs.append(f"{where}: range expects [lo, hi] with lo <= hi, got {expected!r}")
    elif kind == "true":
        if expected is not None:
            errs.append(f"{where}: check 'true' takes no expected value")
    else:
        if not _is_number(expected):
            errs.append(f"{where}: {kind} expects a number, got {expected!r}")
    if kind != "ordering" and not (isinstance(metric, str) and NAME_RE.match(metric)):
        errs.append(f"{where}: metric must be one snake_case key, got {metric!r}")
    if kind == "ordering" and isinstance(metric, list):
        bad = [m for m in metric if not (isinstance(m, str) and NAME_RE.match(m))]
        if bad:
            errs.append(f"{where}: metric keys not snake_case: {bad}")
    return errs


def entry_errors(paper: str, c: dict) -> list[str]:
    """All format errors of one claim entry."""
    cid = c.get("id", "<no id>")
    where = f"{paper}.yaml:{cid}"
    errs = [f"{where}: missing key {k!r}" for k in REQUIRED if k not in c]
    errs += [f"{where}: unknown key {k!r}" for k in c if k not in REQUIRED + OPTIONAL]
    if errs:
        return errs
    m = ID_RE.match(str(cid))
    if not m or m["paper"] != paper:
        errs.append(f"{where}: id must look like '{paper}-NN[a]-slug'")
    allowed = SOURCES.get(paper, {"paper"})
    if c["source"] not in allowed:
        errs.append(f"{where}: source {c['source']!r} not in {sorted(allowed)}")
    for key in ("where", "claim"):
        if not (isinstance(c[key], str) and c[key].strip()):
            errs.append(f"{where}: {key} must be a non-empty string")
    if not (isinstance(c["figure"], str) and NAME_RE.match(c["figure"])):
        errs.append(f"{where}: figure must be a notebook name (snake_case), got {c['figure']!r}")
    kind = str(c["check"]).lower()  # tolerate an unquoted YAML `true`
    if kind != "true" and "expected" not in c:
        errs.append(f"{where}: missing key 'expected'")
    errs += check_value(kind, c.get("expected"), c["metric"], where)
    tol = c.get("tolerance")
    if kind == "approx":
        if not (isinstance(tol, dict) and tol and set(tol) <= {"abs", "rel"}
                and all(_is_number(v) and v >= 0 for v in tol.values())):
            errs.append(f"{where}: approx needs tolerance {{abs: x}} and/or {{rel: x}}, got {tol!r}")
    elif tol is not None:
        errs.append(f"{where}: tolerance only applies to approx")
    q = c.get("quick")
    if q is not None and q != "skip":
        if not (isinstance(q, dict) and "check" in q):
            errs.append(f"{where}: quick must be 'skip' or {{check: ..., expected: ...}}")
        else:
            errs += check_value(str(q["check"]).lower(), q.get("expected"), c["metric"], f"{where} (quick)")
    nr = c.get("not_reproducible")
    if nr is not None and not (isinstance(nr, str) and len(nr.strip()) >= 10):
        errs.append(f"{where}: not_reproducible must say why")
    return errs


@pytest.mark.parametrize("paper", PAPERS)
def test_claims_file_well_formed(paper: str) -> None:
    doc = load(paper)
    assert doc.get("paper") == paper, f"{paper}.yaml: 'paper' must be {paper!r}"
    claims = doc.get("claims")
    assert isinstance(claims, list) and claims, f"{paper}.yaml: 'claims' must be a non-empty list"
    errs = [e for c in claims for e in entry_errors(paper, c)]
    assert not errs, "\n".join(errs)


def test_ids_unique_across_papers() -> None:
    seen: dict[str, str] = {}
    dups = []
    for paper in PAPERS:
        for c in load(paper)["claims"]:
            if c["id"] in seen:
                dups.append(c["id"])
            seen[c["id"]] = paper
    assert not dups, f"duplicate claim ids: {dups}"


def test_contract_metric_names_used() -> None:
    """Claims on the contract figures use only the contract's metric names."""
    bad = []
    for paper in PAPERS:
        for c in load(paper)["claims"]:
            allowed = CONTRACT_METRICS.get((paper, c["figure"]))
            if allowed is None:
                continue
            metrics = c["metric"] if isinstance(c["metric"], list) else [c["metric"]]
            bad += [f"{c['id']}: {m}" for m in metrics if m not in allowed]
    assert not bad, f"metric names outside the contract: {bad}"


def _spec_claim_numbers(paper: str) -> set[int]:
    text = (SPECS_DIR / f"{paper}.md").read_text()
    sec = re.search(r"^## 4\. CLAIMS.*?$(.*?)^## 5\.", text, re.M | re.S)
    assert sec, f"{paper}.md: no '## 4. CLAIMS' section"
    return {int(n) for n in re.findall(r"^(\d+)\. ", sec.group(1), re.M)}


@pytest.mark.parametrize("paper", PAPERS)
def test_every_spec_claim_covered(paper: str) -> None:
    if not (SPECS_DIR / f"{paper}.md").exists():
        pytest.skip("../shared/specs not present")
    wanted = _spec_claim_numbers(paper)
    assert wanted, f"{paper}.md: no numbered claims found"
    ids = [str(c.get("id", "")) for c in load(paper)["claims"]]
    have = {int(m["num"]) for m in map(ID_RE.match, ids) if m}
    assert not wanted - have, f"{paper}: spec claims without an entry: {sorted(wanted - have)}"
    assert not have - wanted, f"{paper}: entries for claims the spec lacks: {sorted(have - wanted)}"


def test_entry_errors_catch_bad_entries() -> None:
    """The validator itself rejects typical mistakes."""
    good = {"id": "aegaeon-08-x", "source": "paper", "where": "§3", "claim": "c", "figure": "fig04_a",
            "metric": "m", "check": "approx", "expected": 1.0, "tolerance": {"abs": 0.1}}
    assert entry_errors("aegaeon", good) == []
    assert entry_errors("aegaeon", {**good, "tolerance": None})
    assert entry_errors("aegaeon", {**good, "id": "oserve-08-x"})
    assert entry_errors("aegaeon", {**good, "check": "near"})
    assert entry_errors("aegaeon", {**good, "check": "ordering", "expected": "ascending"})
    assert entry_errors("aegaeon", {**good, "check": "range", "expected": [2, 1], "tolerance": None})
    assert entry_errors("aegaeon", {**good, "quick": {"check": "gt"}})
    assert entry_errors("sageserve", {**good, "id": "sageserve-01-x"})  # source must be journal|conference


def test_claims_map_lists_every_metric() -> None:
    """docs/claims-map.md (what the notebook authors read) names every (notebook, metric)."""
    text = (ROOT / "docs" / "claims-map.md").read_text()
    sections = {}
    for block in re.split(r"^### ", text, flags=re.M)[1:]:
        head, _, body = block.partition("\n")
        sections[head.strip().strip("`")] = set(re.findall(r"^- `([a-z0-9_]+)`", body, re.M))
    missing = []
    for paper in PAPERS:
        for c in load(paper)["claims"]:
            metrics = c["metric"] if isinstance(c["metric"], list) else [c["metric"]]
            listed = sections.get(f"{paper}/{c['figure']}", set())
            missing += [f"{paper}/{c['figure']}: {m}" for m in metrics if m not in listed]
    assert not missing, f"docs/claims-map.md is stale: {missing[:10]}"
    assert text == render_claims_map(), (
        "docs/claims-map.md is stale: run `python tests/claims/test_claims_files.py`")


def render_claims_map() -> str:
    """The text of docs/claims-map.md, generated from the claims files."""
    import collections
    out = ["# Claims map: which notebook writes which metric",
    "",
    "Generated by `python tests/claims/test_claims_files.py` from `workflow/claims/<paper>.yaml`",
    "(the claims files are the source of truth; a test checks this page is current). Each notebook",
    "`notebooks/<paper>/<figure>.ipynb` must write these keys to",
    "`results/<scale>/<paper>/<figure>/metrics.json` via `FigureOutputs.write_metrics`. Booleans are",
    "JSON `true`/`false` (for `check: \"true\"`); everything else is a number. Units are in the key",
    "(`_s`, `_ms`, `_pct` = percent 0-100, `_frac` or no suffix = fraction or ratio).",
    "Each line: metric, then the claims that read it with [check expected]; how each metric is",
    "defined (baseline, percentile, run) is in the claim's `note` in the YAML. A notebook may write",
    "more keys than listed.",
    "",
    "NR = NOT-REPRODUCIBLE claim. The checker (`servesim.analysis.claims`) reads the figure's",
    "metrics.json before it looks at the NR status, and a missing key is an error. So a notebook",
    "that exists must write NR claims' keys too: the value it computes on our substitute (e.g.",
    "simulated instance-hours on the synthetic trace, labelled as such in the notebook), or JSON",
    "`null` when it computes nothing comparable. Never the paper's number. Figures whose every",
    "claim is NR (e.g. SageServe `fig06_telemetry`, Aegaeon `fig18_production_utilisation`) need",
    "no notebook.",
    "",
    "Conventions used across papers:",
    "- `paper_arithmetic` (per paper): recomputes numbers the paper derives from its own stated",
    "  values (sums, ratios, products), taking the paper's inputs as literals quoted in the notebook.",
    "  Several of these are expected to FAIL: they expose the paper's arithmetic slips.",
    "- `sec*_setup` / `sec4_parameters` / `sec4_scheduling`: read the defaults of the system config",
    "  (`servesim.systems.<paper>`) and catalog, to show the artifact runs the paper's setup.",
    "- Savings/reduction percentages are `100 * (1 - ours/baseline)`; gains/speedups are",
    "  `baseline/ours` latency ratios (>1 is better), stated per key below where it matters.",
    ""]
    summary = []
    for p in PAPERS:
        doc = yaml.safe_load((CLAIMS_DIR / f"{p}.yaml").read_text())
        cl = doc["claims"]
        nr = sum(1 for c in cl if c.get("not_reproducible"))
        q = sum(1 for c in cl if not c.get("not_reproducible") and c.get("quick") not in (None, "skip"))
        qsame = sum(1 for c in cl if not c.get("not_reproducible") and "quick" not in c)
        summary.append(f"| {p} | {len(cl)} | {nr} | {q} | {qsame} | {sum(1 for c in cl if c.get('quick') == 'skip')} |")
        by = collections.OrderedDict()
        for c in cl:
            ms = c["metric"] if isinstance(c["metric"], list) else [c["metric"]]
            for m in ms:
                exp = c.get("expected")
                chk = str(c["check"]) + ("" if exp is None else f" {exp}")
                by.setdefault(c["figure"], collections.OrderedDict()).setdefault(m, []).append(
                    f"{c['id']} [{chk}]" + (" (NR)" if c.get("not_reproducible") else ""))
        out.append(f"## {p}\n")
        for fig in sorted(by):
            out.append(f"### `{p}/{fig}`\n")
            for m, ids in by[fig].items():
                out.append(f"- `{m}` — {', '.join(ids)}")
            out.append("")
    head = ["## Counts", "",
    "| paper | claims | NOT-REPRODUCIBLE | own quick check | same check at quick | quick: skip |",
    "|---|---|---|---|---|---|", *summary, ""]
    i = out.index("Conventions used across papers:")
    out[i:i] = head
    return "\n".join(out) + "\n"


if __name__ == "__main__":  # regenerate docs/claims-map.md
    (ROOT / "docs" / "claims-map.md").write_text(render_claims_map())
