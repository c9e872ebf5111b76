"""Check every claim of `workflow/claims/<paper>.yaml` against the metrics the notebooks wrote.

Format, kinds, statuses and diagnoses: `workflow/claims/README.md`; the files' schema:
`workflow/schemas/claims.schema.yaml`. Only `measured` claims (an output of a simulation,
training, replay or data analysis of this artifact) are scored PASS / FAIL; a `stated`,
`arithmetic` or `calibration` claim is still checked, but scored CONSISTENT / INCONSISTENT, so
that PASS means "reproduced" and never "the config holds the number we typed from the paper".
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from servesim._yaml import StrictYAMLError, strict_yaml_load
from servesim.analysis.jsonschema_lite import Draft202012Validator, best_match
from servesim.errors import InputError
from servesim.metrics.bounds import BOUND_KINDS, BOUND_SUFFIX, interval

SCHEMA_PATH = Path(__file__).resolve().parents[3] / "workflow" / "schemas" / "claims.schema.yaml"
CHECKS = ("approx", "range", "lt", "le", "gt", "ge", "ordering", "true")
KINDS = ("measured", "stated", "arithmetic", "calibration")
DIAGNOSES = ("paper-inconsistent", "substitute-data", "open")
# WEAK: a measured claim whose check holds, but holds for its null too (the simplest system
# without the paper's idea), or whose null is not declared or not measured: never a reproduction
MEASURED_STATUSES = ("PASS", "WEAK", "FAIL")
ECHO_STATUSES = ("CONSISTENT", "INCONSISTENT")  # stated, arithmetic, calibration
OPEN_STATUSES = ("NOT-REPRODUCIBLE", "PENDING", "NOT-CHECKED")
STATUSES = MEASURED_STATUSES + ECHO_STATUSES + OPEN_STATUSES
UNDIAGNOSED = "UNDIAGNOSED"  # the diagnosis column of a measured FAIL that declares none
REPORT_COLUMNS = ("id", "paper", "kind", "where", "claim", "expected", "observed", "tolerance", "status",
                  "null_system", "null_observed", "null_status", "diagnosis", "reason", "readings")
# readings: the claim's value under each named reading it declares and the claim's own check on it
# ("<reading>: <value> (PASS|FAIL|CENSORED|NOT-MEASURED)", "; "-joined); never the claim's status
# null_status: PASS / FAIL (the claim's check applied to the null's value), NONE (the claim says no
# naive system applies), CANNOT-FAIL (the claim says its check holds for any system: WEAK), MISSING
# (no null declared), NOT-MEASURED (the null's value is NaN/null), CENSORED (the null's value is a
# bound that leaves its verdict open: servesim.metrics.bounds)
NULL_STATUSES = ("PASS", "FAIL", "NONE", "CANNOT-FAIL", "MISSING", "NOT-MEASURED", "CENSORED")
REL_TOLERANCE_NEEDS_WHY = 0.5  # a tolerance this loose (or looser) must say why
SCALES = ("quick", "full")
# the workflow's `test` scale (tiny runs the test suite drives) is checked as the quick scale is
CHECKED_AS = {"quick": "quick", "full": "full", "test": "quick"}


class ClaimsError(InputError):
    """A malformed claims file, or a claim naming a metric its notebook does not write (or writes
    with the wrong type). The message names the file and the claim."""


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


@dataclass(frozen=True)
class Diagnosis:
    kind: str  # one of DIAGNOSES
    why: str


@dataclass(frozen=True)
class NullSystem:
    """The claim's null: `system` with its value(s) `metric` in `figure`'s metrics.json, `none`
    (why no naive system applies), or `cannot_fail` (why the check holds for any system: WEAK)."""
    system: str = ""
    metric: object = None  # str, or list[str] (same length as the claim's ordering metrics)
    figure: str = ""
    none: str = ""
    cannot_fail: str = ""


@dataclass(frozen=True)
class Reading:
    """A claim's value under a named reading of its claims file: `metric` (the claim's shape) in
    `figure`'s metrics.json; `describes` is the file's sentence for the reading."""
    name: str
    metric: object
    figure: str
    describes: str
    scales: tuple = SCALES  # where its runs exist


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
    kind: str = "measured"
    diagnosis: dict = field(default_factory=dict)  # scale -> Diagnosis
    null_system: NullSystem | None = None
    tolerance_why: str = ""
    readings: tuple = ()  # of Reading

    def check_for(self, scale: str) -> Check | None:
        if CHECKED_AS.get(scale, scale) == "quick":
            return None if self.quick_skip else (self.quick or self.full)
        return self.full

    def diagnosis_for(self, scale: str) -> Diagnosis | None:
        return self.diagnosis.get(CHECKED_AS.get(scale, scale))


# ---- loading and validation ------------------------------------------------------------------

@lru_cache(maxsize=4)
def _validator(schema_path: str) -> Draft202012Validator:
    p = Path(schema_path)
    if not p.exists():
        raise ClaimsError(f"{p}: the claims schema is missing (the checker runs from a project checkout)")
    schema = strict_yaml_load(p.read_text(), source=str(p))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


_FRIENDLY = {  # oneOf fields, whose raw jsonschema message says nothing useful
    "metric": "must be one snake_case metric key (a list of >= 2 keys for check: ordering)",
    "quick": "must be `skip` or a mapping {check, expected, tolerance}",
    "diagnosis": "must be {kind: paper-inconsistent | substitute-data | open, why: \"...\"}, "
                 "or {quick: {kind, why}, full: {kind, why}}",
}


def _label(path: Path, claims: object, i: int | None) -> str:
    """`<file>: claim <id>` (or `claims[i]` where the entry has no usable id)."""
    if i is None:
        return str(path)
    d = claims[i] if isinstance(claims, list) and 0 <= i < len(claims) else None
    cid = d.get("id") if isinstance(d, dict) else None
    return f"{path}: claim {cid}" if isinstance(cid, str) and cid else f"{path}: claims[{i}]"


def _closest_branch_error(context) -> object | None:
    """The error of the oneOf branch the entry was meant for: one whose keys it uses (no
    additionalProperties error in it), else jsonschema's best match over all branches. For
    ``diagnosis: {kind: open, why: short}`` that is why's minimum length, not "'kind', 'why'
    were unexpected" from the {quick, full} branch."""
    if not context:
        return None
    branches: dict = {}
    for e in context:
        branches.setdefault(e.relative_schema_path[0] if e.relative_schema_path else None, []).append(e)
    fitting = [errs for errs in branches.values() if not any(e.validator == "additionalProperties" for e in errs)]
    return best_match([e for errs in fitting for e in errs] or context)


def _schema_message(err, path: Path, doc: object) -> str:
    loc = list(err.absolute_path)
    claims = doc.get("claims") if isinstance(doc, dict) else None
    i = loc[1] if len(loc) >= 2 and loc[0] == "claims" and isinstance(loc[1], int) else None
    key = ".".join(str(k) for k in (loc[2:] if i is not None else loc))
    msg = err.message
    top = str(loc[2]) if i is not None and len(loc) > 2 else None
    if err.validator in ("oneOf", "type") and top in _FRIENDLY and len(loc) == 3:
        deeper = _closest_branch_error(err.context)
        msg = f"{_FRIENDLY[top]}, got {err.instance!r}" + (f" ({deeper.message})" if deeper else "")
    if top in ("check",) and isinstance(err.instance, bool):
        msg += ' (write check: "true" in quotes: an unquoted true is a YAML boolean)'
    return f"{_label(path, claims, i)}: {key + ': ' if key else ''}{msg}"


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _semantic_errors(d: dict, paper: str, label: str, readings: dict | None = None) -> list[str]:
    """What the schema cannot say: finite numbers, ordered ranges, the id's paper prefix, readings
    the file defines, in the claim's shape."""
    errs = []
    if not d["id"].startswith(f"{paper}-"):
        errs.append(f"{label}: id must start with the paper key '{paper}-'")
    triples = [("", d)]
    if isinstance(d.get("quick"), dict):
        triples.append(("quick.", d["quick"]))
    for pre, t in triples:
        exp, tol = t.get("expected"), t.get("tolerance")
        nums = exp if isinstance(exp, list) else [exp] if isinstance(exp, (int, float)) else []
        if any(not _finite(x) for x in nums):
            errs.append(f"{label}: {pre}expected must be finite, got {exp!r}")
        elif t.get("check") == "range" and nums[0] > nums[1]:
            errs.append(f"{label}: {pre}expected is a reversed range {exp!r} (write [lo, hi] with lo <= hi)")
        if isinstance(tol, dict) and any(not _finite(v) for v in tol.values()):
            errs.append(f"{label}: {pre}tolerance must be finite and >= 0, got {tol!r}")
        if t.get("check") == "ordering" and not isinstance(d["metric"], list):
            errs.append(f"{label}: {pre}check ordering needs a list of >= 2 metrics")
        if t.get("check") not in (None, "ordering") and isinstance(d["metric"], list):
            errs.append(f"{label}: {pre}check {t['check']} needs one metric, not a list")
        if isinstance(tol, dict) and tol.get("rel", 0) >= REL_TOLERANCE_NEEDS_WHY and not d.get("tolerance_why"):
            errs.append(f"{label}: {pre}tolerance rel {tol['rel']} (>= {REL_TOLERANCE_NEEDS_WHY}) needs a "
                        "written reason: add tolerance_why")
    def shape(where: str, metric) -> None:  # a null's or a reading's metric: the claim's one key or list
        want = len(d["metric"]) if isinstance(d["metric"], list) else None
        got = len(metric) if isinstance(metric, list) else None
        if want != got:
            errs.append(f"{label}: {where} must have the claim's shape (" + (
                f"a list of {want} keys" if want else "one key") + f"), got {metric!r}")

    ns = d.get("null_system")
    if isinstance(ns, dict) and "metric" in ns:
        shape("null_system.metric", ns["metric"])
    if ns is not None and d.get("kind") != "measured":
        errs.append(f"{label}: null_system is for measured claims (this one is {d.get('kind')})")
    for j, r in enumerate(d.get("readings") or []):
        if r["reading"] not in (readings or {}):
            errs.append(f"{label}: readings[{j}]: reading {r['reading']!r} is not defined in the file's readings "
                        f"(defined: {sorted(readings or {})})")
        shape(f"readings[{j}].metric", r["metric"])
    if d.get("readings") and d.get("kind") != "measured":
        errs.append(f"{label}: readings are for measured claims (this one is {d.get('kind')})")
    return errs


#: a shared paragraph in a diagnosis's ``why``: ``[[name]]``, one of the file's ``texts``
_TEXT = re.compile(r"\[\[([a-z][a-z0-9_]*)\]\]")


def _with_texts(why: str, texts: dict, label: str, used: set, errs: list) -> str:
    """``why`` with every ``[[name]]`` replaced by the file's ``texts[name]`` (one paragraph that
    several diagnoses share, written once); an unknown name is an error naming the claim."""
    def sub(m: re.Match) -> str:
        if m[1] not in texts:
            errs.append(f"{label}: its diagnosis uses [[{m[1]}]], which the file's texts do not define "
                        f"(defined: {sorted(texts)})")
            return m[0]
        used.add(m[1])
        return texts[m[1]]
    return _TEXT.sub(sub, why)


def _diagnoses(raw, texts: dict, label: str, used: set, errs: list) -> dict:
    if raw is None:
        return {}
    if "kind" in raw:
        raw = dict.fromkeys(SCALES, raw)
    return {s: Diagnosis(v["kind"], _with_texts(v["why"], texts, label, used, errs)) for s, v in raw.items()}


def _null_system(raw, figure: str) -> NullSystem | None:
    if raw is None:
        return None
    if "none" in raw:
        return NullSystem(none=raw["none"])
    if "cannot_fail" in raw:
        return NullSystem(cannot_fail=raw["cannot_fail"])
    return NullSystem(raw["system"], raw["metric"], raw.get("figure", figure))


def load_claims(path: str | Path, schema_path: str | Path | None = None) -> list[Claim]:
    """Parse and validate one claims file. Every error names the file and the claim."""
    path = Path(path)
    try:
        doc = strict_yaml_load(path.read_text(encoding="utf-8"), source=str(path))
    except StrictYAMLError as exc:
        raise ClaimsError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ClaimsError(f"{path}: cannot read: {exc}") from None
    errors = sorted(_validator(str(schema_path or SCHEMA_PATH)).iter_errors(doc),
                    key=lambda e: [str(x) for x in e.absolute_path])
    if errors:
        msgs = list(dict.fromkeys(_schema_message(e, path, doc) for e in errors))
        more = f"\n... and {len(msgs) - 20} more" if len(msgs) > 20 else ""
        raise ClaimsError("\n".join(msgs[:20]) + more)
    paper = doc["paper"]
    if path.suffix in (".yaml", ".yml") and path.stem != paper:
        raise ClaimsError(f"{path}: paper is {paper!r} but the file is named {path.name} (use {paper}.yaml)")
    out, seen, errs = [], {}, []
    texts, used = doc.get("texts") or {}, set()
    for i, d in enumerate(doc["claims"]):
        label = _label(path, doc["claims"], i)
        if d["id"] in seen:
            errs.append(f"{label}: duplicate id (first at claims[{seen[d['id']]}])")
            continue
        seen[d["id"]] = i
        errs += _semantic_errors(d, paper, label, doc.get("readings"))
        diagnoses = _diagnoses(d.get("diagnosis"), texts, label, used, errs)
        if errs:
            continue
        full = Check(d["check"], d.get("expected"), d.get("tolerance"))
        q = d.get("quick")
        quick = Check(q["check"], q.get("expected"), q.get("tolerance")) if isinstance(q, dict) else None
        out.append(Claim(d["id"], paper, d["source"], d["where"], d["claim"], d["figure"], d["metric"], full, quick,
                         q == "skip", d.get("not_reproducible"), d.get("note", ""), str(path), d["kind"],
                         diagnoses, _null_system(d.get("null_system"), d["figure"]),
                         d.get("tolerance_why", ""),
                         tuple(Reading(r["reading"], r["metric"], r.get("figure", d["figure"]),
                                       doc["readings"][r["reading"]], tuple(r.get("scales", SCALES)))
                               for r in d.get("readings") or [])))
    if not errs and set(texts) - used:
        errs.append(f"{path}: texts {sorted(set(texts) - used)} are used by no diagnosis")
    if errs:
        raise ClaimsError("\n".join(errs))
    return out


def load_all_claims(claims_dir: str | Path, schema_path: str | Path | None = None) -> list[Claim]:
    """Every claims file of a folder, in file then claim order; ids unique across files."""
    out, where = [], {}
    for f in sorted(Path(claims_dir).glob("*.yaml")):
        for c in load_claims(f, schema_path):
            if c.id in where:
                raise ClaimsError(f"{f}: claim {c.id}: duplicate id (also in {where[c.id]})")
            where[c.id] = f
            out.append(c)
    return out


# ---- checking --------------------------------------------------------------------------------

def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def evaluate(check: Check, observed) -> bool:
    """Does the observed value (or list of values, for ordering) satisfy the check? A `true`
    check passes only on the boolean True; a number check never passes on a non-number, NaN or
    an infinity."""
    k = check.kind
    if k == "true":
        return observed is True
    if k == "ordering":
        if not isinstance(observed, list) or not all(_is_number(v) and math.isfinite(v) for v in observed):
            return False
        pairs = list(zip(observed, observed[1:], strict=False))
        return all(a < b for a, b in pairs) if check.expected == "ascending" else all(a > b for a, b in pairs)
    if not _is_number(observed) or not math.isfinite(observed):  # an infinite ratio is a division by 0
        return False
    x, e = float(observed), check.expected
    if k == "approx":
        tol = check.tolerance or {}
        ok_abs = "abs" in tol and abs(x - e) <= tol["abs"]
        ok_rel = "rel" in tol and abs(x - e) <= tol["rel"] * abs(e)
        return bool(ok_abs or ok_rel)
    if k == "range":
        return float(e[0]) <= x <= float(e[1])
    return {"lt": x < e, "le": x <= e, "gt": x > e, "ge": x >= e}[k]


def _accepts(check: Check) -> tuple[float, float, bool, bool]:
    """A number check as the interval of values it accepts: (lo, hi, lo open, hi open)."""
    k, e = check.kind, check.expected
    if k == "approx":   # either tolerance suffices: the wider one; none accepts nothing (as evaluate)
        tol = check.tolerance or {}
        ts = [t for t in (tol.get("abs"), tol["rel"] * abs(e) if "rel" in tol else None) if t is not None]
        return (e - max(ts), e + max(ts), False, False) if ts else (math.inf, -math.inf, False, False)
    if k == "range":
        return float(e[0]), float(e[1]), False, False
    return {"lt": (-math.inf, e, False, True), "le": (-math.inf, e, False, False),
            "gt": (e, math.inf, True, False), "ge": (e, math.inf, False, False)}[k]


def decide(check: Check, observed, bounds=None) -> bool | None:
    """``evaluate`` where some values may be bounds (``bounds``: None, or one
    ``servesim.metrics.bounds`` kind or None per value): True / False when every value the bounds
    allow gives that verdict, None when the bounds leave it open (a grid censored the metric)."""
    bl = bounds if isinstance(bounds, list) else [bounds]
    if not any(bl) or check.kind == "true":
        return evaluate(check, observed)
    vals = observed if isinstance(observed, list) else [observed]
    if not all(_is_number(v) and math.isfinite(v) for v in vals):
        return evaluate(check, observed)   # a NaN or a non-number fails as ever
    iv = [interval(v, b) for v, b in zip(vals, bl, strict=True)]
    if check.kind == "ordering":   # each pair: a < b (ascending) for every allowed value, or for none
        if check.expected == "descending":
            iv = iv[::-1]
        verdicts = [True if a[1] < b[0] else False if a[0] >= b[1] else None for a, b in zip(iv, iv[1:])]
        return False if False in verdicts else None if None in verdicts else True
    (lo, hi), (alo, ahi, lo_open, hi_open) = iv[0], _accepts(check)
    inside = lambda x: (x > alo if lo_open else x >= alo) and (x < ahi if hi_open else x <= ahi)  # noqa: E731
    if inside(lo) and inside(hi):
        return True
    if hi < alo or lo > ahi or (hi == alo and lo_open) or (lo == ahi and hi_open):
        return False
    return None


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return "" if v is None else str(v)


def check_claims(root: str | Path, scale: str, claims_dir: str | Path | None = None,
                 results_dir: str | Path | None = None, papers: list[str] | None = None) -> list[dict]:
    """One report row per claim, in file then claim order. `results_dir` holds
    `<paper>/<figure>/metrics.json` (default `<root>/results/<scale>`; a published snapshot's
    folder to re-check it against today's claims files)."""
    root = Path(root)
    claims_dir = Path(claims_dir) if claims_dir else root / "workflow" / "claims"
    results_dir = Path(results_dir) if results_dir else root / "results" / scale
    cache: dict[Path, dict] = {}
    if papers:  # only these papers' files are read (another file's error does not stop them)
        unknown = sorted(p for p in set(papers) if not (claims_dir / f"{p}.yaml").is_file())
        if unknown:
            raise ClaimsError(f"{claims_dir}: no claims file for paper(s) {unknown}")
        claims = [c for p in sorted(set(papers)) for c in load_claims(claims_dir / f"{p}.yaml")]
    else:
        claims = load_all_claims(claims_dir)
    return [_row(root, results_dir, scale, c, cache) for c in claims]


#: a metric cited in a diagnosis's ``why``: ``{key}`` (a key of the claim's own figure's
#: metrics.json), ``{figure/key}`` (another figure of the paper), with an optional format spec
#: (``{key:.2f}``); rendered when the report is written, so a diagnosis cites the run it explains
#: and never a number typed from an older one. Braces around anything else are text.
_PLACEHOLDER = re.compile(r"\{(?:(?P<fig>[a-z0-9_]+)/)?(?P<key>[A-Za-z0-9_]+(?:\[[^\]{}]*\])?)(?::(?P<spec>[^{}]*))?\}")


def render_why(why: str, c: Claim, results_dir: Path, root: Path, cache: dict | None = None) -> str:
    """``why`` with every ``{[figure/]key[:spec]}`` replaced by that metric's value at this scale
    (floats to 3 significant digits without a spec); a metric that is not there is an error
    naming the claim, the figure and the key."""
    def sub(m: re.Match) -> str:
        fig, key, spec = m["fig"] or c.figure, m["key"], m["spec"]
        mfile = results_dir / c.paper / fig / "metrics.json"
        rel = _rel(mfile, root)
        if not mfile.exists():
            raise ClaimsError(f"{c.file}: claim {c.id}: its diagnosis cites {m.group(0)}, but {rel} does not exist")
        metrics = _read_metrics(mfile, c, cache)
        if key not in metrics:
            raise ClaimsError(f"{c.file}: claim {c.id}: its diagnosis cites {key!r}, which {rel} does not hold")
        v = metrics[key]
        if v is None:  # not measured at this scale: said so, whatever the spec
            return "n/a"
        if spec:
            try:
                return format(v, spec)
            except (ValueError, TypeError):
                raise ClaimsError(f"{c.file}: claim {c.id}: its diagnosis formats {key!r} = {v!r} as {spec!r}, "
                                  "which does not apply") from None
        return f"{v:.3g}" if isinstance(v, float) else _fmt(v)
    return _PLACEHOLDER.sub(sub, why)


def _is_null(v) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _read_metrics(mfile: Path, c: Claim, cache: dict | None = None) -> dict:
    if cache is not None and mfile in cache:
        return cache[mfile]
    try:
        metrics = json.loads(mfile.read_text())
    except (OSError, ValueError) as exc:
        raise ClaimsError(f"{c.file}: claim {c.id}: {mfile} is not readable JSON: {exc}") from None
    if not isinstance(metrics, dict):
        raise ClaimsError(f"{c.file}: claim {c.id}: {mfile} must hold a JSON object of metrics")
    if cache is not None:
        cache[mfile] = metrics
    return metrics


def _values(metrics: dict, keys, c: Claim, check: Check | None, rel: str, what: str):
    """The value (or list of values) of `keys`, the keys whose value is null/NaN, and the keys
    that are missing; a value of the wrong type for the check is an error naming the claim."""
    names = keys if isinstance(keys, list) else [keys]
    missing = [k for k in names if k not in metrics]
    if missing:
        return None, [], missing
    nulls = [k for k in names if _is_null(metrics[k])]
    if check is not None and not c.not_reproducible:
        want_bool = check.kind == "true"
        bad = [k for k in names if not _is_null(metrics[k])
               and (isinstance(metrics[k], bool) != want_bool or not (want_bool or _is_number(metrics[k])))]
        if bad:
            need = "a JSON boolean" if want_bool else "a number"
            raise ClaimsError(f"{c.file}: claim {c.id}: {rel}: check {check.kind!r} needs {need} for {what}"
                              + ", ".join(f"{k} (got {metrics[k]!r})" for k in bad))
    return ([metrics[k] for k in names] if isinstance(keys, list) else metrics[keys]), nulls, []


def _bounds(metrics: dict, keys, c: Claim, rel: str):
    """The bound of each value (``<key>__bound``; None where measured), in the shape of ``keys``; a
    bound that is not one of ``servesim.metrics.bounds.BOUND_KINDS`` is an error naming the claim."""
    names = keys if isinstance(keys, list) else [keys]
    out = []
    for k in names:
        b = metrics.get(f"{k}{BOUND_SUFFIX}")
        if b is not None and b not in BOUND_KINDS:
            raise ClaimsError(f"{c.file}: claim {c.id}: {rel}: {k}{BOUND_SUFFIX} = {b!r}; expected one of {BOUND_KINDS}")
        out.append(b)
    return out if isinstance(keys, list) else out[0]


_BOUND_WORDS = {"lower": "a lower bound", "upper": "an upper bound", "unknown": "a bound of unknown direction"}


def _bound_words(keys, bounds) -> str:
    names, bl = (keys, bounds) if isinstance(keys, list) else ([keys], [bounds])
    return ", ".join(f"{k} is {_BOUND_WORDS[b]}" for k, b in zip(names, bl) if b)


def _null_values(results_dir: Path, root: Path, c: Claim, check: Check | None, cache: dict):
    """The null's value(s), whether any is null/NaN, and their bounds; a declared null metric that its figure's
    metrics.json lacks is an error naming the claim (checked whenever the claim's own metrics
    exist, so a test-scale run proves every null is written)."""
    ns = c.null_system
    mfile = results_dir / c.paper / ns.figure / "metrics.json"
    rel = _rel(mfile, root)
    if not mfile.exists():
        raise ClaimsError(f"{c.file}: claim {c.id}: the null's figure {ns.figure} has no {rel}")
    metrics = _read_metrics(mfile, c, cache)
    value, nulls, missing = _values(metrics, ns.metric, c, check, rel, "the null's ")
    if missing:
        raise ClaimsError(f"{c.file}: claim {c.id}: {rel} has no null metric(s) {missing} (null_system.metric)")
    return value, bool(nulls), _bounds(metrics, ns.metric, c, rel)


def _null_status(c: Claim, check: Check, null_value, null_unmeasured: bool,
                 null_bounds=None) -> tuple[str, str, str]:
    """(null_system, null_observed, null_status) of a measured claim whose check was evaluated."""
    ns = c.null_system
    if ns is None:
        return "", "", "MISSING"
    if ns.none:
        return f"none: {ns.none}", "", "NONE"
    if ns.cannot_fail:
        return f"cannot fail: {ns.cannot_fail}", "", "CANNOT-FAIL"
    if null_unmeasured:
        return ns.system, _fmt(null_value), "NOT-MEASURED"
    verdict = decide(check, null_value, null_bounds)
    return ns.system, _fmt(null_value), "CENSORED" if verdict is None else "PASS" if verdict else "FAIL"


def _readings(results_dir: Path, root: Path, c: Claim, check: Check, cache: dict, scale: str) -> str:
    """The claim's value and its check's verdict under each reading it declares at ``scale``; a
    declared reading metric its figure's metrics.json lacks is an error naming the claim (as a null's)."""
    out = []
    for r in c.readings:
        if CHECKED_AS.get(scale, scale) not in r.scales:
            continue
        mfile = results_dir / c.paper / r.figure / "metrics.json"
        rel = _rel(mfile, root)
        if not mfile.exists():
            raise ClaimsError(f"{c.file}: claim {c.id}: reading {r.name}'s figure {r.figure} has no {rel}")
        metrics = _read_metrics(mfile, c, cache)
        value, nulls, missing = _values(metrics, r.metric, c, check, rel, f"reading {r.name}'s ")
        if missing:
            raise ClaimsError(f"{c.file}: claim {c.id}: {rel} has no metric(s) {missing} of reading {r.name}")
        if nulls:
            verdict = "NOT-MEASURED"
        else:
            ok = decide(check, value, _bounds(metrics, r.metric, c, rel))
            verdict = "CENSORED" if ok is None else "PASS" if ok else "FAIL"
        out.append(f"{r.name}: {_fmt(value)} ({verdict})")
    return "; ".join(out)


def reading_changes(rows: list[dict]) -> dict[str, dict[str, list[dict]]]:
    """Per named reading, the judged measured rows that declare it: ``claims``, those whose check
    holds under it (``holds``), those FAIL by default that it passes (``gained``) and those holding
    by default (PASS / WEAK) that it fails (``lost``)."""
    out: dict[str, dict[str, list[dict]]] = {}
    for r in rows:
        if r["kind"] != "measured" or r["status"] not in MEASURED_STATUSES:
            continue
        for name, _, verdict in reading_verdicts(r):
            t = out.setdefault(name, {"claims": [], "holds": [], "gained": [], "lost": []})
            t["claims"].append(r)
            if verdict == "PASS":
                t["holds"].append(r)
                if r["status"] == "FAIL":
                    t["gained"].append(r)
            elif verdict == "FAIL" and r["status"] in ("PASS", "WEAK"):
                t["lost"].append(r)
    return dict(sorted(out.items()))


def reading_verdicts(row: dict) -> list[tuple[str, str, str]]:
    """(reading, value, verdict) of each reading in a report row's ``readings`` cell."""
    out = []
    for part in filter(None, (row.get("readings") or "").split("; ")):
        name, rest = part.split(": ", 1)
        value, verdict = rest.rsplit(" (", 1)
        out.append((name, value, verdict.rstrip(")")))
    return out


def _rel(p: Path, root: Path) -> Path:
    try:
        return p.relative_to(root)
    except ValueError:
        return p


_WEAK_REASON = {
    "PASS": "WEAK: its null ({system}) passes the same check ({value}), so the check cannot tell the paper's "
            "idea from a system without it",
    "MISSING": "WEAK: no null declared (null_system), so nothing shows the check can fail",
    "CANNOT-FAIL": "WEAK: its check holds for any system ({system}), so it cannot tell the paper's idea from a "
                   "system without it",
    "NOT-MEASURED": "WEAK: its null ({system}) could not be measured at this scale, so nothing shows the check "
                    "can fail",
    "CENSORED": "WEAK: its null's value ({system}: {value}) is a bound its sweep's grid leaves open for this check, "
                "so nothing shows the check can fail",
}


def _row(root: Path, results_dir: Path, scale: str, c: Claim, cache: dict) -> dict:
    check = c.check_for(scale)
    row = {"id": c.id, "paper": c.paper if c.source in ("paper", "") else f"{c.paper} ({c.source})", "kind": c.kind,
           "where": c.where, "claim": c.claim, "expected": _fmt(c.full.expected if check is None else check.expected),
           "observed": "", "tolerance": "" if check is None else check.describe_tolerance(), "status": "",
           "null_system": "", "null_observed": "", "null_status": "", "diagnosis": "", "reason": "", "readings": ""}
    nb = root / "notebooks" / c.paper / f"{c.figure}.ipynb"
    mfile = results_dir / c.paper / c.figure / "metrics.json"
    rel = _rel(mfile, root)
    observed, nulls, null_value, null_unmeasured, bounds, null_bounds = None, [], None, False, None, None
    if mfile.exists():
        metrics = _read_metrics(mfile, c, cache)
        observed, nulls, missing = _values(metrics, c.metric, c, check, rel, "")
        if missing and not c.not_reproducible:  # a NOT-REPRODUCIBLE claim may have no metric at all
            raise ClaimsError(f"{c.file}: claim {c.id}: {rel} has no metric(s) {missing}")
        if not missing:
            row["observed"] = _fmt(observed)
            bounds = _bounds(metrics, c.metric, c, rel)
        if c.null_system is not None and c.null_system.metric is not None and not c.not_reproducible:
            null_value, null_unmeasured, null_bounds = _null_values(results_dir, root, c, check, cache)
            row.update(null_system=c.null_system.system, null_observed=_fmt(null_value))
    if c.not_reproducible:
        row.update(status="NOT-REPRODUCIBLE", reason=str(c.not_reproducible))
    elif not nb.exists():
        row.update(status="PENDING", reason=f"notebook notebooks/{c.paper}/{c.figure}.ipynb does not exist yet")
    elif not mfile.exists():
        row.update(status="PENDING", reason=f"notebooks/{c.paper}/{c.figure} has not been run at {scale} scale")
    elif check is None:
        row.update(status="NOT-CHECKED", reason="no qualitative check at quick scale; run the full scale")
    elif nulls:
        row.update(status="NOT-CHECKED", reason=f"{rel} has null value(s) for {nulls}: "
                                                f"the notebook could not measure them at {scale} scale")
    elif decide(check, observed, bounds) is None:
        row.update(status="NOT-CHECKED", reason=f"censored: {_bound_words(c.metric, bounds)} ({rel}: the "
                                                "sweep ends before the system misses the line), and the values "
                                                "the bound allows give different verdicts: a finer or longer "
                                                "sweep would decide it")
    else:
        ok = decide(check, observed, bounds)
        measured = c.kind == "measured"
        row["status"] = ("PASS" if ok else "FAIL") if measured else ("CONSISTENT" if ok else "INCONSISTENT")
        if measured:
            system, value, nstat = _null_status(c, check, null_value, null_unmeasured, null_bounds)
            row.update(null_system=system, null_observed=value, null_status=nstat)
            if ok and nstat in _WEAK_REASON:
                row.update(status="WEAK", reason=_WEAK_REASON[nstat].format(system=system, value=value))
        row["readings"] = _readings(results_dir, root, c, check, cache, scale)
        d = c.diagnosis_for(scale)
        why = render_why(d.why, c, results_dir, root, cache) if d else ""  # also when unused: a bad citation shows
        if not ok:
            row["diagnosis"] = d.kind if d else (UNDIAGNOSED if measured else "")
            row["reason"] = why
        if CHECKED_AS.get(scale, scale) == "quick" and c.quick is not None:
            row["reason"] = "; ".join(x for x in ("quick-scale qualitative check", row["reason"]) if x)
    if c.note and not row["reason"]:
        row["reason"] = c.note
    return row


# ---- reports ---------------------------------------------------------------------------------

def summary(rows: list[dict]) -> dict:
    """Counts per status (all, per paper, per kind) and the measured FAILs per diagnosis."""
    def zero():
        return {s: 0 for s in STATUSES}

    counts, per_paper, per_kind = zero(), {}, {k: zero() for k in KINDS}
    fails = {d: 0 for d in (*DIAGNOSES, UNDIAGNOSED)}
    for r in rows:
        counts[r["status"]] += 1
        per_paper.setdefault(r["paper"].split(" ", 1)[0], zero())[r["status"]] += 1
        per_kind[r["kind"]][r["status"]] += 1
        if r["status"] == "FAIL":
            fails[r["diagnosis"] or UNDIAGNOSED] += 1
    return {"total": len(rows), **counts, "undiagnosed": fails[UNDIAGNOSED], "fail_diagnoses": fails,
            "per_kind": per_kind, "per_paper": per_paper}


def write_csv(rows: list[dict], path: str | Path) -> None:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=REPORT_COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def _by_paper(rows: list[dict]) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in rows:
        out.setdefault(r["paper"].split(" ", 1)[0], []).append(r)
    return dict(sorted(out.items()))


def _count_tables(sets: list[tuple[str, list[dict], dict]]) -> list[str]:
    """Two tables: measured claims (PASS / WEAK / FAIL by diagnosis), then the echo kinds apart.
    `sets` are (scale, rows, source per paper): one row per paper and scale, side by side."""
    fail_cols = (*DIAGNOSES, UNDIAGNOSED)
    head_m = ["paper", "scale", "measured", *MEASURED_STATUSES, *(f"FAIL {d}" for d in fail_cols), *OPEN_STATUSES,
              "results"]
    head_e = ["paper", "scale", *KINDS[1:], *ECHO_STATUSES, *OPEN_STATUSES]
    lines_m = ["| " + " | ".join(head_m) + " |", "|" + "---|" * len(head_m)]
    lines_e = ["| " + " | ".join(head_e) + " |", "|" + "---|" * len(head_e)]

    def row_m(name, scale, rs, source):
        m = [r for r in rs if r["kind"] == "measured"]
        st = [sum(r["status"] == s for r in m) for s in MEASURED_STATUSES]
        dg = [sum(r["status"] == "FAIL" and (r["diagnosis"] or UNDIAGNOSED) == d for r in m) for d in fail_cols]
        op = [sum(r["status"] == s for r in m) for s in OPEN_STATUSES]
        return "| " + " | ".join(map(str, [name, scale, len(m), *st, *dg, *op, source])) + " |"

    def row_e(name, scale, rs):
        e = [r for r in rs if r["kind"] != "measured"]
        kinds = [sum(r["kind"] == k for r in e) for k in KINDS[1:]]
        st = [sum(r["status"] == s for r in e) for s in (*ECHO_STATUSES, *OPEN_STATUSES)]
        return "| " + " | ".join(map(str, [name, scale, *kinds, *st])) + " |"

    papers = sorted({p for _, rows, _ in sets for p in _by_paper(rows)})
    for p in papers:
        for scale, rows, source in sets:
            rs = _by_paper(rows).get(p, [])
            lines_m.append(row_m(p, scale, rs, source.get(p, "")))
            lines_e.append(row_e(p, scale, rs))
    for scale, rows, _ in sets:
        lines_m.append(row_m("**all**", scale, rows, ""))
        lines_e.append(row_e("**all**", scale, rows))
    return ["Measured claims (an output of a simulation, training, replay or data analysis of this artifact; "
            "only these are reproductions; WEAK: the check holds, but also for the claim's null, the simplest "
            "system without the paper's idea, or no null shows it can fail):", "", *lines_m, "",
            "Stated settings, the paper's own arithmetic and calibration targets (checked for consistency; "
            "not reproductions):", "", *lines_e]


def to_markdown(rows: list[dict], scale: str) -> str:
    s = summary(rows)
    buf = io.StringIO()
    buf.write(f"# Claims report ({scale} scale)\n\n")
    buf.write(f"{s['total']} claims: " + ", ".join(f"{s[k]} {k}" for k in STATUSES)
              + f"; {s['undiagnosed']} measured FAIL(s) without a diagnosis.\n\n")
    buf.write("\n".join(_count_tables([(scale, rows, {})])) + "\n")
    und = [r for r in rows if r["diagnosis"] == UNDIAGNOSED]
    if und:
        buf.write("\n## Measured FAILs without a diagnosis\n\n")
        buf.writelines(f"- `{r['id']}`: {_md_cell(r['claim'])} (expected {_md_cell(r['expected'])}, "
                       f"observed {_md_cell(r['observed'])})\n" for r in und)
    buf.write(_readings_section(rows))
    buf.write("\n## Every claim\n\n| " + " | ".join(REPORT_COLUMNS) + " |\n|" + "---|" * len(REPORT_COLUMNS) + "\n")
    for r in rows:
        buf.write("| " + " | ".join(_md_cell(r[k]) for k in REPORT_COLUMNS) + " |\n")
    return buf.getvalue()


def _readings_section(rows: list[dict]) -> str:
    """Each measured claim's check under the named readings it declares, beside its own status:
    which reading the paper's number needs, claim by claim (empty when no claim declares one)."""
    judged = [(r, *v) for r in rows if r["kind"] == "measured" and r["status"] in MEASURED_STATUSES
              for v in reading_verdicts(r)]
    if not judged:
        return ""
    lines = ["", "## Measured claims under named readings", "",
             "A claim's value under another reading of its paper (its claims file's `readings`), judged "
             "with the claim's own check; the claim's status stays the one of the default reading.", ""]
    for name, t in reading_changes(rows).items():
        lines.append(f"- `{name}`: {len(t['claims'])} claims; the check holds under it for {len(t['holds'])}: "
                     f"{len(t['gained'])} that FAIL by default, and it fails for {len(t['lost'])} that hold by default")
    lines += ["", "| id | status | observed | reading | under the reading | its verdict |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['id']} | {r['status']} | {_md_cell(r['observed'])} | {name} | {_md_cell(value)} | {verdict} |"
              for r, name, value, verdict in judged]
    return "\n".join(lines) + "\n"


def write_report(root: str | Path, scale: str, md: str | Path, csv_path: str | Path,
                 rows: list[dict] | None = None) -> dict:
    rows = check_claims(root, scale) if rows is None else rows
    Path(md).parent.mkdir(parents=True, exist_ok=True)
    Path(csv_path).parent.mkdir(parents=True, exist_ok=True)
    write_csv(rows, csv_path)
    Path(md).write_text(to_markdown(rows, scale))
    return summary(rows)


README_BEGIN = "<!-- claims-table:begin (generated by `servesim claims --readme README.md`) -->"
README_END = "<!-- claims-table:end -->"


def readme_section(rows: list[dict], scale: str, full_rows: list[dict] | None = None,
                   full_sources: dict | None = None) -> str:
    """The README's claims tables (measured apart from the other kinds; `scale`'s rows beside the
    published full-scale snapshot's where given), every measured FAIL without a diagnosis, and
    every NOT-REPRODUCIBLE claim with its reason."""
    s = summary(rows)
    sets = [(scale, rows, {p: f"this checkout's `results/{scale}/`" for p in _by_paper(rows)})]
    if full_rows is not None:
        sets.append(("full", full_rows, full_sources or {}))
    lines = [README_BEGIN, "", f"Status of every claim at {scale} scale (`results/{scale}/claims_report.md`, "
             "from a run of this checkout)" + (" and at paper scale (the published snapshot "
             "`results-full/claims_report.md`; each paper's part names the commit that produced it)"
             if full_rows is not None else "") + ". "
             "PASS / WEAK / FAIL are given to measured claims only; a stated setting, the paper's arithmetic or a "
             "calibration target is CONSISTENT or INCONSISTENT with the paper. Each measured FAIL carries a "
             "diagnosis: paper-inconsistent, substitute-data (our synthetic or proxy input cannot carry the "
             "claim) or open (format: `workflow/claims/README.md`).", "", *_count_tables(sets)]
    und = [r for r in rows if r["diagnosis"] == UNDIAGNOSED]
    if und:
        lines += ["", f"Measured FAILs without a diagnosis ({s['undiagnosed']}):", ""]
        lines += [f"- `{r['id']}` ({_md_cell(r['where'])}): {_md_cell(r['claim'])}" for r in und]
    nr = [r for r in rows if r["status"] == "NOT-REPRODUCIBLE"]
    if nr:
        lines += ["", f"Not reproducible: {len(nr)} claims, each with its reason, in `{NR_DOC}`."]
    if full_rows is not None:
        lines += ["", "What each measured claim that is not a PASS needs at paper scale, claim by claim (a named "
                  f"reading under which its check holds, or its diagnosis: what would settle it): `{UNMET_DOC}`."]
    lines += ["", README_END]
    return "\n".join(lines)


#: the list of NOT-REPRODUCIBLE claims, written beside the README's tables (its path from the README)
NR_DOC = "docs/not-reproducible.md"
#: what each measured claim that is not a PASS needs at paper scale (`servesim.analysis.unmet_doc`)
UNMET_DOC = "docs/unmet-claims.md"


def not_reproducible_doc(rows: list[dict]) -> str:
    """Every NOT-REPRODUCIBLE claim with its reason, per paper (the page `NR_DOC`)."""
    nr = [r for r in rows if r["status"] == "NOT-REPRODUCIBLE"]
    lines = ["# Claims this artifact cannot reproduce, and why", "",
             "Generated by `servesim claims --readme README.md` from `workflow/claims/<paper>.yaml`; do not "
             f"edit. {len(nr)} claims: what each needs that no public data, code or machine here provides.", ""]
    for paper, group in _by_paper(nr).items():
        lines += [f"## {paper}", ""]
        lines += [f"- `{r['id']}` ({_md_cell(r['where'])}, {r['kind']}): {_md_cell(r['reason'])}" for r in group]
        lines += [""]
    return "\n".join(lines)
