"""Which link rate a run uses when the user gives none: this machine's calibrated rate
for the topology, else a conservative built-in default.

A Python fabric forwards only so many packets per second on a small machine; above
that, queues form in kernel buffers and the CPU scheduler instead of the modelled
switch queues. `emu calibrate TOPO` measures the highest faithful rate and saves it to
`calibration_path()` (`$EMU_CALIBRATION`, else `$XDG_CACHE_HOME/emu/calibration.json`,
else `~/.cache/emu/calibration.json`), keyed by topology and target; `emu run` reads it.
A saved rate applies only on a machine with the same number of CPUs.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Network-bound on a 2-core machine (`emu calibrate` and default runs; figures in
# emu/experiments/README.md). clos4: calibration faithful up to 2 Mb/s, CPU-bound from
# 5 Mb/s; the default all-reduce with DCQCN at 2 Mb/s once flagged (switches ~6 frame
# times late) and used its busiest link 74-76%, at 1 Mb/s 85-92%: 1 Mb/s leaves headroom
# for a machine also busy with other work. fattree4 (20 switches, 16 hosts): faithful at
# 0.5 Mb/s, too slow at 1 Mb/s.
BUILTIN_RATES_BPS: Mapping[str, int] = {
    "clos4": 1_000_000,
    "leafspine2": 1_000_000,
    "fattree4": 500_000,
}
FALLBACK_RATE_BPS = 1_000_000  # a topology nobody calibrated: assume it is large
BASE_DILATION = 1000.0  # the topology's rates x this = the modelled network


@dataclass(frozen=True)
class RateChoice:
    rate_bps: int
    source: str  # "--rate", "calibrated", "built-in"
    reason: str  # one line for the user


def calibration_path(env: Mapping[str, str] | None = None) -> Path:
    e = os.environ if env is None else env
    if e.get("EMU_CALIBRATION"):
        return Path(e["EMU_CALIBRATION"])
    cache = Path(e["XDG_CACHE_HOME"]) if e.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return cache / "emu" / "calibration.json"


def _key(topo: str, target: str) -> str:
    return f"{Path(topo).stem}/{target}"


def load_calibration(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_calibration(path: Path, topo: str, target: str, rate_bps: int,
                     points: list[dict[str, Any]], cpus: int | None = None) -> None:
    """Record `rate_bps` as the calibrated rate of (topo, target) on this machine."""
    data = load_calibration(path)
    data[_key(topo, target)] = {"rate_bps": int(rate_bps), "cpus": cpus or os.cpu_count(),
                                "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                "points": points}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)


def choose_rate(topo: str, target: str, given_bps: int | None, *, path: Path | None = None,
                cpus: int | None = None) -> RateChoice:
    """The rate a run uses: the user's, else the calibrated one, else the built-in."""
    if given_bps:
        return RateChoice(given_bps, "--rate", "given with --rate")
    path = path or calibration_path()
    entry = load_calibration(path).get(_key(topo, target))
    ncpu = cpus or os.cpu_count()
    if isinstance(entry, dict) and entry.get("rate_bps") and entry.get("cpus") == ncpu:
        when = str(entry.get("time", ""))[:10]
        return RateChoice(int(entry["rate_bps"]), "calibrated",
                          f"`emu calibrate {Path(topo).stem}` measured it on this machine"
                          f"{' on ' + when if when else ''}; saved in {path}")
    name = Path(topo).stem
    rate = BUILTIN_RATES_BPS.get(name, FALLBACK_RATE_BPS)
    why = "built-in default for " + (name if name in BUILTIN_RATES_BPS else "an unknown topology")
    return RateChoice(rate, "built-in", f"{why}, network-bound on 2 cores; "
                                        f"`emu calibrate {name}` measures this machine")


def rate_line(fabric: Any, reason: str, dilation: float) -> str:
    """One line: the link rate(s) a run uses, what they model, and why."""
    rates = sorted({lk.rate_bps for lk in fabric.links})
    shown = ", ".join(f"{r / 1e6:g}" for r in rates)
    nominal = ", ".join(f"{r * dilation / 1e9:g}" for r in rates)
    return (f"emu run: link rate {shown} Mb/s x dilation {dilation:g} = {nominal} Gb/s modelled "
            f"({reason or 'as written in the topology'})")


def default_dilation(topo: str, rate_bps: int | None) -> float:
    """The dilation that keeps the modelled network the topology's at BASE_DILATION: a
    run slowed to a rate this machine sustains models the same links, in slow motion
    (every rate / D, every duration x D: the dynamics keep their shape)."""
    if not rate_bps:
        return BASE_DILATION
    try:
        from emu.topo import load_topology

        topo_rate = max(lk.rate_bps for lk in load_topology(topo).links)
    except Exception:  # an unreadable topology is reported by the plan, not here
        return BASE_DILATION
    return BASE_DILATION * topo_rate / rate_bps
