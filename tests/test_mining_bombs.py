"""Issue 53 A: archive bombs in ``mine SOURCE`` and ``--execretrieval-background``.

Archive reading is bounded on what is decompressed and kept, never on what a header declares:
a member that inflates past its declared size, an extended tar header over its bound, an
archive that takes more than the scanning bound to read, and every other archive that cannot
be read are a :class:`SourceError` naming the archive (a usage error), never a MemoryError, a
hang or a traceback; the files past the bound on bytes kept are left out and counted."""

from __future__ import annotations

import bz2
import gzip
import io
import struct
import tarfile
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from mining_fixtures import CORE, INIT, LICENCE
from plugin_runs import bench

from pytest_execretrieval import cli
from pytest_execretrieval.mining import sources
from pytest_execretrieval.mining.sources import SourceError, load_source
from pytest_execretrieval.orchestration import SetupError, background_functions

METADATA = "Metadata-Version: 2.4\nName: tinypkg\nVersion: 0.1\nLicense-Expression: MIT\n"
PACKAGE = {
    "tinypkg/__init__.py": INIT,
    "tinypkg/core.py": CORE,
    "tinypkg-0.1.dist-info/METADATA": METADATA,
    "tinypkg-0.1.dist-info/licenses/LICENSE": LICENCE,
}
ZEROS = 32 << 20  # what the bomb member inflates to: small for CI, 160,000 times its declaration


def lying_wheel(path: Path, method: int, declared: int = 200, size: int = ZEROS) -> Path:
    """A wheel whose ``tinypkg/bomb.py`` holds ``size`` zero bytes compressed with ``method``
    and declares ``declared`` bytes (its local header and directory entry edited)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        for name, body in PACKAGE.items():
            archive.writestr(name, body)
        archive.writestr("tinypkg/bomb.py", bytes(size))
    raw = bytearray(buffer.getvalue())
    info = zipfile.ZipFile(io.BytesIO(bytes(raw))).getinfo("tinypkg/bomb.py")
    struct.pack_into("<I", raw, info.header_offset + 22, declared)  # local: uncompressed size
    entry = raw.find(b"PK\x01\x02" + raw[info.header_offset + 4 : info.header_offset + 6])
    while raw[entry + 46 : entry + 46 + len(b"tinypkg/bomb.py")] != b"tinypkg/bomb.py":
        entry = raw.find(b"PK\x01\x02", entry + 1)
    struct.pack_into("<I", raw, entry + 24, declared)  # the directory entry's uncompressed size
    path.write_bytes(bytes(raw))
    return path


def raw_header(name: str, kind: bytes, size: int) -> bytes:
    """A tar header block of type ``kind`` declaring ``size`` bytes (any size the field holds)."""
    block = bytearray(tarfile.TarInfo(name).tobuf(tarfile.USTAR_FORMAT))
    block[124:136] = b"%011o\0" % size
    block[156:157] = kind
    block[148:156] = b" " * 8
    block[148:156] = b"%06o\0 " % sum(block)
    return bytes(block)


def write_sdist(path: Path, files: dict[str, bytes], mode: str = "w:gz") -> Path:
    with tarfile.open(path, mode) as archive:
        for name, body in files.items():
            info = tarfile.TarInfo(f"tinypkg-0.1/{name}")
            info.size = len(body)
            archive.addfile(info, io.BytesIO(body))
    return path


def sdist_files() -> dict[str, bytes]:
    return {
        "tinypkg/__init__.py": INIT.encode(),
        "tinypkg/core.py": CORE.encode(),
        "PKG-INFO": METADATA.encode(),
        "LICENSE": LICENCE.encode(),
    }


@pytest.mark.parametrize(
    "method", [zipfile.ZIP_BZIP2, zipfile.ZIP_DEFLATED, zipfile.ZIP_LZMA], ids=str
)
def test_a_member_that_inflates_past_its_declared_size_is_refused_unread(tmp_path, method):
    """A few-KB wheel whose member declares 200 bytes and inflates to 32 MiB (the audit's
    inflated to 4 GiB): refused after at most 201 bytes decompressed, memory flat (but for
    the LZMA decoder's dictionary, 8 MiB here)."""
    wheel = lying_wheel(tmp_path / "tinypkg-0.1-py3-none-any.whl", method)
    assert wheel.stat().st_size < 64 << 10
    tracemalloc.start()
    try:
        with pytest.raises(SourceError, match="declares 200 bytes and inflates to more"):
            load_source(str(wheel))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < (10 << 20 if method == zipfile.ZIP_LZMA else 1 << 20)


def test_a_bomb_is_a_usage_error_naming_the_archive(tmp_path, capsys):
    wheel = lying_wheel(tmp_path / "tinypkg-0.1-py3-none-any.whl", zipfile.ZIP_BZIP2)
    assert cli.main(["mine", str(wheel), "--out", str(tmp_path / "out")]) == 4
    err = capsys.readouterr().err
    assert str(wheel) in err and "inflates to more" in err
    assert not (tmp_path / "out").exists()


def test_a_member_declared_too_large_is_skipped_without_being_decompressed(tmp_path, monkeypatch):
    """Its declared size is enough to skip it: a zip member is never decompressed for that
    (the scanning bound, 1 MiB here, would refuse the archive if it were)."""
    monkeypatch.setattr(sources, "MAX_SCANNED_BYTES", 1 << 20, raising=False)
    wheel = lying_wheel(tmp_path / "w.whl", zipfile.ZIP_DEFLATED, declared=ZEROS)
    tree = load_source(str(wheel))
    assert tree.skipped == {"a file over 1 MiB": 1}
    assert sorted(tree.files) == [
        "tinypkg-0.1.dist-info/licenses/LICENSE",
        "tinypkg/__init__.py",
        "tinypkg/core.py",
    ]


@pytest.mark.parametrize("kind", [tarfile.GNUTYPE_LONGNAME, tarfile.XHDTYPE], ids=repr)
@pytest.mark.parametrize("mode", ["gz", "none"])
def test_a_tar_extended_header_claiming_gigabytes_is_refused_before_it_is_read(
    tmp_path, kind, mode
):
    """A 20 KB sdist whose GNU long-name (or pax) header claims 6 GiB: :mod:`tarfile` reads
    such a header's data whole into memory; it is refused on its declared size."""
    raw = raw_header("././@LongLink", kind, 6 << 30) + b"a" * 20_000
    data = gzip.compress(raw) if mode == "gz" else raw
    sdist = tmp_path / ("tinypkg-0.1.tar.gz" if mode == "gz" else "tinypkg-0.1.tar")
    sdist.write_bytes(data)
    with pytest.raises(SourceError, match=r"extended header .* of 6,442,450,944 bytes, over 64"):
        load_source(str(sdist))


def test_an_sdist_that_takes_more_than_the_scanning_bound_to_read_is_refused(tmp_path, monkeypatch):
    """The audit's 62 KB sdist held a 48 GiB member that had to be decompressed to be passed
    over; here 4 MiB against a bound of 1 MiB. Kept or skipped, every decompressed byte counts."""
    monkeypatch.setattr(sources, "MAX_SCANNED_BYTES", 1 << 20, raising=False)
    files = {**sdist_files(), "data/blob.bin": bytes(4 << 20)}
    for mode, suffix in (("w:gz", "tar.gz"), ("w:bz2", "tar"), ("w:xz", "tgz")):
        sdist = write_sdist(tmp_path / f"tinypkg-0.1.{suffix}", files, mode)
        with pytest.raises(SourceError, match=r"more than 1 MiB decompressed to read it"):
            load_source(str(sdist))
    monkeypatch.setattr(sources, "MAX_SCANNED_BYTES", 8 << 20)
    assert "tinypkg-0.1/tinypkg/core.py" in load_source(str(sdist)).files


def test_files_past_the_bound_on_bytes_kept_are_left_out_and_counted(tmp_path, monkeypatch):
    """4,200 honest 1 MiB members were all held at once; now what is kept is bounded in all."""
    monkeypatch.setattr(sources, "MAX_TOTAL_BYTES", 16 << 10, raising=False)
    files = {**PACKAGE, **{f"tinypkg/m{i:02}.py": "#" * 1000 + "\n" for i in range(40)}}
    wheel = tmp_path / "tinypkg-0.1-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, body in files.items():
            archive.writestr(name, body)
    tree = load_source(str(wheel))
    left_out = tree.skipped["over the limit of 16 KiB of files in all"]
    assert left_out > 20
    assert sum(len(body) for body in tree.files.values()) <= 16 << 10
    assert len(tree.files) + left_out + 1 == len(files)  # the METADATA is kept too


def bad_archives(tmp_path: Path) -> list[Path]:
    """Archives that cannot be read, each in its own way."""
    garbage = tmp_path / "garbage-0.1-py3-none-any.whl"
    garbage.write_bytes(b"PK\x03\x04" + bytes(range(256)) * 8)
    whole = write_sdist(tmp_path / "whole.tar.gz", sdist_files()).read_bytes()
    truncated = tmp_path / "truncated-0.1.tar.gz"
    truncated.write_bytes(whole[: len(whole) // 2])
    crc = tmp_path / "crc-0.1-py3-none-any.whl"
    with zipfile.ZipFile(crc, "w") as archive:  # stored: the bytes are the member's
        archive.writestr("tinypkg/core.py", CORE)
    data = crc.read_bytes()
    crc.write_bytes(data.replace(b"clamp_sum", b"clamp_SUM", 1))
    not_gzip = tmp_path / "notgzip-0.1.tar.gz"
    not_gzip.write_bytes(b"\x1f\x8b" + bytes(600))
    bad_header = tmp_path / "header-0.1.tar"
    bad_header.write_bytes(b"x" * 512 + bytes(1024))
    dictionary = tmp_path / "dictionary-0.1-py3-none-any.whl"  # an LZMA dictionary of 4 GiB
    with zipfile.ZipFile(dictionary, "w", compression=zipfile.ZIP_LZMA) as archive:
        archive.writestr("tinypkg/core.py", CORE)
    raw = bytearray(dictionary.read_bytes())
    raw[30 + len("tinypkg/core.py") + 5 : 30 + len("tinypkg/core.py") + 9] = b"\xff" * 4
    dictionary.write_bytes(bytes(raw))
    return [garbage, truncated, crc, not_gzip, bad_header, dictionary]


def test_an_archive_that_cannot_be_read_is_a_usage_error_naming_it(tmp_path, capsys):
    for archive in bad_archives(tmp_path):
        assert cli.main(["mine", str(archive), "--out", str(tmp_path / "out")]) == 4, archive
        err = capsys.readouterr().err
        assert str(archive) in err and "Traceback" not in err


def test_a_pyproject_nesting_past_the_parser_is_no_metadata(tmp_path):
    (tmp_path / "pyproject.toml").write_text("a = " + "[" * 100_000)
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    tree = load_source(str(tmp_path))
    assert tree.distribution == tmp_path.name and "m.py" in tree.files


def test_a_tar_read_here_lists_what_tarfile_lists(tmp_path):
    """The header-by-header reader gives the members :mod:`tarfile` gives: GNU long names,
    pax names, a ustar prefix, links and a directory, gzip, bzip2 and xz, several streams."""
    files = {
        **sdist_files(),
        "tinypkg/" + "long_" * 30 + ".py": b"def long():\n    return 1\n",
        "tinypkg/\u00fcnicode.py": b"def u():\n    return 2\n",
    }
    for fmt in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT, tarfile.USTAR_FORMAT):
        for mode in ("w:gz", "w:bz2", "w:xz", "w"):
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode=mode, format=fmt) as archive:
                for name, body in files.items():
                    if fmt == tarfile.USTAR_FORMAT and len(name) > 90:
                        name = "tinypkg/" + "d" * 80 + "/long.py"  # a ustar prefix
                    info = tarfile.TarInfo(f"tinypkg-0.1/{name}")
                    info.size = len(body)
                    archive.addfile(info, io.BytesIO(body))
                link = tarfile.TarInfo("tinypkg-0.1/tinypkg/link.py")
                link.type, link.linkname = tarfile.SYMTYPE, "core.py"
                archive.addfile(link)
                folder = tarfile.TarInfo("tinypkg-0.1/tinypkg/sub")
                folder.type = tarfile.DIRTYPE
                archive.addfile(folder)
            path = tmp_path / f"t-{fmt}-{mode.replace(':', '')}.tar"
            path.write_bytes(buffer.getvalue())
            tree = load_source(str(path))
            with tarfile.open(path) as archive:
                expected = {
                    m.name: archive.extractfile(m).read()  # type: ignore[union-attr]
                    for m in archive.getmembers()
                    if m.isreg()
                }
            assert tree.files == {k: v for k, v in expected.items() if not k.endswith("PKG-INFO")}
            assert tree.skipped == {"a link or special file": 1}
            assert tree.distribution == "tinypkg"
    # two gzip streams one after the other, zero padding after each, read as one archive (as
    # gzip and tarfile do)
    one = write_sdist(tmp_path / "one.tar", sdist_files(), "w").read_bytes()
    doubled = tmp_path / "doubled-0.1.tar.gz"
    halves = gzip.compress(one[:1024]), gzip.compress(one[1024:])
    doubled.write_bytes(halves[0] + bytes(100) + halves[1] + bytes(70_000))
    assert load_source(str(doubled)).files == load_source(str(tmp_path / "one.tar")).files
    with tarfile.open(doubled) as archive:
        assert len(archive.getmembers()) == len(sdist_files())
    assert bz2  # (imported for the bzip2 streams tarfile writes)


# --- the background source ------------------------------------------------------------------


def test_a_bomb_as_background_source_is_the_usage_error_naming_it(tmp_path):
    wheel = lying_wheel(tmp_path / "tinypkg-0.1-py3-none-any.whl", zipfile.ZIP_BZIP2)
    with pytest.raises(SetupError, match=f"--execretrieval-background={wheel}: .*inflates"):
        background_functions(str(wheel))
    long_name = tmp_path / "long-0.1.tar.gz"
    long_name.write_bytes(gzip.compress(raw_header("././@LongLink", b"L", 6 << 30)))
    with pytest.raises(SetupError, match=f"--execretrieval-background={long_name}: "):
        background_functions(str(long_name))


def test_the_plugin_reports_a_background_bomb_as_a_usage_error_not_internalerror(pytester, items):
    wheel = lying_wheel(pytester.path / "tinypkg-0.1-py3-none-any.whl", zipfile.ZIP_BZIP2)
    result = bench(pytester, items, f"--execretrieval-background={wheel}")
    assert result.ret == 4
    err = result.stderr.str()
    assert f"--execretrieval-background={wheel}" in err and "INTERNALERROR" not in err
