"""Run one benchmark script and append its JSON line to ``benchmarks/records/scripts.jsonl`` (what
``servesim timings`` renders into docs/timings.md), with the date and commit.

    python benchmarks/record.py benchmarks/sim_throughput.py --requests 1000000 --instances 100

Every script in ``benchmarks/`` prints its results as JSON lines (one, or one per configuration);
the record keeps them whole (``result``: the object, or ``{"lines": [...]}``).
"""

from __future__ import annotations

import ast
import datetime
import json
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def portable(argv: list[str]) -> list[str]:
    """``argv`` as the record keeps it: an absolute path outside this checkout (a scratch folder
    on the machine that ran it) becomes a placeholder named after its option (``--work DIR`` ->
    ``WORK``; a positional one -> ``DEST``), so a tracked record names no machine's paths."""
    out = []
    for i, arg in enumerate(argv):
        p = Path(arg)
        if p.is_absolute() and not p.resolve().is_relative_to(ROOT):
            prev = argv[i - 1] if i else ""
            arg = prev.lstrip("-").replace("-", "_").upper() if prev.startswith("--") else "DEST"
        out.append(arg)
    return out


def main(argv: list[str]) -> int:
    if not argv or not argv[0].endswith(".py"):
        raise SystemExit("usage: python benchmarks/record.py benchmarks/<script>.py [args...]")
    p = subprocess.run([sys.executable, *argv], cwd=ROOT, capture_output=True, text=True)
    sys.stderr.write(p.stderr)
    results = []
    for ln in p.stdout.splitlines():
        try:
            obj = json.loads(ln)
        except ValueError:
            continue  # progress text
        if isinstance(obj, dict):
            results.append(obj)
    if p.returncode != 0 or not results:
        raise SystemExit(f"{argv[0]}: exit {p.returncode}, {len(results)} JSON lines; no result recorded")
    # one JSON line (most scripts), or one per configuration (kept in order)
    result = results[0] if len(results) == 1 else {"lines": results}
    git = lambda *a: subprocess.run(["git", "-C", str(ROOT), *a], capture_output=True, text=True).stdout.strip()  # noqa: E731
    doc = ast.get_docstring(ast.parse((ROOT / argv[0]).read_text())) or ""
    rec = {"date": datetime.date.today().isoformat(), "commit": git("rev-parse", "HEAD"),
           "what": " ".join(doc.split("\n\n")[0].split()).rstrip("."),  # the script's first paragraph
           "dirty": bool(git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/records")), "script": argv[0],
           "command": shlex.join(portable(argv)), "source": "record.py", "result": result}
    with open(ROOT / "benchmarks" / "records" / "scripts.jsonl", "a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")
    print(json.dumps(rec, sort_keys=True))
    from servesim.analysis.timings import write_page

    print(f"rewrote {write_page(ROOT)}", file=sys.stderr)  # the page renders the records: it must not lag them
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
