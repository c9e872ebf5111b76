import hashlib
from pathlib import Path

import pytest

from servesim.data import DataError, fetch, locate, read_manifest, sha256_of

HEADER = "dataset\tpath\tsha256\tbytes\tlicence\turl\tused_by\n"


def setup_project(tmp: Path, content: bytes, listed_sha: str | None = None):
    (tmp / "traces").mkdir()
    (tmp / "Snakefile").write_text("")
    (tmp / "pyproject.toml").write_text("")
    mirror = tmp / "mirror"
    (mirror / "ds" / "sub").mkdir(parents=True)
    (mirror / "ds" / "sub" / "f.csv").write_bytes(content)
    sha = listed_sha or hashlib.sha256(content).hexdigest()
    (tmp / "traces" / "MANIFEST").write_text(HEADER + f"ds\tsub/f.csv\t{sha}\t{len(content)}\tMIT\thttp://127.0.0.1:9/none\ttests\n")
    return mirror


def test_fetch_from_mirror_and_locate(tmp_path):
    mirror = setup_project(tmp_path, b"a,b\n1,2\n")
    [p] = fetch(["ds"], root=tmp_path, mirror=mirror, allow_download=False)
    assert p == tmp_path / "traces" / "data" / "ds" / "sub" / "f.csv"
    assert p.read_bytes() == b"a,b\n1,2\n"
    assert locate("ds/sub/f.csv", root=tmp_path) == p
    # idempotent: a second fetch keeps the verified copy
    assert fetch(["ds"], root=tmp_path, mirror=mirror, allow_download=False) == [p]


def test_bad_checksum_fails_and_leaves_nothing(tmp_path):
    mirror = setup_project(tmp_path, b"data", listed_sha="0" * 64)
    with pytest.raises(DataError, match=r"MANIFEST line 2: ds/sub/f.csv: checksum mismatch"):
        fetch(root=tmp_path, mirror=mirror, allow_download=False)
    assert not list((tmp_path / "traces" / "data").rglob("f.csv*"))


def test_missing_file_names_its_manifest_entry(tmp_path):
    setup_project(tmp_path, b"data")
    empty = tmp_path / "empty_mirror"
    empty.mkdir()
    with pytest.raises(DataError, match=r"MANIFEST line 2: ds/sub/f.csv: not in the mirror"):
        fetch(root=tmp_path, mirror=empty, allow_download=False)
    with pytest.raises(DataError, match="not found"):
        locate("ds/other.csv", root=tmp_path)


def test_unknown_dataset_and_malformed_manifest(tmp_path):
    mirror = setup_project(tmp_path, b"x")
    with pytest.raises(DataError, match="not in the MANIFEST"):
        fetch(["nope"], root=tmp_path, mirror=mirror)
    (tmp_path / "traces" / "MANIFEST").write_text(HEADER + "ds\tf\tabc\n")
    with pytest.raises(DataError, match=r"MANIFEST:2: expected 7"):
        read_manifest(tmp_path / "traces" / "MANIFEST")
    (tmp_path / "traces" / "MANIFEST").write_text(HEADER)  # cut off after its header
    with pytest.raises(DataError, match=r"MANIFEST lists no files"):
        fetch(root=tmp_path, mirror=mirror, allow_download=False)


def test_project_manifest_matches_mirror(project_root, mirror):
    """Every MANIFEST entry exists in the mirror with the listed size (checksums of two files)."""
    entries = read_manifest(project_root / "traces" / "MANIFEST")
    assert {e.dataset for e in entries} >= {"azure-llm-2023", "sageserve", "vidur-profiling", "aegaeon"}
    for e in entries:
        f = mirror / e.dataset / e.path
        assert f.exists(), e.key
        assert f.stat().st_size == e.bytes, e.key
    for e in entries:
        if e.path.endswith(("AzureLLMInferenceTrace_conv.csv", "perf_model.csv")):
            assert sha256_of(mirror / e.dataset / e.path) == e.sha256
    # and the other way: every data file of the mirror's MANIFEST datasets is listed, so a fresh
    # clone's fetch gets what the working tree reads from the mirror (the H100 profiles once were not)
    listed = {(e.dataset, e.path) for e in entries}
    unlisted = sorted(f"{d}/{f.relative_to(mirror / d).as_posix()}" for d in {e.dataset for e in entries}
                      for f in (mirror / d).rglob("*") if f.is_file() and (d, f.relative_to(mirror / d).as_posix()) not in listed)
    assert not unlisted, f"{len(unlisted)} mirror file(s) missing from traces/MANIFEST, e.g. {unlisted[:3]}"


@pytest.mark.parametrize("dataset,path", [
    ("ds", "../../x"), ("ds", "/etc/passwd"), ("ds", "sub/../../x"), ("..", "f.csv"), ("a/b", "f.csv"),
    ("ds", "sub\\..\\x"), ("ds", ""), ("ds", "C:/x"),
])
def test_manifest_paths_are_confined_to_traces_data(tmp_path, dataset, path):
    mirror = setup_project(tmp_path, b"x")
    sha = hashlib.sha256(b"x").hexdigest()
    (tmp_path / "traces" / "MANIFEST").write_text(HEADER + f"{dataset}\t{path}\t{sha}\t1\tMIT\thttp://h/x\tt\n")
    with pytest.raises(DataError, match=r"MANIFEST:2: (dataset|path)=.* must be a relative path inside traces/data"):
        fetch(root=tmp_path, mirror=mirror, allow_download=False)
    assert not (tmp_path / "x").exists() and not (tmp_path.parent / "x").exists()


def test_manifest_sizes_and_digests_checked(tmp_path):
    mirror = setup_project(tmp_path, b"data")
    sha = hashlib.sha256(b"data").hexdigest()
    manifest = tmp_path / "traces" / "MANIFEST"
    manifest.write_text(HEADER + f"ds\tsub/f.csv\t{sha}\t-1\tMIT\thttp://h/x\tt\n")
    with pytest.raises(DataError, match="bytes=-1 is negative"):
        read_manifest(manifest)
    manifest.write_text(HEADER + f"ds\tsub/f.csv\t{'z' * 64}\t4\tMIT\thttp://h/x\tt\n")
    with pytest.raises(DataError, match="not 64 hex digits"):
        read_manifest(manifest)
    manifest.write_text(HEADER + f"ds\tsub/f.csv\t{sha}\t3\tMIT\thttp://h/x\tt\n")  # the mirror's copy has 4
    with pytest.raises(DataError, match="has 4 bytes, the MANIFEST lists 3"):
        fetch(root=tmp_path, mirror=mirror, allow_download=False)


def test_download_larger_than_listed_is_stopped():
    import io

    from servesim.data import _copy_bounded

    out = io.BytesIO()
    with pytest.raises(DataError, match="larger than the 3 bytes"):
        _copy_bounded(io.BytesIO(b"abcdef"), out, 3, "x")
    _copy_bounded(io.BytesIO(b"abc"), out, 3, "x")
