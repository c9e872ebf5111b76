"""The published paper-scale snapshot (`results-full/`): publishing a paper, its stamp, the
re-checked claims report, and the committed snapshot agreeing with its own CSV and the README."""

import csv
import json
import re
import subprocess
from pathlib import Path

import pytest

from servesim.analysis import snapshot
from servesim.analysis.claims import README_BEGIN, README_END, REPORT_COLUMNS
from tests.foundation.test_claims import _readme_rows, claim, notebook, write


def _project(tmp_path):
    write(tmp_path, [claim(), claim(id="demo-02-x", figure="fig02_y", metric="y")])
    notebook(tmp_path, "demo", "fig01_x", {"x": 10.0}, scale="full")
    notebook(tmp_path, "demo", "fig02_y", None, scale="full")  # a figure the full run has not written
    (tmp_path / "results/full/demo/fig01_x/data.csv").write_text("a\n1\n")
    png = tmp_path / "figures/full/demo/fig01_x.png"
    png.parent.mkdir(parents=True)
    png.write_bytes(b"\x89PNG demo")
    bench = tmp_path / "results/full/benchmarks/demo/fig01_x.tsv"
    bench.parent.mkdir(parents=True)
    bench.write_text("s\th:m:s\n12.5\t0:00:12\n")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x"],
                   cwd=tmp_path, check=True)
    return tmp_path


def test_publish_copies_stamps_and_rechecks(tmp_path):
    root = _project(tmp_path)
    st = snapshot.publish(root, "demo")
    part = root / "results-full" / "demo"
    assert (part / "fig01_x" / "metrics.json").is_file() and (part / "fig01_x" / "data.csv").is_file()
    assert (part / "fig01_x" / "fig01_x.png").read_bytes() == b"\x89PNG demo"
    assert re.fullmatch(r"[0-9a-f]{40}", st["commit"]) and st["figures"] == ["fig01_x"]
    assert st["missing"] == ["fig02_y"] and st["wall_s"] == {"fig01_x": 12.5} and st["wall_s_total"] == 12.5
    assert json.loads((part / "STAMP.json").read_text()) == st
    rows = {r["id"]: r for r in snapshot.recheck(root)}
    assert rows["demo-01-x"]["status"] == "PASS" and rows["demo-02-x"]["status"] == "PENDING"
    assert snapshot.read_report(root) == [{k: r[k] for k in REPORT_COLUMNS} for r in rows.values()]
    md = (root / "results-full" / "claims_report.md").read_text()
    assert f"demo at {st['commit'][:10]}" in md and "1 figure(s) not run" in md


def test_the_stamp_names_each_modified_file_whole(tmp_path):
    """`dirty` lists the files that differed from the stamped commit, each path whole (a porcelain
    status line begins with a space, which must not be stripped with the output)."""
    root = _project(tmp_path)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "add", "workflow", "notebooks"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "claims"], cwd=root, check=True)
    f = root / "workflow" / "claims" / "demo.yaml"
    f.write_text(f.read_text() + "\n")
    assert snapshot.publish(root, "demo")["dirty"] == ["workflow/claims/demo.yaml"]


def test_republish_replaces_the_part_and_unpublished_papers_say_so(tmp_path):
    root = _project(tmp_path)
    snapshot.publish(root, "demo")
    (root / "results-full/demo/stale.txt").write_text("from an older run")
    snapshot.publish(root, "demo")
    assert not (root / "results-full/demo/stale.txt").exists()
    write(root, [claim(id="later-01-x")], paper="later")
    notebook(root, "later", "fig01_x", None)
    rows = {r["id"]: r for r in snapshot.recheck(root)}
    assert rows["later-01-x"]["status"] == "PENDING" and "not yet published" in rows["later-01-x"]["reason"]


def test_publish_errors_name_the_paper(tmp_path):
    root = _project(tmp_path)
    with pytest.raises(snapshot.SnapshotError, match="notebooks/nope"):
        snapshot.publish(root, "nope")
    notebook(root, "bare", "fig01_x", None)
    with pytest.raises(snapshot.SnapshotError, match="results/full/bare: no figure.*full_bare"):
        snapshot.publish(root, "bare")


def test_committed_snapshot_equals_its_csv_and_names_its_commits(project_root):
    """The published snapshot's claims report is what today's claims files give on its metrics,
    each published part names the commit that produced it, and the README's full-scale rows are
    that CSV's counts."""
    out = project_root / snapshot.SNAPSHOT
    if not (out / "claims_report.csv").is_file():
        pytest.skip("no published snapshot yet (servesim snapshot --paper P)")
    published = snapshot.read_report(project_root)
    assert published == [{k: r[k] for k in REPORT_COLUMNS} for r in snapshot.report_rows(project_root)], \
        "results-full/claims_report.csv is stale: run `servesim snapshot --recheck`"
    stamps = snapshot.stamps(project_root)
    assert stamps, "a snapshot report without any published part"
    for paper, st in stamps.items():
        assert re.fullmatch(r"[0-9a-f]{40}", st.get("commit") or ""), f"{paper}: STAMP.json names no commit"
        assert st["figures"], paper
        for fig in st["figures"]:
            assert (out / paper / fig / "metrics.json").is_file(), (paper, fig)
    text = (project_root / "README.md").read_text()
    section = text.split(README_BEGIN, 1)[1].split(README_END, 1)[0]
    table = _readme_rows(section, "Measured claims")
    for paper in stamps:
        if not (project_root / "workflow" / "claims" / f"{paper}.yaml").is_file():
            continue  # a group without claims (calibration): no row in the claims table
        mine = [r for r in published if r["paper"].split(" ", 1)[0] == paper and r["kind"] == "measured"]
        cells = table[(paper, "full")]
        assert int(cells[0]) == len(mine) and int(cells[1]) == sum(r["status"] == "PASS" for r in mine) \
            and int(cells[2]) == sum(r["status"] == "WEAK" for r in mine), \
            "README full-scale rows are stale: run `servesim claims --readme README.md`"
        assert stamps[paper]["commit"][:10] in cells[-1]


def test_snapshot_csv_has_the_report_columns(project_root):
    f = project_root / snapshot.SNAPSHOT / "claims_report.csv"
    if not f.is_file():
        pytest.skip("no published snapshot yet")
    with open(f, newline="") as fh:
        assert tuple(next(csv.reader(fh))) == REPORT_COLUMNS


def test_cli_refuses_stale_results_unless_allowed(tmp_path, monkeypatch, capsys):
    """`servesim snapshot --paper P` publishes only results Snakemake would not re-run (its dry run
    of full_P); --allow-stale publishes them with the jobs listed in the stamp."""
    from servesim.cli_data import _snapshot
    from servesim.errors import InputError

    root = _project(tmp_path)
    monkeypatch.setattr(snapshot, "stale_jobs", lambda r, p, f=None: ["figure x2"])

    class Args:
        root, paper, recheck, allow_stale, no_freshness_check = str(tmp_path), ["demo"], False, False, False
        figure = None

    with pytest.raises(InputError, match=r"results/full/demo is not up to date.*figure x2.*full_demo"):
        _snapshot(Args)
    assert not (root / "results-full" / "demo").exists()
    Args.allow_stale = True
    assert _snapshot(Args) == 0
    st = json.loads((root / "results-full/demo/STAMP.json").read_text())
    assert st["stale_jobs"] == ["figure x2"]
    assert "STALE" in (root / "results-full/claims_report.md").read_text()
    # --figure: the same check on the one figure's jobs, and one paper only
    Args.allow_stale, Args.figure = False, ["fig01_x"]
    with pytest.raises(InputError, match=r"results/full/demo/fig01_x is not up to date.*figure x2"):
        _snapshot(Args)
    Args.paper = ["demo", "other"]
    with pytest.raises(InputError, match="exactly one --paper"):
        _snapshot(Args)
    Args.paper, Args.no_freshness_check = ["demo"], True
    assert _snapshot(Args) == 0 and "re-published demo: fig01_x" in capsys.readouterr().out
    # a project with a timings page: its paper-scale table reads the stamps, so every run rewrites it
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "timings.md").write_text("stale\n")
    assert _snapshot(Args) == 0 and "rewrote" in capsys.readouterr().out
    page = (root / "docs" / "timings.md").read_text()
    assert page.startswith("# Timings") and "| demo |" in page


def test_remake_replaces_one_figure_and_names_its_commit(tmp_path):
    """--figure: one figure of a published part re-published from this checkout; the rest of the
    part and its stamp stay, and `remade` (and the report's header) say where the figure now comes from."""
    root = _project(tmp_path)
    with pytest.raises(snapshot.SnapshotError, match="not published"):
        snapshot.remake(root, "demo", ["fig01_x"])
    first = snapshot.publish(root, "demo")
    part = root / "results-full" / "demo"
    (root / "figures/full/demo/fig01_x.png").write_bytes(b"\x89PNG redrawn")
    with pytest.raises(snapshot.SnapshotError, match="not a notebook of demo"):
        snapshot.remake(root, "demo", ["fig09_nope"])
    with pytest.raises(snapshot.SnapshotError, match="not written"):
        snapshot.remake(root, "demo", ["fig02_y"])
    st = snapshot.remake(root, "demo", ["fig01_x"])
    assert (part / "fig01_x" / "fig01_x.png").read_bytes() == b"\x89PNG redrawn"
    assert st["commit"] == first["commit"] and st["wall_s"] == first["wall_s"] and st["missing"] == ["fig02_y"]
    assert st["remade"]["fig01_x"]["commit"] == first["commit"] and st["remade"]["fig01_x"]["wall_s"] == 12.5
    assert json.loads((part / "STAMP.json").read_text()) == st
    assert not list(part.glob(".*part"))
    snapshot.recheck(root)
    assert f"fig01_x re-made at {first['commit'][:10]}" in (root / "results-full" / "claims_report.md").read_text()


def test_remake_updates_the_wall_times_of_the_figure_and_the_runs_it_reads(tmp_path):
    """The stamp's per-job wall times follow what is published: re-making a figure takes its own and
    its runs' times (and the runs those collect) from this checkout's benchmark files; other jobs'
    times stay those of the paper's run."""
    import shutil

    import yaml

    root = _project(tmp_path)
    (root / "workflow/runs").mkdir(parents=True)
    (root / "workflow/schemas").mkdir(parents=True)
    shutil.copy(Path(__file__).parents[2] / "workflow/schemas/runs.schema.yaml", root / "workflow/schemas/")
    run = {"module": "servesim.cli", "outputs": ["summary.json"], "full": {}}
    (root / "workflow/runs/demo.yaml").write_text(yaml.safe_dump({"paper": "demo", "runs": {
        "sweep": run, "table": {**run, "collects": ["sweep"]}, "other": run}}))
    (root / "workflow/params").mkdir(parents=True)
    (root / "workflow/params/demo.yaml").write_text(yaml.safe_dump({"fig01_x": {"runs": ["table"]},
                                                                     "fig02_y": {"runs": ["other"]}}))
    bench = root / "results/full/benchmarks/demo"

    def times(**walls):
        for job, s in walls.items():
            (bench / f"{job}.tsv").write_text(f"s\th:m:s\n{s}\t0:00:01\n")

    times(sweep=100, table=10, other=50)
    first = snapshot.publish(root, "demo")
    assert first["wall_s"] == {"fig01_x": 12.5, "sweep": 100.0, "table": 10.0, "other": 50.0}
    times(fig01_x=13, sweep=400, table=20, other=60)   # everything re-ran; fig01_x is re-published
    st = snapshot.remake(root, "demo", ["fig01_x"])
    assert st["wall_s"] == {"fig01_x": 13.0, "sweep": 400.0, "table": 20.0, "other": 50.0}
    assert st["wall_s_total"] == 483.0 and st["remade"]["fig01_x"]["wall_s"] == 13.0


def test_remake_drops_a_published_figure_whose_notebook_is_gone(tmp_path):
    """A notebook renamed since its figure was published: re-making the new name takes the old one
    out of the part, its folder and its stamp entries (claims can no longer cite it)."""
    root = _project(tmp_path)
    snapshot.publish(root, "demo")
    snapshot.remake(root, "demo", ["fig01_x"])
    (root / "notebooks/demo/fig01_x.ipynb").rename(root / "notebooks/demo/fig03_z.ipynb")
    (root / "notebooks/demo/fig02_y.ipynb").unlink()   # a figure the part lists as not run
    notebook(root, "demo", "fig03_z", {"x": 10.0}, scale="full")
    (root / "results/full/demo/fig03_z/data.csv").write_text("a\n1\n")
    (root / "figures/full/demo/fig03_z.png").write_bytes(b"\x89PNG renamed")
    st = snapshot.remake(root, "demo", ["fig03_z"])
    part = root / "results-full" / "demo"
    assert st["figures"] == ["fig03_z"] and set(st["remade"]) == {"fig03_z"} and st["missing"] == []
    assert not (part / "fig01_x").exists() and (part / "fig03_z" / "fig03_z.png").read_bytes() == b"\x89PNG renamed"


def test_the_calibration_part_counts_its_engine_job(tmp_path):
    """The engine job's benchmark (workflow/rules/engine.smk) is written under the calibration's
    own folder, so the calibration part's stamp counts it."""
    rule = (Path(__file__).parents[2] / "workflow" / "rules" / "engine.smk").read_text()
    assert re.search(r'"results/\{scale\}/benchmarks/calibration/engine/calibration\.tsv"', rule)
    for folder, job, s in (("calibration", "sim_vs_vllm", 8.3), ("calibration/engine", "calibration", 3203.6)):
        d = tmp_path / "results" / "full" / "benchmarks" / folder
        d.mkdir(parents=True)
        (d / f"{job}.tsv").write_text(f"s\th:m:s\n{s}\t0:00:00\n")
    assert snapshot._wall_times(tmp_path, "calibration") == {"sim_vs_vllm": 8.3, "engine/calibration": 3203.6}
    assert snapshot._wall_times(tmp_path, "workload") == {}
