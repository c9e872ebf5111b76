"""Structure checks of the claims files (workflow/claims/<paper>.yaml).

The checker's loader (`servesim.analysis.claims.load_claims`, validating against
workflow/schemas/claims.schema.yaml) catches a malformed entry before a workflow run does; these
tests add what concerns the project's own files: spec coverage, the contract metric names, kinds,
no hand-copied results in notes, and docs/claims-map.md. Format: workflow/claims/README.md.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from servesim._yaml import strict_yaml_load
from servesim.analysis.claims import _PLACEHOLDER as PLACEHOLDER  # the diagnosis placeholder grammar
from servesim.analysis.claims import KINDS, load_all_claims, load_claims

ROOT = Path(__file__).resolve().parents[2]
CLAIMS_DIR = ROOT / "workflow" / "claims"
SPECS_DIR = ROOT / ".." / "shared" / "specs"
PAPERS = ("sageserve", "preserve", "oserve", "aegaeon")

ID_RE = re.compile(r"^(?P<paper>[a-z]+)-(?P<num>\d{2})(?P<letter>[a-z]?)-[a-z0-9]+(-[a-z0-9]+)*$")
SOURCES = {"sageserve": {"journal", "conference"}}

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


def load(paper: str) -> dict:
    """The raw document (the checker's strict loader: a duplicate key is an error)."""
    path = CLAIMS_DIR / f"{paper}.yaml"
    assert path.exists(), f"{path} is missing"
    doc = strict_yaml_load(path.read_text(), source=str(path))
    assert isinstance(doc, dict), f"{path}: top level must be a mapping"
    return doc


@pytest.mark.parametrize("paper", PAPERS)
def test_claims_file_well_formed(paper: str) -> None:
    """The file validates against workflow/schemas/claims.schema.yaml (through the checker's own
    loader, which also checks ranges, finite numbers and id prefixes); sources fit the paper."""
    claims = load_claims(CLAIMS_DIR / f"{paper}.yaml")
    assert claims and all(c.paper == paper for c in claims)
    allowed = SOURCES.get(paper, {"paper"})
    bad = [f"{c.id}: source {c.source!r}" for c in claims if c.source not in allowed]
    assert not bad, f"sources not in {sorted(allowed)}: {bad}"


def test_ids_unique_across_papers() -> None:
    ids = [c.id for c in load_all_claims(CLAIMS_DIR)]
    assert len(ids) == len(set(ids))


def test_every_claim_has_a_kind_and_setups_are_not_measured() -> None:
    """Kinds are required; a config or catalog read-back (the *_setup / *_parameters notebooks)
    and a paper_arithmetic notebook can never be a measurement."""
    bad = []
    for c in load_all_claims(CLAIMS_DIR):
        assert c.kind in KINDS, c.id
        setup = c.figure.endswith(("_setup", "_parameters")) or c.figure == "paper_arithmetic"
        if c.kind == "measured" and not c.not_reproducible and setup:
            bad.append(c.id)
    assert not bad, f"claims on setup/arithmetic notebooks marked measured: {bad}"


def test_every_measured_claim_names_its_null() -> None:
    """Issue 26: every measured claim that is checked names its null (a naive system's metric, or
    `none` with the reason), so a PASS can be told from a check that cannot fail."""
    missing = [c.id for c in load_all_claims(CLAIMS_DIR)
               if c.kind == "measured" and not c.not_reproducible and c.null_system is None]
    assert not missing, f"measured claims without null_system ({len(missing)}): {missing[:20]}"


def test_null_reasons_are_specific() -> None:
    """A `none` reason is a reason for that claim, not one sentence pasted over a whole file."""
    from collections import Counter

    reasons = Counter(c.null_system.none for c in load_all_claims(CLAIMS_DIR)
                      if c.null_system is not None and c.null_system.none)
    pasted = {r: n for r, n in reasons.items() if n > 8}
    assert not pasted, f"one `none` reason pasted over many claims: {pasted}"


def test_open_diagnoses_name_what_would_settle_them() -> None:
    """Issue 26 item 4: an `open` FAIL is a to-do: its why names the experiment that would settle
    it ("... would settle it"), or, once run, the run and what it showed ("settled by ...")."""
    bad = [f"{c.id} ({scale})" for c in load_all_claims(CLAIMS_DIR) for scale, d in c.diagnosis.items()
           if d.kind == "open" and "settle" not in d.why.lower()]
    assert not bad, f"open diagnoses that name no experiment to settle them: {sorted(set(bad))}"


def test_notes_carry_no_hand_copied_results() -> None:
    """Results live in metrics and generated tables: a note may say what a number depends on,
    not what we measured ('quick: 0.51', 'ours 12.3 %', 'we measure ...')."""
    pat = re.compile(r"\(quick\b[^;)]*\d|\bquick (medians?|Q3|P9\d|ratio)\b|measured at (quick|full) scale"
                     r"|\bsetting:? [+-]?\d|East US alone|\bours?:? [+-]?\d|\bwe (measure|get|find|obtain)\b", re.I)
    bad = []
    for paper in PAPERS:
        for c in load(paper)["claims"]:
            note = str(c.get("note", ""))
            m = pat.search(note)
            if m:
                bad.append(f"{c['id']}: ...{note[max(0, m.start() - 30):m.end() + 20]}...")
    assert not bad, "hand-copied results in notes:\n" + "\n".join(bad)


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
    "  Their claims are of kind `arithmetic`, scored CONSISTENT / INCONSISTENT, never PASS / FAIL;",
    "  several are INCONSISTENT: they expose the paper's arithmetic slips.",
    "- `sec*_setup` / `sec4_parameters`: read the defaults of the system config",
    "  (`servesim.systems.<paper>`) and catalog, to show the artifact runs the paper's setup (claims",
    "  of kind `stated`: a check that the config holds the paper's number, not a reproduction).",
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


# A number in a diagnosis that is none of the paper's (its spec), the claim's own text, expected
# value, note or location is a typed result: it goes stale at the next rerun. Diagnoses cite
# results as placeholders (`{key}`, workflow/claims/README.md). The diagnoses written before that
# rule are listed in typed_diagnoses.txt, a list that may only shrink.
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
TYPED_LEGACY = ROOT / "tests" / "claims" / "typed_diagnoses.txt"


def _numbers(text: str) -> set[float]:
    return {float(m.group(0)) for m in _NUMBER.finditer(str(text).replace(",", ""))}


def typed_diagnoses() -> dict[str, list[str]]:
    """``{"<claim id> <scale>": [typed numbers]}`` over every claims file."""
    out, spec = {}, {}
    for c in load_all_claims(CLAIMS_DIR):
        if c.paper not in spec:
            f = SPECS_DIR / f"{c.paper}.md"
            spec[c.paper] = _numbers(f.read_text()) if f.exists() else set()
        allowed = spec[c.paper] | _numbers(c.claim) | _numbers(c.full.expected) | _numbers(c.note or "") | _numbers(c.where)
        for scale, d in c.diagnosis.items():
            typed = [m.group(0) for m in _NUMBER.finditer(PLACEHOLDER.sub("", d.why).replace(",", ""))
                     if float(m.group(0)) not in allowed]
            if typed:
                out[f"{c.id} {scale}"] = typed
    return out


def test_diagnoses_cite_results_as_placeholders_and_the_legacy_list_only_shrinks() -> None:
    """Issue 27: no new diagnosis types a measured number; a legacy one that no longer does is
    taken off typed_diagnoses.txt (so the list is exactly what is left to convert)."""
    if not SPECS_DIR.exists():
        pytest.skip("../shared/specs not present")
    legacy = {ln.strip() for ln in TYPED_LEGACY.read_text().splitlines() if ln.strip() and not ln.startswith("#")}
    typed = typed_diagnoses()
    new = {k: v for k, v in typed.items() if k not in legacy}
    assert not new, ("diagnoses that type results (cite them as {key} placeholders, workflow/claims/README.md): "
                     + "; ".join(f"{k}: {v[:4]}" for k, v in sorted(new.items())))
    fixed = sorted(legacy - set(typed))
    assert not fixed, f"no longer typed: take these off {TYPED_LEGACY.name}: {fixed}"


if __name__ == "__main__":  # regenerate docs/claims-map.md
    (ROOT / "docs" / "claims-map.md").write_text(render_claims_map())



def test_a_diagnosis_cites_a_reading_metric_only_at_the_scales_that_run_the_reading():
    """A reading run at some scales only (`scales: [full]`) writes its metrics there only, and the
    report refuses a diagnosis citing a metric its scale lacks: the quick claims report failed on
    one (4 Dec). So a diagnosis in force at a scale cites no reading metric absent there."""
    bad = []
    all_claims = load_all_claims(CLAIMS_DIR)
    only = {}  # (figure, metric) -> the scales whose runs write it, for readings not run everywhere
    for c in all_claims:
        for r in c.readings:
            for m in ([r.metric] if isinstance(r.metric, str) else r.metric):
                only.setdefault((r.figure, m), set()).update(r.scales)
    for c in all_claims:
        for scale, d in c.diagnosis.items():
            for m in PLACEHOLDER.finditer(d.why):
                scales = only.get((m["fig"] or c.figure, m["key"]))
                if scales is not None and scale not in scales:
                    bad.append(f"{c.id} ({scale}): {m['key']}")
    assert not bad, f"diagnoses citing a reading metric their scale does not run: {bad}"
