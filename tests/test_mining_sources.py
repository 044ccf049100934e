"""`execretrieval mine` on a wheel, an sdist and an installed distribution: read in memory,
never extracted or imported; bounded; the licence decides."""

from __future__ import annotations

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from mining_fixtures import BSD3_TEXT, CORE, INIT, LICENCE, MARKER, MIT_TEXT

from pytest_execretrieval import cli
from pytest_execretrieval.corpus.items import load_items
from pytest_execretrieval.mining.sources import MAX_FILE_BYTES, load_source

METADATA = "Metadata-Version: 2.4\nName: tinypkg\nVersion: 0.1\nLicense-Expression: {licence}\n"
METADATA += "Project-URL: Homepage, https://example.org/tinypkg\n"


def package_files(licence: str = "MIT") -> dict[str, str]:
    return {
        "tinypkg/__init__.py": INIT,
        "tinypkg/core.py": CORE,
        "tinypkg-0.1.dist-info/METADATA": METADATA.format(licence=licence),
        "tinypkg-0.1.dist-info/licenses/LICENSE": LICENCE,
    }


def write_wheel(path: Path, files: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, body in files.items():
            archive.writestr(name, body)
    return path


def mined_names(out: Path) -> list[str]:
    items, problems = load_items(out)
    assert problems == []
    return sorted(i.entry_point for i in items)


def test_a_wheel_is_mined_in_memory(tmp_path):
    files: dict[str, str | bytes] = {
        **package_files(),
        "tinypkg/big.py": b"#" * (MAX_FILE_BYTES + 1),
    }
    wheel = write_wheel(tmp_path / "tinypkg-0.1-py3-none-any.whl", files)
    out = tmp_path / "out"
    assert cli.main(["mine", str(wheel), "--out", str(out)]) == 0
    assert mined_names(out) == ["clamp_sum", "safe_sqrt", "window"]
    items, _ = load_items(out)
    assert items[0].source is not None and items[0].source.url == "https://example.org/tinypkg"
    text = (out / "MINED.md").read_text()
    assert "| a file over 1 MiB | 1 |" in text
    assert "Copyright (c) 2024 Tiny Authors" in (out / "NOTICE").read_text()
    assert not list(tmp_path.rglob(MARKER))


def test_an_sdist_skips_links_and_escaping_names_without_extracting(tmp_path):
    sdist = tmp_path / "tinypkg-0.1.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        for name, body in {
            **{f"tinypkg-0.1/{k}": v for k, v in package_files().items() if "dist-info" not in k},
            "tinypkg-0.1/PKG-INFO": METADATA.format(licence="BSD-3-Clause"),
            "tinypkg-0.1/LICENSE": LICENCE,
            "../escaped.py": "def escaped():\n    return 1\n",
            "/absolute.py": "def absolute():\n    return 1\n",
        }.items():
            data = body.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("tinypkg-0.1/tinypkg/linked.py")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)
    tree = load_source(str(sdist))
    assert tree.skipped == {"an absolute or '..' member name": 2, "a link or special file": 1}
    assert tree.license_expression == "BSD-3-Clause"
    out = tmp_path / "out"
    assert cli.main(["mine", str(sdist), "--out", str(out)]) == 0
    assert mined_names(out) == ["clamp_sum", "safe_sqrt", "window"]
    assert not (tmp_path / "escaped.py").exists() and not list(tmp_path.rglob(MARKER))


def test_an_installed_distribution_is_read_by_path_never_imported(tmp_path, monkeypatch):
    site = tmp_path / "site"
    files = package_files()
    record = "".join(f"{name},,\n" for name in files)
    files["tinypkg-0.1.dist-info/RECORD"] = record + "tinypkg-0.1.dist-info/RECORD,,\n"
    for name, body in files.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(body)
    monkeypatch.syspath_prepend(str(site))
    out = tmp_path / "out"
    assert cli.main(["mine", "tinypkg", "--out", str(out)]) == 0
    assert mined_names(out) == ["clamp_sum", "safe_sqrt", "window"]
    assert not list(site.rglob(MARKER))


@pytest.mark.parametrize("licence", ["GPL-3.0-only", "MIT AND GPL-2.0-or-later"])
def test_a_licence_not_permissive_is_a_usage_error_unless_allowed(tmp_path, capsys, licence):
    wheel = write_wheel(tmp_path / "tinypkg-0.1-py3-none-any.whl", dict(package_files(licence)))
    assert cli.main(["mine", str(wheel), "--out", str(tmp_path / "no")]) == 4
    assert repr(licence) in capsys.readouterr().err
    assert not (tmp_path / "no").exists()
    allowed = ["--allow-licence", licence]
    assert cli.main(["mine", str(wheel), "--out", str(tmp_path / "yes"), *allowed]) == 0


@pytest.mark.parametrize(
    ("pyproject", "licence_file", "expected"),
    [
        # no licence field: the trove classifier, as in METADATA
        (
            '[project]\nname = "p"\nclassifiers = ["License :: OSI Approved :: MIT License"]\n',
            "",
            "MIT",
        ),
        # no metadata licence at all: the top-level licence file's text, as a whole
        ('[project]\nname = "p"\n', MIT_TEXT, "MIT"),
        ('[project]\nname = "p"\n', BSD3_TEXT, "BSD-3-Clause"),
        # a licence's opening words alone are no licence (issue 53: the text must be whole)
        ('[project]\nname = "p"\n', "Permission is hereby granted, free of charge, to any", ""),
        ('[project]\nname = "p"\n', "All rights reserved.", ""),
    ],
)
def test_a_licence_is_read_from_classifiers_or_the_licence_text(
    tmp_path, pyproject, licence_file, expected
):
    (tmp_path / "pyproject.toml").write_text(pyproject)
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    if licence_file:
        (tmp_path / "LICENSE").write_text(licence_file)
    assert load_source(str(tmp_path)).license_expression == expected
