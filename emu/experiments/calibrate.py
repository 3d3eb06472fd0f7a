"""`emu calibrate TOPO`: which link rates this machine emulates faithfully.

A Python fabric forwards only so many packets per second; past that, queues form in
kernel socket buffers and the CPU scheduler instead of the modelled switch queues.
Calibration runs a short all-hosts permutation (every host at line rate, no
congestion control, so the offered load is known) at rising link rates and records,
per rate, the packets per second the switches forwarded, the goodput achieved as a
fraction of the offered load, and the fidelity signals (kernel drops, lag, refused
sends). It suggests the highest rate whose run was network-bound and efficient.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_RATES_BPS = (5_000_000, 10_000_000, 20_000_000, 40_000_000)
MIN_EFFICIENCY = 0.6  # achieved / offered goodput below which a rate is "too fast"


@dataclass(frozen=True)
class CalibrationPoint:
    rate_bps: int
    ok: bool  # every flow verified
    cpu_bound: bool
    efficiency: float  # mean flow goodput / link rate
    switch_pps: float  # packets the switches sent per second, summed
    kernel_drops: int
    reasons: tuple[str, ...]

    @property
    def faithful(self) -> bool:
        return self.ok and not self.cpu_bound and self.efficiency >= MIN_EFFICIENCY


def point_from_summary(rate_bps: int, summary: Any) -> CalibrationPoint:
    gps = [f.goodput_bps for f in summary.flows if f.goodput_bps]
    eff = (sum(gps) / len(gps) / rate_bps) if gps else 0.0
    dur = summary.duration_s or 0.0
    pps = summary.fabric.tx_pkts / dur if dur > 0 else 0.0
    fd = summary.fidelity
    return CalibrationPoint(rate_bps, summary.ok, fd.cpu_bound, eff, pps,
                            fd.switch_kernel_drops + fd.host_kernel_drops, fd.reasons)


def suggest(points: list[CalibrationPoint]) -> int | None:
    """The highest faithful rate below the first unfaithful one."""
    best = None
    for p in sorted(points, key=lambda p: p.rate_bps):
        if not p.faithful:
            break
        best = p.rate_bps
    return best


def calibrate(topo: str, rates_bps: tuple[int, ...], size_bytes: int, target: str,
              results_root: Path) -> list[CalibrationPoint]:
    from .config import RunConfig
    from .run import run_experiment
    from .workloads import WorkloadParams

    points = []
    for rate in rates_bps:
        cfg = RunConfig(topo=topo, lb="ecmp", cc="none", recovery="gbn", target=target,
                        workload=WorkloadParams(kind="permutation", message_bytes=size_bytes),
                        rate_bps=rate, progress=False, timeout_s=60.0,
                        results_root=results_root)
        print(f"calibrate: {topo} at {rate / 1e6:g} Mb/s ...", file=sys.stderr, flush=True)
        summary = run_experiment(cfg, console=_QuietConsole())
        points.append(point_from_summary(rate, summary))
    return points


class _QuietConsole:
    """Swallows the per-run summaries: calibration prints its own table."""

    def print(self, *_a: Any, **_k: Any) -> None:
        pass


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("calibrate", help="measure which link rates this machine emulates "
                                         "faithfully, and suggest one")
    p.add_argument("topo", metavar="TOPO", nargs="?", default="clos4")
    p.add_argument("--rates", default=",".join(f"{r // 1_000_000}Mbps" for r in DEFAULT_RATES_BPS),
                   help="comma-separated link rates to try (default %(default)s)")
    p.add_argument("--size", type=int, default=128 * 1024, help="bytes per flow")
    p.add_argument("--target", default="embedded", choices=("embedded", "bmv2"))
    p.add_argument("--results", default="results/calibrate", metavar="DIR")
    p.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from emu.topo import UnitError, parse_rate

    from .run import RunError

    try:
        rates = tuple(int(parse_rate(r.strip())) for r in args.rates.split(",") if r.strip())
    except (UnitError, ValueError) as exc:
        print(f"emu calibrate: {exc}", file=sys.stderr)
        return 1
    try:
        points = calibrate(args.topo, rates, args.size, args.target, Path(args.results))
    except RunError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(f"{'rate':>10} {'verified':>8} {'efficiency':>10} {'switch pps':>11} "
          f"{'kernel drops':>12}  verdict")
    for p in points:
        verdict = "faithful" if p.faithful else ("CPU-bound: " + "; ".join(p.reasons)
                                                 if p.cpu_bound else "too slow")
        print(f"{p.rate_bps / 1e6:>7g} Mb/s {str(p.ok):>8} {p.efficiency:>10.2f} "
              f"{p.switch_pps:>11.0f} {p.kernel_drops:>12}  {verdict}")
    best = suggest(points)
    if best is None:
        print("no rate tried was faithful: try lower rates (--rates 1Mbps,2Mbps)")
        return 1
    print(f"suggested: --rate {best / 1e6:g}Mbps (make run ... with the topology's rate "
          f"set to {best / 1e6:g}Mbps)")
    return 0
