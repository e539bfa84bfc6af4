"""The token benchmark's encoding loader (contract BM5): o200k_base from a registry package, offline,
sha256-checked — so every figure in docs/code-mode.md can be re-counted on a fresh machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "tokens.py"


def test_check_loads_the_verified_encoding_and_counts_known_texts() -> None:
    """BM5: ``--check`` verifies the vocabulary's sha256 and a few known counts, then exits 0."""
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=300, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("o200k_base: sha256 446a9538cb6c… verified; 2 known counts match")


def test_a_vocabulary_with_another_digest_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """BM5: a different file never counts silently: the loader stops, naming both digests."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import tokens

    monkeypatch.setattr(tokens, "O200K_SHA256", "0" * 64)
    with pytest.raises(SystemExit, match=r"has sha256 446a9538\w+, expected 0{64}"):
        tokens.load_o200k_ranks()
