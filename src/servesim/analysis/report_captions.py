"""The pages of the workflow's HTML report (`snakemake --report`, rules in workflow/rules/html_report.smk).

Every figure's caption is generated from its notebook, never written by hand: the notebook's markdown
cells (what the figure shows, the paper's values beside ours, the reading used), the claims it checks
with the paper's value, ours and the status, the parameters it ran with and its metrics. Snakemake
takes one caption template per rule (workflow/report/figure.rst); that template includes the file
written here for the figure at hand. Besides the captions: the claims report as a table, provenance
and the per-job runtimes, as HTML pages the report shows.
"""

from __future__ import annotations

import base64
import csv
import html
import json
from pathlib import Path

import yaml
from markdown_it import MarkdownIt

from .benchmarks import read_benchmarks

GROUP_TITLES = {"sageserve": "SageServe", "preserve": "PreServe", "oserve": "OServe", "aegaeon": "Aegaeon",
                "calibration": "Calibration", "workload": "Workload"}
# claims-report columns shown in a figure's caption, in this order (any other column the report has
# is shown after them, so new columns need no change here)
CAPTION_CLAIM_COLUMNS = ("id", "where", "claim", "expected", "observed", "tolerance", "status", "null_system",
                         "null_observed", "null_status", "reason")
COLUMN_TITLES = {"expected": "paper's value", "observed": "ours"}
STATUS_ORDER = ("PASS", "WEAK", "FAIL", "NOT-REPRODUCIBLE", "PENDING", "NOT-CHECKED")
STATUS_COLOURS = {"PASS": "#d9f2d9", "WEAK": "#f3ead0", "FAIL": "#f9d6d5", "NOT-REPRODUCIBLE": "#e8e8e8", "PENDING": "#fff2cc",
                  "NOT-CHECKED": "#e6eefb"}
MAX_METRICS = 300  # a caption lists at most this many metrics (the rest are in metrics.json)
_MD = MarkdownIt("commonmark").enable("table")
_ESC = html.escape


def group_title(group: str) -> str:
    """The report category of a notebook folder."""
    return GROUP_TITLES.get(group, group)


def notebook_cells(nb: str | Path) -> list[dict]:
    """The cells of a notebook file (a clear error naming it when it is not a notebook)."""
    nb = Path(nb)
    try:
        cells = json.loads(nb.read_text())["cells"]
    except (OSError, ValueError, KeyError) as e:
        raise ValueError(f"{nb}: not a readable notebook ({e})") from e
    return [{**c, "source": "".join(c["source"]) if isinstance(c["source"], list) else c["source"]} for c in cells]


def notebook_markdown(nb: str | Path) -> list[str]:
    """The text of the notebook's markdown cells, in order."""
    return [c["source"] for c in notebook_cells(nb) if c["cell_type"] == "markdown" and c["source"].strip()]


def notebook_title(nb: str | Path) -> str:
    """The first heading of the first markdown cell (the figure's title); the file name without one."""
    for text in notebook_markdown(nb)[:1]:
        for line in text.splitlines():
            if line.startswith("#"):
                return line.lstrip("#").strip()
    return Path(nb).stem


def figure_labels(root: str | Path, group: str, fig: str) -> dict:
    """The columns of the figure's row in the report's result table."""
    return {"figure": fig, "title": notebook_title(Path(root) / "notebooks" / group / f"{fig}.ipynb")}


def claim_figures(claims_dir: str | Path) -> dict[str, tuple[str, str]]:
    """{claim id: (paper, figure)} from workflow/claims/<paper>.yaml."""
    out = {}
    for f in sorted(Path(claims_dir).glob("*.yaml")):
        data = yaml.safe_load(f.read_text()) or {}
        for c in data.get("claims") or []:
            if "id" in c and "figure" in c:
                out[str(c["id"])] = (str(data.get("paper", f.stem)), str(c["figure"]))
    return out


def read_claims_report(csv_path: str | Path) -> list[dict]:
    with open(csv_path, newline="") as fh:
        return list(csv.DictReader(fh))


def injected_parameters(log_nb: str | Path) -> str | None:
    """The parameters papermill injected into the executed notebook (the workflow's log), without the
    machine-specific project root; None when the notebook has not been run by the workflow."""
    if not Path(log_nb).exists():
        return None
    for c in notebook_cells(log_nb):
        if "injected-parameters" in c.get("metadata", {}).get("tags", []):
            lines = [ln for ln in c["source"].splitlines() if not ln.startswith("root = ")]
            return "\n".join(ln for ln in lines if ln.strip() and not ln.startswith("# Parameters"))
    return None


def _cell(v) -> str:
    return _ESC(str(v if v is not None else ""))


def _table(rows: list[dict], columns: list[str], status_col: str | None = "status") -> str:
    head = "".join(f"<th>{_ESC(COLUMN_TITLES.get(c, c))}</th>" for c in columns)
    body = []
    for r in rows:
        colour = STATUS_COLOURS.get(r.get(status_col, "")) if status_col else None
        style = f' style="background:{colour}; color:#111"' if colour else ""  # readable on the report's dark panel
        body.append(f"<tr{style}>" + "".join(f"<td>{_cell(r.get(c))}</td>" for c in columns) + "</tr>")
    return f'<table class="servesim-table"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _columns(rows: list[dict], preferred: tuple[str, ...]) -> list[str]:
    present = list(rows[0].keys()) if rows else list(preferred)
    return [c for c in preferred if c in present] + [c for c in present if c not in preferred and c != "paper"]


def _metric_value(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    s = v if isinstance(v, str) else json.dumps(v)
    return s if len(s) <= 200 else s[:200] + " …"


SNAPSHOT = "results-full"  # the published paper-scale results (servesim.analysis.snapshot)


def _snapshot_html(root: Path, group: str, fig: str, full_rows: list[dict]) -> str:
    """The figure at paper scale from the published snapshot, where it has been published: its PNG
    (embedded: the report is one file), the commit that produced it and its claims there."""
    png = root / SNAPSHOT / group / fig / f"{fig}.png"
    if not png.is_file():
        return ""
    try:
        stamp = json.loads((root / SNAPSHOT / group / "STAMP.json").read_text())
    except (OSError, ValueError):
        stamp = {}
    img = base64.b64encode(png.read_bytes()).decode()
    parts = [f"<details><summary>At paper scale (published in {SNAPSHOT}/{_ESC(group)}/, commit "
             f"<code>{_ESC(str(stamp.get('commit', '?'))[:10])}</code>, {_ESC(str(stamp.get('published_utc', '')))})"
             f"</summary><img alt=\"{_ESC(fig)} at paper scale\" style=\"max-width:100%\" "
             f"src=\"data:image/png;base64,{img}\">"]
    if full_rows:
        parts.append(_table(full_rows, _columns(full_rows, CAPTION_CLAIM_COLUMNS)))
    parts.append("</details>")
    return "".join(parts)


def caption_html(root: str | Path, scale: str, group: str, fig: str, claim_rows: list[dict],
                 full_rows: list[dict] | None = None) -> str:
    """The caption of one figure, as HTML: its notebook's markdown, the claims it checks, the parameters
    it ran with and its metrics; at quick scale also the figure and claims at paper scale where the
    snapshot has them."""
    root = Path(root)
    nb = root / "notebooks" / group / f"{fig}.ipynb"
    parts = ['<div class="servesim-caption">']
    parts += [_MD.render(text) for text in notebook_markdown(nb)]
    if claim_rows:
        parts.append(f"<h4>Claims this figure checks ({_ESC(scale)} scale)</h4>")
        parts.append(_table(claim_rows, _columns(claim_rows, CAPTION_CLAIM_COLUMNS)))
    else:
        parts.append("<p><em>No numbered claim of workflow/claims/ reads this figure's metrics.</em></p>")
    if scale != "full":
        parts.append(_snapshot_html(root, group, fig, full_rows or []))
    params = injected_parameters(root / "logs" / scale / group / f"{fig}.ipynb")
    if params:
        parts.append(f"<h4>Parameters of this run</h4><pre>{_ESC(params)}</pre>")
    mfile = root / "results" / scale / group / fig / "metrics.json"
    if mfile.exists():
        metrics = json.loads(mfile.read_text())
        items = list(metrics.items())
        rows = "".join(f"<tr><td>{_ESC(k)}</td><td>{_ESC(_metric_value(v))}</td></tr>" for k, v in items[:MAX_METRICS])
        more = f"<p>… and {len(items) - MAX_METRICS} more in metrics.json</p>" if len(items) > MAX_METRICS else ""
        parts.append(f"<details><summary>Metrics ({len(items)}, results/{_ESC(scale)}/{_ESC(group)}/{_ESC(fig)}/"
                     f"metrics.json)</summary><table class=\"servesim-table\">{rows}</table>{more}</details>")
    parts.append(f"<p><small>Notebook <code>notebooks/{_ESC(group)}/{_ESC(fig)}.ipynb</code>; executed copy "
                 f"<code>logs/{_ESC(scale)}/{_ESC(group)}/{_ESC(fig)}.ipynb</code>; data "
                 f"<code>results/{_ESC(scale)}/{_ESC(group)}/{_ESC(fig)}/data.csv</code>.</small></p>")
    parts.append("</div>")
    return "\n".join(parts)


def as_raw_rst(html_text: str) -> str:
    """reStructuredText that passes the HTML through unchanged (Snakemake renders captions with docutils)."""
    body = "\n".join(("   " + ln) if ln.strip() else "" for ln in html_text.splitlines())
    return ".. raw:: html\n\n" + body + "\n"


def write_captions(root: str | Path, scale: str, figures: dict[str, list[str]], out_dir: str | Path,
                   claims_csv: str | Path) -> list[Path]:
    """results/<scale>/report/captions/<group>/<fig>.rst for every figure of ``figures``."""
    root, out_dir = Path(root), Path(out_dir)
    by_id = {r["id"]: r for r in read_claims_report(claims_csv)}
    full_csv = root / SNAPSHOT / "claims_report.csv"
    full_by_id = {r["id"]: r for r in read_claims_report(full_csv)} if full_csv.is_file() else {}
    per_figure: dict[tuple[str, str], list[dict]] = {}
    full_per_figure: dict[tuple[str, str], list[dict]] = {}
    for cid, key in claim_figures(root / "workflow" / "claims").items():
        if cid in by_id:
            per_figure.setdefault(key, []).append(by_id[cid])
        if cid in full_by_id:
            full_per_figure.setdefault(key, []).append(full_by_id[cid])
    written = []
    for group, figs in figures.items():
        for fig in figs:
            path = out_dir / group / f"{fig}.rst"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(as_raw_rst(caption_html(root, scale, group, fig, per_figure.get((group, fig), []),
                                                    full_per_figure.get((group, fig), []))))
            written.append(path)
    return written


_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; font-size: 13px; margin: 1em; }}
table {{ border-collapse: collapse; }}
th, td {{ border: 1px solid #ccc; padding: 2px 6px; vertical-align: top; text-align: left; }}
th {{ background: #f0f0f0; position: sticky; top: 0; }}
</style></head>
<body><h1>{title}</h1>
{body}
</body></html>
"""


def claims_page(csv_path: str | Path, scale: str) -> str:
    """The claims report as one HTML table (every column of claims_report.csv), with per-paper totals."""
    rows = read_claims_report(csv_path)
    seen = {r.get("status", "") for r in rows}
    statuses = [s for s in STATUS_ORDER if s in seen] + sorted(seen - set(STATUS_ORDER))
    per_paper: dict[str, dict[str, int]] = {}
    for r in rows:
        paper = r.get("paper", "").split(" ", 1)[0]
        per_paper.setdefault(paper, {s: 0 for s in statuses})[r.get("status", "")] += 1
    summary = [{"paper": p, "claims": sum(c.values()), **c} for p, c in sorted(per_paper.items())]
    summary.append({"paper": "all", "claims": len(rows), **{s: sum(1 for r in rows if r.get("status") == s)
                                                            for s in statuses}})
    body = (f"<p>{len(rows)} claims, checked at {_ESC(scale)} scale (results/{_ESC(scale)}/claims_report.csv). "
            "Rows are coloured by status.</p>"
            + _table(summary, ["paper", "claims", *statuses], status_col=None)
            + "<h2>Every claim</h2>"
            + _table(rows, list(rows[0].keys()) if rows else list(CAPTION_CLAIM_COLUMNS)))
    return _PAGE.format(title=f"Claims report ({_ESC(scale)} scale)", body=body)


def _kv_table(d: dict) -> str:
    rows = []
    for k, v in d.items():
        inner = _kv_table(v) if isinstance(v, dict) and v else _ESC(_metric_value(v) if not isinstance(v, str) else v)
        rows.append(f"<tr><th>{_ESC(str(k))}</th><td>{inner}</td></tr>")
    return f"<table>{''.join(rows)}</table>"


def provenance_page(json_path: str | Path, scale: str) -> str:
    """provenance.json (code version, packages, machine, data checksums, config, seed) as nested tables."""
    prov = json.loads(Path(json_path).read_text())
    return _PAGE.format(title=f"Provenance ({_ESC(scale)} scale)", body=_kv_table(prov))


def runtimes_page(bench_dir: str | Path, scale: str) -> str:
    """Every benchmarked job's wall time and peak memory (the `benchmark:` files of the workflow's
    rules), slowest first. The report's own Statistics panel has the per-rule runtimes of all rules."""
    def cell(v):
        return "" if v is None else f"{v:g}"

    bench = read_benchmarks(bench_dir)
    bench.sort(key=lambda r: (-(r["wall_s"] or 0.0), r["job"]))
    rows = [{"job": r["job"], "wall s": cell(r["wall_s"]), "h:m:s": r["hms"], "max RSS MB": cell(r["max_rss_mb"]),
             "CPU s": cell(r["cpu_s"])} for r in bench]
    total = sum(r["wall_s"] or 0.0 for r in bench)
    body = (f"<p>{len(rows)} benchmarked jobs (results/{_ESC(scale)}/benchmarks/), {total:.0f} s of wall time in all. "
            "The report's Statistics panel shows the runtimes of every rule.</p>"
            + _table(rows, ["job", "wall s", "h:m:s", "max RSS MB", "CPU s"], status_col=None))
    return _PAGE.format(title=f"Runtimes ({_ESC(scale)} scale)", body=body)


def write_report_pages(root: str | Path, scale: str, figures: dict[str, list[str]], *, captions_dir, claims_html,
                       provenance_html, runtimes_html) -> None:
    """Every page of the report for one scale (the `report_pages` rule)."""
    root = Path(root)
    res = root / "results" / scale
    write_captions(root, scale, figures, captions_dir, res / "claims_report.csv")
    page = claims_page(res / "claims_report.csv", scale)
    full_csv = root / SNAPSHOT / "claims_report.csv"
    if scale != "full" and full_csv.is_file():  # the published paper scale beside this scale's
        full = claims_page(full_csv, "full (published snapshot)")
        page = page.replace("</body>", full.split("<body>", 1)[1].split("</body>", 1)[0] + "</body>", 1)
    Path(claims_html).write_text(page)
    Path(provenance_html).write_text(provenance_page(res / "provenance.json", scale))
    Path(runtimes_html).write_text(runtimes_page(res / "benchmarks", scale))
