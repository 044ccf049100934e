"""Fixtures shared by the plugin tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data" / "items"


@pytest.fixture
def items(pytester) -> Path:
    """A copy of the small test-data items (with their built corpus) in the pytester directory."""
    target = pytester.path / "items"
    shutil.copytree(DATA, target)
    return target
