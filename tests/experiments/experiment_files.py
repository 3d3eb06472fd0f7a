"""What an experiment's folder holds that must not depend on how it was run."""

from __future__ import annotations

from pathlib import Path


def metrics_files(out: Path) -> dict[str, bytes]:
    """The experiment's table and each point's metrics, by point name: the bytes that
    must be the same on every rerun, backend and build of the same file and seeds."""
    files = {"metrics.csv": (out / "metrics.csv").read_bytes()}
    for m in sorted((out / "points").glob("*/metrics.json")):
        files[m.parent.name] = m.read_bytes()
    return files
