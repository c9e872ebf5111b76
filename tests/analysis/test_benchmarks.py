"""The one reader of the workflow's benchmark files (Runtimes page, snapshot stamp, end-of-run summary)."""

import os

from servesim.analysis.benchmarks import read_benchmarks, slowest_summary

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def bench(path, wall, mtime):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{wall}\t0:00:{int(wall):02d}\t100.5\t1\t1\t1\t0\t0\t50\t{wall / 2}\n")
    os.utime(path, (mtime, mtime))


def test_reads_the_last_repeat_and_tolerates_odd_files(tmp_path):
    b = tmp_path / "results" / "quick" / "benchmarks"
    bench(b / "paper" / "fig01.tsv", 3.5, 1000)
    f = b / "paper" / "run" / "two.tsv"   # two repeats: the last one counts
    f.parent.mkdir(parents=True)
    f.write_text(HEADER + "9\t0:00:09\t1\t1\t1\t1\t0\t0\t50\t4\n" + "7\t0:00:07\tNA\t1\t1\t1\t0\t0\t50\t3\n")
    (b / "empty.tsv").write_text(HEADER)   # no record: skipped
    rows = {r["job"]: r for r in read_benchmarks(b)}
    assert set(rows) == {"paper/fig01", "paper/run/two"}
    assert rows["paper/run/two"]["wall_s"] == 7.0 and rows["paper/run/two"]["max_rss_mb"] is None
    assert rows["paper/fig01"]["cpu_s"] == 1.75


def test_slowest_summary_lists_this_runs_jobs_slowest_first(tmp_path):
    res = tmp_path / "results"
    bench(res / "quick" / "benchmarks" / "a" / "old.tsv", 500, 1000)   # written before this run
    bench(res / "quick" / "benchmarks" / "a" / "x.tsv", 20, 2000)
    bench(res / "quick" / "benchmarks" / "b" / "y.tsv", 40, 2000)
    bench(res / "test" / "benchmarks" / "c" / "z.tsv", 30, 2000)
    text = slowest_summary(res, since=1500, n=2)
    lines = text.splitlines()
    assert "the 2 slowest of the 3 jobs" in lines[0] and "90 s" in lines[0]
    assert lines[1].split() == ["40.0", "s", "quick/b/y"] and lines[2].split() == ["30.0", "s", "test/c/z"]
    assert "old" not in text
    assert slowest_summary(res, since=5000) == ""


def test_slowest_summary_reports_the_schedulers_own_cpu(tmp_path):
    res = tmp_path / "results"
    bench(res / "quick" / "benchmarks" / "a" / "x.tsv", 20, 2000)
    last = slowest_summary(res, since=1500, scheduler=(30.0, 120.0)).splitlines()[-1]
    assert "30 CPU s in 120 s" in last and "(25 % of one core)" in last
    assert "Snakemake itself" not in slowest_summary(res, since=1500)
