"""Check every claim of `workflow/claims/<paper>.yaml` against the metrics the notebooks wrote.

Format: `workflow/claims/README.md`. Statuses: PASS, FAIL, NOT-REPRODUCIBLE, PENDING, NOT-CHECKED.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

import yaml

REPORT_COLUMNS = ("id", "paper", "where", "claim", "expected", "observed", "tolerance", "status", "reason")
CHECKS = ("approx", "range", "lt", "le", "gt", "ge", "ordering", "true")
STATUSES = ("PASS", "FAIL", "NOT-REPRODUCIBLE", "PENDING", "NOT-CHECKED")
_REQUIRED = ("id", "where", "claim", "figure", "metric", "check")
_ALLOWED = set(_REQUIRED) | {"kind", "source", "expected", "tolerance", "quick", "not_reproducible", "note"}


class ClaimsError(ValueError):
    """A malformed claims file, or a claim naming a metric its notebook does not write."""


@dataclass(frozen=True)
class Check:
    kind: str
    expected: object = None
    tolerance: dict | None = None

    def describe_tolerance(self) -> str:
        if self.kind == "approx":
            return " or ".join(f"{k} {v:g}" for k, v in sorted((self.tolerance or {}).items()))
        return {"range": "within [lo, hi]", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
                "ordering": f"{self.expected}", "true": "is true"}[self.kind]


def _parse_check(d: dict, where: str) -> Check:
    kind = d.get("check")
    if kind not in CHECKS:
        raise ClaimsError(f"{where}: check {kind!r} is not one of {CHECKS}")
    exp = d.get("expected")
    tol = d.get("tolerance")
    if kind != "true" and exp is None:
        raise ClaimsError(f"{where}: check {kind!r} needs `expected`")
    if kind == "approx":
        if not isinstance(tol, dict) or not tol or set(tol) - {"abs", "rel"}:
            raise ClaimsError(f"{where}: approx needs tolerance {{abs: x}} and/or {{rel: x}}, got {tol!r}")
        if not isinstance(exp, (int, float)):
            raise ClaimsError(f"{where}: approx needs a number as expected, got {exp!r}")
    if kind == "range" and not (isinstance(exp, list) and len(exp) == 2):
        raise ClaimsError(f"{where}: range needs expected [lo, hi], got {exp!r}")
    if kind == "ordering" and exp not in ("ascending", "descending"):
        raise ClaimsError(f"{where}: ordering needs expected ascending|descending, got {exp!r}")
    return Check(kind, exp, tol)


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    source: str
    where: str
    claim: str
    figure: str
    metric: object  # str, or list[str] for ordering
    full: Check
    quick: Check | None  # None: same as full
    quick_skip: bool
    not_reproducible: str | None
    note: str
    file: str

    def check_for(self, scale: str) -> Check | None:
        if scale == "quick":
            return None if self.quick_skip else (self.quick or self.full)
        return self.full


def load_claims(path: str | Path) -> list[Claim]:
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ClaimsError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict) or "paper" not in doc or not isinstance(doc.get("claims"), list):
        raise ClaimsError(f"{path}: needs top-level keys `paper` and `claims` (a list)")
    paper = doc["paper"]
    out, seen = [], set()
    for i, d in enumerate(doc["claims"]):
        where = f"{path}: claims[{i}]" + (f" ({d.get('id')})" if isinstance(d, dict) and d.get("id") else "")
        if not isinstance(d, dict):
            raise ClaimsError(f"{where}: must be a mapping")
        missing = [k for k in _REQUIRED if k not in d]
        if missing:
            raise ClaimsError(f"{where}: missing key(s) {missing}")
        unknown = sorted(set(d) - _ALLOWED)
        if unknown:
            raise ClaimsError(f"{where}: unknown key(s) {unknown}")
        if d["id"] in seen:
            raise ClaimsError(f"{where}: duplicate id {d['id']!r}")
        seen.add(d["id"])
        full = _parse_check(d, where)
        if full.kind == "ordering" and not (isinstance(d["metric"], list) and len(d["metric"]) >= 2):
            raise ClaimsError(f"{where}: ordering needs a list of >= 2 metrics")
        q = d.get("quick")
        quick, skip = None, False
        if q == "skip":
            skip = True
        elif isinstance(q, dict):
            quick = _parse_check({"check": full.kind, "expected": full.expected, "tolerance": full.tolerance, **q}, where + ".quick")
        elif q is not None:
            raise ClaimsError(f"{where}: quick must be a mapping or `skip`, got {q!r}")
        out.append(Claim(d["id"], paper, str(d.get("source", "paper")), str(d["where"]), str(d["claim"]),
                         d["figure"], d["metric"], full, quick, skip, d.get("not_reproducible"),
                         str(d.get("note", "")), str(path)))
    return out


def evaluate(check: Check, observed) -> bool:
    """Does the observed value (or list of values, for ordering) satisfy the check?"""
    k = check.kind
    if k == "true":
        return bool(observed)
    if k == "ordering":
        xs = [float(v) for v in observed]
        pairs = list(zip(xs, xs[1:]))
        return all(a < b for a, b in pairs) if check.expected == "ascending" else all(a > b for a, b in pairs)
    if observed is None or (isinstance(observed, float) and math.isnan(observed)):
        return False
    x = float(observed)
    e = check.expected
    if k == "approx":
        tol = check.tolerance or {}
        ok_abs = "abs" in tol and abs(x - e) <= tol["abs"]
        ok_rel = "rel" in tol and abs(x - e) <= tol["rel"] * abs(e)
        return ok_abs or ok_rel
    if k == "range":
        return float(e[0]) <= x <= float(e[1])
    return {"lt": x < e, "le": x <= e, "gt": x > e, "ge": x >= e}[k]


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return "" if v is None else str(v)


def check_claims(root: str | Path, scale: str, claims_dir: str | Path | None = None) -> list[dict]:
    """One report row per claim, in file then claim order."""
    root = Path(root)
    claims_dir = Path(claims_dir) if claims_dir else root / "workflow" / "claims"
    rows = []
    for f in sorted(claims_dir.glob("*.yaml")):
        for c in load_claims(f):
            rows.append(_row(root, scale, c))
    return rows


def _row(root: Path, scale: str, c: Claim) -> dict:
    check = c.check_for(scale)
    row = {"id": c.id, "paper": c.paper if c.source in ("paper", "") else f"{c.paper} ({c.source})",
           "where": c.where, "claim": c.claim, "expected": _fmt(c.full.expected if check is None else check.expected),
           "observed": "", "tolerance": "" if check is None else check.describe_tolerance(), "status": "", "reason": ""}
    nb = root / "notebooks" / c.paper / f"{c.figure}.ipynb"
    mfile = root / "results" / scale / c.paper / c.figure / "metrics.json"
    observed, nulls = None, []
    if mfile.exists():
        metrics = json.loads(mfile.read_text())
        keys = c.metric if isinstance(c.metric, list) else [c.metric]
        missing = [k for k in keys if k not in metrics]
        if missing and not c.not_reproducible:  # a NOT-REPRODUCIBLE claim may have no metric at all
            raise ClaimsError(f"{c.file}: claim {c.id}: {mfile.relative_to(root)} has no metric(s) {missing}")
        if not missing:
            observed = [metrics[k] for k in keys] if isinstance(c.metric, list) else metrics[c.metric]
            row["observed"] = _fmt(observed)
            nulls = [k for k in keys if metrics[k] is None or (isinstance(metrics[k], float) and math.isnan(metrics[k]))]
    if c.not_reproducible:
        row.update(status="NOT-REPRODUCIBLE", reason=str(c.not_reproducible))
    elif not nb.exists():
        row.update(status="PENDING", reason=f"notebook notebooks/{c.paper}/{c.figure}.ipynb does not exist yet")
    elif not mfile.exists():
        row.update(status="PENDING", reason=f"notebooks/{c.paper}/{c.figure} has not been run at {scale} scale")
    elif check is None:
        row.update(status="NOT-CHECKED", reason="no qualitative check at quick scale; run the full scale")
    elif nulls and check.kind != "true":
        row.update(status="NOT-CHECKED", reason=f"{mfile.relative_to(root)} has null value(s) for {nulls}: "
                                                f"the notebook could not measure them at {scale} scale")
    else:
        ok = evaluate(check, observed)
        row["status"] = "PASS" if ok else "FAIL"
        if scale == "quick" and c.quick is not None:
            row["reason"] = "quick-scale qualitative check"
    if c.note and not row["reason"]:
        row["reason"] = c.note
    return row


def summary(rows: list[dict]) -> dict:
    counts = {s: 0 for s in STATUSES}
    per_paper: dict[str, dict] = {}
    for r in rows:
        counts[r["status"]] += 1
        paper = r["paper"].split(" ", 1)[0]
        per_paper.setdefault(paper, {s: 0 for s in STATUSES})[r["status"]] += 1
    return {"total": len(rows), **counts, "per_paper": per_paper}


def write_csv(rows: list[dict], path: str | Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=REPORT_COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def to_markdown(rows: list[dict], scale: str) -> str:
    s = summary(rows)
    buf = io.StringIO()
    buf.write(f"# Claims report ({scale} scale)\n\n")
    buf.write(f"{s['total']} claims: " + ", ".join(f"{s[k]} {k}" for k in STATUSES) + ".\n\n")
    buf.write("| paper | " + " | ".join(STATUSES) + " |\n|---|" + "---|" * len(STATUSES) + "\n")
    for p, c in sorted(s["per_paper"].items()):
        buf.write(f"| {p} | " + " | ".join(str(c[k]) for k in STATUSES) + " |\n")
    buf.write("\n| " + " | ".join(REPORT_COLUMNS) + " |\n|" + "---|" * len(REPORT_COLUMNS) + "\n")
    for r in rows:
        buf.write("| " + " | ".join(_md_cell(r[k]) for k in REPORT_COLUMNS) + " |\n")
    return buf.getvalue()


def write_report(root: str | Path, scale: str, md: str | Path, csv_path: str | Path) -> dict:
    rows = check_claims(root, scale)
    Path(md).parent.mkdir(parents=True, exist_ok=True)
    write_csv(rows, csv_path)
    Path(md).write_text(to_markdown(rows, scale))
    return summary(rows)


README_BEGIN = "<!-- claims-table:begin (generated by `servesim claims --readme README.md`) -->"
README_END = "<!-- claims-table:end -->"


def readme_section(rows: list[dict], scale: str) -> str:
    """The README's claims table: counts per paper from a report, and every NOT-REPRODUCIBLE
    claim with its reason."""
    s = summary(rows)
    lines = [README_BEGIN, "", f"Status of every claim at {scale} scale (`results/{scale}/claims_report.md`):", "",
             "| paper | claims | " + " | ".join(STATUSES) + " |", "|---|---|" + "---|" * len(STATUSES)]
    for p, c in sorted(s["per_paper"].items()):
        lines.append(f"| {p} | {sum(c.values())} | " + " | ".join(str(c[k]) for k in STATUSES) + " |")
    lines.append(f"| **all** | {s['total']} | " + " | ".join(str(s[k]) for k in STATUSES) + " |")
    nr = [r for r in rows if r["status"] == "NOT-REPRODUCIBLE"]
    if nr:
        lines += ["", "Not reproducible, and why:", ""]
        lines += [f"- `{r['id']}` ({_md_cell(r['where'])}): {_md_cell(r['reason'])}" for r in nr]
    lines += ["", README_END]
    return "\n".join(lines)


def update_readme(readme: str | Path, rows: list[dict], scale: str) -> None:
    text = Path(readme).read_text()
    if README_BEGIN not in text or README_END not in text:
        raise ClaimsError(f"{readme}: markers {README_BEGIN!r} ... {README_END!r} not found")
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    Path(readme).write_text(head + readme_section(rows, scale) + tail)
