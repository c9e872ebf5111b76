"""Subcommands of the artifact itself: fetch, data manifest, claims, provenance."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _fetch(args) -> int:
    from servesim.data import fetch, project_root

    root = Path(args.root).resolve() if args.root else project_root()
    mirror = Path(args.mirror) if args.mirror else None
    if mirror is not None and not mirror.is_absolute():
        mirror = (root / mirror).resolve()
    if mirror is not None and mirror.exists() and not mirror.is_dir():
        from servesim.errors import InputError

        raise InputError(f"--mirror {args.mirror}: is a file, not a folder")
    if mirror is not None and not mirror.is_dir():
        if args.no_download:
            from servesim.errors import InputError

            raise InputError(f"--mirror {args.mirror}: no such folder (and --no-download forbids downloading)")
        print(f"servesim fetch: mirror {mirror} does not exist; downloading", file=sys.stderr)
        mirror = None
    # a DataError (missing, unlisted or mismatching file) is an input error: one line, exit status 2
    paths = fetch(args.datasets or None, root=root, mirror=mirror, allow_download=not args.no_download)
    print(f"fetched and verified {len(paths)} file(s) into {root / 'traces' / 'data'}")
    return 0


def _manifest(args) -> int:
    from servesim.data import project_root, write_manifest

    root = project_root()
    if not Path(args.mirror).is_dir():
        from servesim.errors import InputError

        raise InputError(f"--mirror {args.mirror}: not a folder")
    n = write_manifest(Path(args.mirror), root / "traces" / "datasets.yaml", Path(args.output or root / "traces" / "MANIFEST"))
    print(f"wrote {n} entries")
    return 0


def _claims(args) -> int:
    from servesim.analysis.claims import check_claims, write_report
    from servesim.analysis.claims_pages import update_readme

    from servesim.errors import InputError
    from servesim.output_dir import check_output_file

    root = Path(args.root).resolve()
    claims_dir = root / "workflow" / "claims"
    if not any(claims_dir.glob("*.yaml")):  # a wrong --root is not "0 claims, all fine"
        raise InputError(f"--root {args.root}: no claims files in {claims_dir}")
    md = check_output_file(args.md or root / "results" / args.scale / "claims_report.md", option="--md")
    csv = check_output_file(args.csv or root / "results" / args.scale / "claims_report.csv", option="--csv")
    if args.readme and not Path(args.readme).is_file():
        raise InputError(f"--readme {args.readme}: no such file")
    rows = check_claims(root, args.scale, papers=args.paper)  # a ClaimsError: one line, exit status 2 (servesim.cli_errors)
    s = write_report(root, args.scale, md, csv, rows=rows)
    if args.readme:
        from servesim.analysis import snapshot

        if args.paper:
            raise InputError("--readme counts every paper: drop --paper")
        full_rows = snapshot.read_report(root)
        sources = {p: f"`{snapshot.SNAPSHOT}/` at {st.get('commit', '?')[:10]}"
                   for p, st in snapshot.stamps(root).items()}
        update_readme(args.readme, rows, args.scale, full_rows, sources)
        from servesim.analysis import readings_doc

        readings_doc.update(args.readme, root / snapshot.SNAPSHOT,
                            snapshot.stamps(root).get("sageserve", {}).get("commit"))
    print(json.dumps({k: v for k, v in s.items() if k not in ("per_paper", "per_kind")}))
    if args.fail_undiagnosed and s["undiagnosed"]:
        print(f"servesim claims: {s['undiagnosed']} measured FAIL(s) without a diagnosis (listed in {md})",
              file=sys.stderr)
        return 2
    return 0


def _fresh_or_raise(args, root: Path, paper: str, figure: str | None = None) -> list[str]:
    """The full-scale jobs still to run for ``paper`` (or one ``figure`` of it) in this checkout;
    an error when there are some and --allow-stale was not given."""
    from servesim.analysis import snapshot
    from servesim.errors import InputError

    stale = [] if args.no_freshness_check else snapshot.stale_jobs(root, paper, figure)
    if stale and not args.allow_stale:
        what, run = (f"results/full/{paper}/{figure}", "run it at full scale") if figure else \
            (f"results/full/{paper}", f"run `snakemake --cores N full_{paper}`")
        raise InputError(f"{what} is not up to date with this checkout ({len(stale)} job(s) would run: "
                         f"{', '.join(stale[:5])}{' ...' if len(stale) > 5 else ''}); {run} first, "
                         "or --allow-stale to publish them marked as such")
    return stale


def _snapshot(args) -> int:
    from servesim.analysis import snapshot
    from servesim.errors import InputError

    root = Path(args.root).resolve()
    if not (root / "workflow" / "claims").is_dir():
        raise InputError(f"--root {args.root}: not a servesim project (no workflow/claims)")
    if not args.paper and not args.recheck:
        raise InputError("name a paper to publish (--paper P, repeatable) or --recheck")
    if args.figure:
        if len(args.paper or []) != 1:
            raise InputError("--figure re-publishes figures of one paper: give exactly one --paper")
        p = args.paper[0]
        for f in args.figure:
            _fresh_or_raise(args, root, p, f)
        try:
            st = snapshot.remake(root, p, args.figure)
        except snapshot.SnapshotError as exc:
            raise InputError(str(exc)) from None
        print(f"re-published {p}: {', '.join(args.figure)} at {st['remade'][args.figure[0]]['commit']}")
    for p in (args.paper or []) if not args.figure else []:  # whole papers
        stale = _fresh_or_raise(args, root, p)
        try:
            st = snapshot.publish(root, p, stale=stale)
        except snapshot.SnapshotError as exc:
            raise InputError(str(exc)) from None
        print(f"published {p}: {len(st['figures'])} figure(s) at {st['commit']}"
              + (f", {len(st['missing'])} not run: {st['missing']}" if st["missing"] else "")
              + (f"; dirty: {st['dirty']}" if st["dirty"] else ""))
    try:
        rows = snapshot.recheck(root)
    except snapshot.SnapshotError as exc:
        raise InputError(str(exc)) from None
    from servesim.analysis.claims import summary

    s = summary(rows)
    print(json.dumps({k: v for k, v in s.items() if k not in ("per_paper", "per_kind")}))
    page = root / "docs" / "timings.md"
    if page.exists():  # its paper-scale table reads the stamps: a publication left it stale until rewritten
        from servesim.analysis.timings import write_page

        print(f"rewrote {write_page(root, page)}")
    return 0


def _provenance(args) -> int:
    from servesim.analysis.provenance import write_provenance
    from servesim.errors import InputError
    from servesim.output_dir import atomic_file, check_output_file

    check_output_file(args.output)  # a folder, or a path under a file: before any work
    root = Path(args.root).resolve()
    if not (root / "traces" / "MANIFEST").is_file():
        raise InputError(f"--root {args.root}: not a servesim project (no traces/MANIFEST)")
    with atomic_file(args.output) as tmp:
        write_provenance(root, args.scale, args.seed, tmp)
    return 0


def _timings(args) -> int:
    from servesim.analysis.timings import render, write_page

    if args.md is None:
        sys.stdout.write(render(Path(args.root), args.scale))
    else:
        write_page(args.root, args.md, args.scale)
    return 0


def _docs(args) -> int:
    from servesim.analysis import docs_blocks

    root = Path(args.root)
    for page in args.pages or sorted((root / "docs").glob("*.md")):
        done = docs_blocks.update(page, root, args.scale)
        if done:
            print(f"{page}: {', '.join(done)}")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("fetch", help="copy datasets from the local mirror (or download), verify sha256")
    p.add_argument("datasets", nargs="*", help="dataset folders of traces/MANIFEST (default: all)")
    p.add_argument("--mirror", help="local mirror directory (default: ../shared/data beside the project)")
    p.add_argument("--root", help="project root (default: found from the working directory)")
    p.add_argument("--no-download", action="store_true", help="fail instead of downloading what the mirror lacks")
    p.set_defaults(func=_fetch)

    p = sub.add_parser("manifest", help="regenerate traces/MANIFEST from a mirror (maintainers)")
    p.add_argument("--mirror", required=True)
    p.add_argument("-o", "--output")
    p.set_defaults(func=_manifest)

    p = sub.add_parser("claims", help="check every paper claim against the metrics the notebooks wrote")
    p.add_argument("--scale", choices=["quick", "full", "test"], default="quick")
    p.add_argument("--root", default=".")
    p.add_argument("--md")
    p.add_argument("--csv")
    p.add_argument("--paper", action="append", help="check only this paper's claims (repeatable)")
    p.add_argument("--readme", help="also rewrite the claims table of this README (maintainers)")
    p.add_argument("--fail-undiagnosed", action="store_true",
                   help="exit with status 2 when a measured claim FAILs without a diagnosis")
    p.set_defaults(func=_claims)

    p = sub.add_parser("snapshot", help="publish a paper's full-scale results into results-full/ (stamped with "
                                        "the commit) and re-check the snapshot's claims report")
    p.add_argument("--paper", action="append", help="copy this paper's results/full outputs in (repeatable)")
    p.add_argument("--recheck", action="store_true", help="only re-check the snapshot against today's claims")
    p.add_argument("--figure", action="append",
                   help="with one --paper: replace only this figure of its published part (repeatable); the "
                        "stamp's `remade` names the commit it now comes from")
    p.add_argument("--allow-stale", action="store_true",
                   help="publish even where Snakemake would re-run jobs (they are listed in STAMP.json)")
    p.add_argument("--no-freshness-check", action="store_true",
                   help="skip the Snakemake dry run (the workflow's publish_<paper> rule: its inputs are fresh)")
    p.add_argument("--root", default=".")
    p.set_defaults(func=_snapshot)

    p = sub.add_parser("docs", help="rewrite the generated blocks of docs/*.md (measured numbers) from the "
                                    "results that hold them (maintainers)")
    p.add_argument("pages", nargs="*", type=Path, help="pages to rewrite (default: every docs/*.md)")
    p.add_argument("--scale", choices=["quick", "full", "test"], default="quick",
                   help="whose results to read (results/<scale>/)")
    p.add_argument("--root", default=".")
    p.set_defaults(func=_docs)

    p = sub.add_parser("timings", help="render docs/timings.md from the fresh-clone and benchmark records and a "
                                       "finished run's per-job times (maintainers)")
    p.add_argument("--scale", choices=["quick", "full", "test"], default="quick",
                   help="whose per-job benchmark files to read (results/<scale>/benchmarks)")
    p.add_argument("--root", default=".")
    p.add_argument("--md", help="write the page here (default: print it)")
    p.set_defaults(func=_timings)

    p = sub.add_parser("provenance", help="write provenance.json (git, packages, machine, data, config, seed)")
    p.add_argument("--scale", choices=["quick", "full", "test"], default="quick")
    p.add_argument("--root", default=".")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", required=True)
    p.set_defaults(func=_provenance)
