"""The package type-checks: mypy with the committed configuration (``[tool.mypy]`` in
pyproject.toml: the package, Python 3.11, ``check_untyped_defs``, third-party packages without
type information listed one by one) reports no error. ``tox -e types`` runs the same check."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_package_type_checks():
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
