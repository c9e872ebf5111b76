"""Captions and pages of the HTML report, generated from the notebooks and the claims report."""

from __future__ import annotations

import csv
import json

import pytest
from docutils.core import publish_parts

from servesim.analysis import report_captions as rc
from tests.conftest import ROOT

NB = ROOT / "notebooks" / "sageserve" / "fig01_reactive_vs_ideal.ipynb"


def _project(tmp_path, claims_rows, extra_column=None):
    """A minimal project: one notebook, its claims file, a claims report, an executed log and metrics."""
    (tmp_path / "notebooks" / "sageserve").mkdir(parents=True)
    (tmp_path / "notebooks" / "sageserve" / NB.name).write_text(NB.read_text())
    (tmp_path / "workflow" / "claims").mkdir(parents=True)
    claims = [{"id": r["id"], "figure": "fig01_reactive_vs_ideal"} for r in claims_rows]
    (tmp_path / "workflow" / "claims" / "sageserve.yaml").write_text(json.dumps({"paper": "sageserve", "claims": claims}))
    res = tmp_path / "results" / "quick"
    (res / "sageserve" / "fig01_reactive_vs_ideal").mkdir(parents=True)
    cols = ["id", "paper", "where", "claim", "expected", "observed", "tolerance", "status", "reason"]
    cols += [extra_column] if extra_column else []
    with open(res / "claims_report.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in claims_rows:
            w.writerow({c: r.get(c, "") for c in cols})
    (res / "sageserve" / "fig01_reactive_vs_ideal" / "metrics.json").write_text(json.dumps({"violation_minutes": 12.5}))
    log = tmp_path / "logs" / "quick" / "sageserve" / NB.name
    log.parent.mkdir(parents=True)
    nb = json.loads(NB.read_text())
    nb["cells"].insert(1, {"cell_type": "code", "metadata": {"tags": ["injected-parameters"]}, "source":
                           "# Parameters\nroot = \"/somewhere/else\"\nscale = \"quick\"\nlead_min = 7\n",
                           "outputs": [], "execution_count": None})
    log.write_text(json.dumps(nb))
    return tmp_path


ROWS = [{"id": "sageserve-x1", "paper": "sageserve", "where": "Fig 1", "claim": "reactive lags <by> 5 min",
         "expected": "5", "observed": "4.5", "tolerance": "abs 1", "status": "PASS", "reason": "a reading"}]


def test_title_is_the_first_heading():
    assert rc.notebook_title(NB).startswith("SageServe Fig 1")
    assert rc.figure_labels(ROOT, "sageserve", "fig01_reactive_vs_ideal")["figure"] == "fig01_reactive_vs_ideal"


def test_caption_holds_markdown_claims_parameters_and_metrics(tmp_path):
    root = _project(tmp_path, ROWS)
    out = rc.write_captions(root, "quick", {"sageserve": ["fig01_reactive_vs_ideal"]}, root / "captions",
                            root / "results/quick/claims_report.csv")
    rst = out[0].read_text()
    # rendered the way Snakemake renders a caption (docutils), the HTML passes through
    body = publish_parts(rst, writer="html")["body"]
    assert "<h1>SageServe Fig 1" in body and "hand-drawn illustration" in body  # every markdown cell
    assert "Paper (hand-drawn)" in body
    assert "<td>sageserve-x1</td>" in body and "<td>4.5</td>" in body and "reactive lags &lt;by&gt; 5 min" in body
    assert "lead_min = 7" in body and "/somewhere/else" not in body  # the run's parameters, no machine path
    assert "violation_minutes" in body and "12.5" in body
    assert "system-message" not in body  # docutils found nothing to complain about


def test_caption_without_claims_or_run_says_so(tmp_path):
    root = _project(tmp_path, [])
    (root / "logs" / "quick" / "sageserve" / NB.name).unlink()
    html = rc.caption_html(root, "quick", "sageserve", "fig01_reactive_vs_ideal", [])
    assert "No numbered claim" in html and "Parameters of this run" not in html


def test_claims_page_shows_every_column_and_row(tmp_path):
    rows = ROWS + [{**ROWS[0], "id": "sageserve-x2", "status": "FAIL", "diagnosis": "off by 2x"}]
    root = _project(tmp_path, rows, extra_column="diagnosis")
    page = rc.claims_page(root / "results/quick/claims_report.csv", "quick")
    assert "<th>diagnosis</th>" in page and "<td>off by 2x</td>" in page  # a column added later shows up
    assert page.count("<td>sageserve-x") == 2
    assert "<td>all</td><td>2</td><td>1</td><td>1</td>" in page  # totals: claims, PASS, FAIL


def test_runtimes_page_slowest_first(tmp_path):
    bench = tmp_path / "benchmarks" / "sageserve"
    bench.mkdir(parents=True)
    head = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
    (bench / "fast.tsv").write_text(head + "1.5\t0:00:01\t100\t0\t0\t0\t0\t0\t0\t1.2\n")
    (bench / "slow.tsv").write_text(head + "90.0\t0:01:30\t900\t0\t0\t0\t0\t0\t0\t88\n")
    page = rc.runtimes_page(tmp_path / "benchmarks", "quick")
    assert page.index("sageserve/slow") < page.index("sageserve/fast")
    assert "2 benchmarked jobs" in page and "92 s" in page


def test_unreadable_notebook_names_the_file(tmp_path):
    bad = tmp_path / "broken.ipynb"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="broken.ipynb"):
        rc.notebook_markdown(bad)


def test_quick_caption_and_claims_page_show_the_published_paper_scale(tmp_path):
    """Where results-full/ has the figure, the quick report shows its PNG (embedded), the commit
    that produced it and its paper-scale claims; the claims page adds the snapshot's table."""
    root = _project(tmp_path, ROWS)
    part = root / "results-full" / "sageserve"
    (part / "fig01_reactive_vs_ideal").mkdir(parents=True)
    (part / "fig01_reactive_vs_ideal" / "fig01_reactive_vs_ideal.png").write_bytes(b"\x89PNG full")
    (part / "STAMP.json").write_text(json.dumps({"commit": "0123456789abcdef", "published_utc": "2026-11-27"}))
    full = [{**ROWS[0], "observed": "5.2", "status": "WEAK"}]
    with open(root / "results-full" / "claims_report.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(full[0]))
        w.writeheader()
        w.writerows(full)
    [cap] = rc.write_captions(root, "quick", {"sageserve": ["fig01_reactive_vs_ideal"]}, root / "captions",
                              root / "results/quick/claims_report.csv")
    body = publish_parts(cap.read_text(), writer="html")["body"]
    assert "At paper scale" in body and "0123456789" in body and "data:image/png;base64," in body
    assert "5.2" in body and "WEAK" in body
    (root / "results/quick/provenance.json").write_text("{}")
    rc.write_report_pages(root, "quick", {"sageserve": ["fig01_reactive_vs_ideal"]}, captions_dir=root / "c",
                          claims_html=root / "claims.html", provenance_html=root / "p.html",
                          runtimes_html=root / "r.html")
    page = (root / "claims.html").read_text()
    assert "Claims report (quick scale)" in page and "full (published snapshot)" in page
