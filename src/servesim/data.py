"""Public data: the MANIFEST, fetching from a local mirror or the web, checksum verification,
and finding a fetched file at run time.

`traces/MANIFEST` is a tab-separated table, one row per file:
``dataset  path  sha256  bytes  licence  url  used_by``. ``path`` is relative to the dataset
folder; a fetched file lands in ``traces/data/<dataset>/<path>``. Nothing fetched is committed.
This module imports only ``servesim.errors`` from the rest of servesim, so every layer may use it.

A MANIFEST row is checked before anything is copied: ``dataset`` is one folder name and ``path``
a relative path without ``..`` (a fetched file cannot land outside ``traces/data``), ``sha256`` is
64 hex digits and ``bytes`` a non-negative integer; a copy or download larger than ``bytes`` is
stopped there.
"""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import urllib.request
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from servesim.errors import IO_ERRNOS, InputError, writing
from servesim.project_root import project_root as _project_root_above

MANIFEST_COLUMNS = ("dataset", "path", "sha256", "bytes", "licence", "url", "used_by")
DEFAULT_MIRROR = "../shared/data"  # relative to the project root


class DataError(InputError):
    """A data file is missing, unlisted or fails its checksum; the message names it."""


@dataclass(frozen=True)
class Entry:
    dataset: str
    path: str
    sha256: str
    bytes: int
    licence: str
    url: str
    used_by: str
    line: int  # line number in the MANIFEST, for error messages

    @property
    def key(self) -> str:
        return f"{self.dataset}/{self.path}"


def project_root() -> Path:
    """The project root (``SERVESIM_ROOT`` overrides; else found from the cwd, then this file)."""
    if os.environ.get("SERVESIM_ROOT"):
        return Path(os.environ["SERVESIM_ROOT"]).resolve()
    try:
        return _project_root_above()
    except FileNotFoundError:
        return _project_root_above(Path(__file__).parent)


def read_manifest(path: str | os.PathLike | None = None) -> list[Entry]:
    """Parse the MANIFEST; a malformed row is an error naming the file and line."""
    path = Path(path) if path else project_root() / "traces" / "MANIFEST"
    if not path.exists():
        raise DataError(f"{path}: MANIFEST not found")
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:  # a BOM (some editors add one) is not a name
            return _parse_manifest(path, csv.reader(fh, delimiter="\t"))
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _parse_manifest(path: Path, rows) -> list[Entry]:
    entries: list[Entry] = []
    seen: set[str] = set()
    header = next(rows, None)
    if tuple(header or ()) != MANIFEST_COLUMNS:
        raise DataError(f"{path}:1: header must be {MANIFEST_COLUMNS}, got {header}")
    for lineno, row in enumerate(rows, start=2):
        if not row or row[0].startswith("#"):
            continue
        if len(row) != len(MANIFEST_COLUMNS):
            raise DataError(f"{path}:{lineno}: expected {len(MANIFEST_COLUMNS)} tab-separated fields, got {len(row)}")
        d = dict(zip(MANIFEST_COLUMNS, row))
        _check_confined(path, lineno, "dataset", d["dataset"], one_part=True)
        _check_confined(path, lineno, "path", d["path"])
        if len(d["sha256"]) != 64 or any(c not in "0123456789abcdefABCDEF" for c in d["sha256"]):
            raise DataError(f"{path}:{lineno}: sha256 of {d['dataset']}/{d['path']} is not 64 hex digits")
        try:
            size = int(d["bytes"])
        except ValueError:
            raise DataError(f"{path}:{lineno}: bytes={d['bytes']!r} is not an integer") from None
        if size < 0:
            raise DataError(f"{path}:{lineno}: bytes={size} is negative")
        e = Entry(d["dataset"], d["path"], d["sha256"].lower(), size, d["licence"], d["url"], d["used_by"], lineno)
        if e.key in seen:
            raise DataError(f"{path}:{lineno}: {e.key} is listed twice")
        seen.add(e.key)
        entries.append(e)
    if not entries:  # a cut-off or emptied MANIFEST would otherwise "fetch" nothing and succeed
        raise DataError(f"{path}: MANIFEST lists no files (only its header)")
    return entries


def _check_confined(manifest: Path, lineno: int, key: str, value: str, one_part: bool = False) -> None:
    """A MANIFEST ``dataset``/``path`` must stay inside ``traces/data``: relative, no ``..``, no
    backslash or drive, no empty part (and one part only for ``dataset``)."""
    parts = PurePosixPath(value).parts
    bad = (not value or value != value.strip() or "\\" in value or ":" in value or value.startswith("/")
           or any(p in ("..", ".", "") for p in value.split("/")) or (one_part and len(parts) != 1))
    if bad:
        raise DataError(f"{manifest}:{lineno}: {key}={value!r} must be a relative path inside traces/data "
                        f"(no '..', no absolute path{', one folder name' if one_part else ''})")


def _copy_bounded(src, out, limit: int, what: str) -> None:
    """Copy a stream, failing as soon as it exceeds ``limit`` bytes (the MANIFEST size)."""
    n = 0
    for block in iter(lambda: src.read(1 << 20), b""):
        n += len(block)
        if n > limit:
            raise DataError(f"{what}: larger than the {limit} bytes the MANIFEST lists; stopped")
        out.write(block)


def sha256_of(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def data_dir(root: Path | None = None) -> Path:
    return (root or project_root()) / "traces" / "data"


def mirror_dir(root: Path | None = None) -> Path | None:
    """The local mirror: ``SERVESIM_DATA_MIRROR`` if set, else ``../shared/data`` beside the root."""
    env = os.environ.get("SERVESIM_DATA_MIRROR")
    m = Path(env) if env else (root or project_root()) / DEFAULT_MIRROR
    return m.resolve() if m.is_dir() else None


def fetch_entry(e: Entry, dest_root: Path, mirror: Path | None, *, allow_download: bool = True) -> Path:
    """Copy one file from the mirror (or download it), verify its checksum, return its path."""
    dest = dest_root / e.dataset / e.path
    if not dest.resolve().is_relative_to(Path(dest_root).resolve()):  # read_manifest checks; Entry may be hand-made
        raise DataError(f"MANIFEST line {e.line}: {e.key}: resolves outside {dest_root}")
    if dest.exists() and dest.stat().st_size == e.bytes and sha256_of(dest) == e.sha256:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    src = mirror / e.dataset / e.path if mirror else None
    if src is not None and src.exists():
        if src.stat().st_size != e.bytes:
            raise DataError(f"MANIFEST line {e.line}: {e.key}: the mirror's copy {src} has {src.stat().st_size} bytes, "
                            f"the MANIFEST lists {e.bytes}")
        try:
            with writing(dest):  # a full disk names the file being fetched (copyfile names the source)
                shutil.copyfile(src, tmp)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        origin = str(src)
    elif allow_download:
        try:
            with urllib.request.urlopen(e.url, timeout=60) as r, open(tmp, "wb") as out, writing(dest):
                _copy_bounded(r, out, e.bytes, f"MANIFEST line {e.line}: {e.key}: download from {e.url}")
        except DataError:
            tmp.unlink(missing_ok=True)
            raise
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            if exc.errno in IO_ERRNOS:  # writing it failed (a full disk): not the download's fault
                raise
            raise DataError(f"MANIFEST line {e.line}: {e.key}: not in the mirror ({mirror}) and download from {e.url} failed: {exc}") from None
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        origin = e.url
    else:
        raise DataError(f"MANIFEST line {e.line}: {e.key}: not in the mirror ({mirror}) and downloads are off")
    got = sha256_of(tmp)
    if got != e.sha256:
        tmp.unlink(missing_ok=True)
        raise DataError(f"MANIFEST line {e.line}: {e.key}: checksum mismatch for {origin}: expected {e.sha256}, got {got}")
    os.replace(tmp, dest)
    return dest


def fetch(datasets: list[str] | None = None, *, root: Path | None = None, manifest: Path | None = None,
          mirror: Path | None = None, allow_download: bool = True) -> list[Path]:
    """Fetch and verify every MANIFEST file of ``datasets`` (all when None)."""
    root = root or project_root()
    entries = read_manifest(manifest or root / "traces" / "MANIFEST")
    known = sorted({e.dataset for e in entries})
    if datasets:
        unknown = [d for d in datasets if d not in known]
        if unknown:
            raise DataError(f"dataset(s) {unknown} not in the MANIFEST; known: {known}")
        entries = [e for e in entries if e.dataset in datasets]
    mirror = mirror if mirror is not None else mirror_dir(root)
    done: list[Path] = []
    for e in entries:
        try:
            done.append(fetch_entry(e, data_dir(root), mirror, allow_download=allow_download))
        except OSError as exc:  # a full disk: say what is kept (each file is in place only once verified)
            exc.add_note(f"{e.key} not fetched (its partial copy removed); the {len(done)} file(s) fetched before "
                         f"it are verified in place, and a re-run fetches only the rest")
            raise
    return done


def locate(key: str, *, root: Path | None = None) -> Path:
    """Path of a data file by ``<dataset>/<path>``: the fetched copy under ``traces/data``, else the
    local mirror (so a notebook opened before any fetch still runs). Missing -> DataError naming it."""
    root = root or project_root()
    for base in (data_dir(root), mirror_dir(root)):
        if base is not None and (base / key).exists():
            return base / key
    raise DataError(f"data file {key!r} not found under {data_dir(root)} or the mirror {mirror_dir(root)}; "
                    f"run `snakemake fetch` (or `servesim fetch`) first, and check traces/MANIFEST lists it")


def _url_for(rel: str, rules: list) -> str:
    for prefix, template in rules:
        if rel.startswith(prefix):
            return template.format(path=rel[len(prefix):], name=rel.rsplit("/", 1)[-1])
    raise DataError(f"no url rule matches {rel!r}")


def build_manifest_rows(mirror: Path, datasets: dict[str, dict]) -> list[list[str]]:
    """MANIFEST rows for every file of the given datasets in a mirror.

    ``datasets`` maps a dataset folder to ``{"licence", "url": [[prefix, template], ...], "used_by"}``
    (the layout of ``traces/datasets.yaml``).
    """
    rows = []
    for ds, meta in sorted(datasets.items()):
        base = mirror / ds
        if not base.is_dir():
            raise DataError(f"{base}: dataset folder not in the mirror")
        for f in sorted(p for p in base.rglob("*") if p.is_file()):
            rel = f.relative_to(base).as_posix()
            rows.append([ds, rel, sha256_of(f), str(f.stat().st_size), meta["licence"],
                         _url_for(rel, meta["url"]), meta["used_by"]])
    return rows


def write_manifest(mirror: Path, datasets_yaml: Path, out: Path) -> int:
    """Regenerate the MANIFEST from a mirror; returns the number of files listed."""
    from servesim._yaml import strict_yaml_load

    datasets = strict_yaml_load(Path(datasets_yaml).read_text(), source=str(datasets_yaml))
    rows = build_manifest_rows(Path(mirror), datasets)
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(MANIFEST_COLUMNS)
        w.writerows(rows)
    return len(rows)
