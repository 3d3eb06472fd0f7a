"""End-to-end runs on real Mininet: skip (with the precise reason) while a piece is
missing, and prove each run left no interface, namespace or process behind."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = ("mnexec", "ip", "tc", "ethtool", "ifconfig", "nsenter", "ping")


def missing_piece() -> str | None:
    """Why an end-to-end run cannot happen here, or None."""
    if os.geteuid() != 0:
        return "needs root (namespaces, veths)"
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        return f"needs {', '.join(missing)}"
    try:
        import emu.net  # noqa: F401
    except ImportError as exc:
        return f"emu.net (Mininet integration) not importable: {exc}"
    from emu.targets import get_target

    target = get_target("embedded")
    if target.missing():
        return target.unavailable_message(target.missing())
    try:
        from emu.sim.fabric import compile_fabric

        compile_fabric()
    except Exception as exc:
        return f"fabric.p4 does not compile on the embedded target yet: {exc}"
    return None


@pytest.fixture(scope="session")
def e2e_ready() -> Iterator[None]:
    why = missing_piece()
    if why:
        pytest.skip(why)
    yield


def _links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return {line.split()[1].rstrip(":").split("@")[0] for line in out.splitlines()}


def _processes_mentioning(text: str) -> list[str]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in cmd:
            out.append(f"{entry}: {cmd[:120]}")
    return out


def _other_run_active() -> bool:
    from emu.core.runstate import read_lock_owner

    owner = read_lock_owner()
    if not owner:
        return False
    pid = int(owner.get("pid") or 0)
    return pid > 0 and pid != os.getpid() and Path(f"/proc/{pid}").exists()


@pytest.fixture
def no_leftovers(tmp_path: Path) -> Iterator[None]:
    """Fails the test if a process of its runs (agents, switches: their command lines
    name the test's folder) or an interface of the topology outlives it. Interfaces are
    checked only while no other run holds the run lock: on a shared machine another
    run's interfaces carry the same names."""
    from emu.topo import load_topology

    fabric = load_topology("clos4")
    names = {p.intf for s in fabric.switches for p in s.ports} | {h.intf for h in fabric.hosts}
    before = _links()
    yield
    procs = _processes_mentioning(str(tmp_path))
    assert not procs, f"processes left behind: {procs}"
    if not _other_run_active():
        left = sorted((_links() - before) & names)
        assert not left, f"interfaces left behind: {left}"
