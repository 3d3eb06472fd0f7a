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
from typing import TYPE_CHECKING

from emu.core.cachedir import user_cache_path

from .jsontypes import JsonDict
from .results import write_text_atomic

if TYPE_CHECKING:
    from .plan import RunPlan

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


@dataclass(frozen=True)
class RateChoice:
    rate_bps: int
    source: str  # "--rate", "calibrated", "built-in"
    reason: str  # one line for the user


def calibration_path(env: Mapping[str, str] | None = None) -> Path:
    return user_cache_path("calibration.json", "EMU_CALIBRATION", env)


def _key(topo: str, target: str) -> str:
    return f"{Path(topo).stem}/{target}"


def load_calibration(path: Path) -> JsonDict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def save_calibration(path: Path, topo: str, target: str, rate_bps: int,
                     points: list[JsonDict], cpus: int | None = None) -> None:
    """Record `rate_bps` as the calibrated rate of (topo, target) on this machine."""
    data = load_calibration(path)
    data[_key(topo, target)] = {"rate_bps": int(rate_bps), "cpus": cpus or os.cpu_count(),
                                "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                "points": points}
    write_text_atomic(path, json.dumps(data, indent=1, sort_keys=True))


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


def rate_line(plan: RunPlan, reason: str) -> str:
    """One line: the wire rate(s) a run uses, the dilation, what they model, and why."""
    d = plan.dilation
    wire = ", ".join(f"{r / 1e6:g}" for r in sorted({lk.rate_bps for lk in plan.fabric.links}))
    model = ", ".join(f"{r / 1e9:g}" for r in sorted({lk.rate_bps for lk in plan.model.links}))
    delays = sorted({lk.delay_ns for lk in plan.model.links})
    delay = ", ".join(f"{x / 1e3:g}" for x in delays)
    wdelay = ", ".join(f"{d.wire_ns(x) / 1e6:g}" for x in delays)
    return (f"emu run: wire {wire} Mb/s x dilation {d.factor:g} = {model} Gb/s modelled; "
            f"link delay {delay} us modelled = {wdelay} ms on the wire "
            f"({reason or 'default wire rate'})")
