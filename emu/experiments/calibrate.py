"""`emu calibrate TOPO`: which link rates this machine emulates faithfully.


A Python fabric forwards only so many packets per second; past that, queues form in
kernel socket buffers and the CPU scheduler instead of the modelled switch queues.
Calibration runs a short all-hosts permutation (every host at line rate, no
congestion control, so the offered load is known) at rising link rates and records,
per rate, the packets per second the switches forwarded, the busiest link's utilisation
while traffic ran (with every host at line rate it must stay high on a network-bound
run), the mean flow goodput as a fraction of the link rate (ECMP collisions halve it
legitimately), and the fidelity signals (kernel drops, TM lag, sender pacing lag,
refused sends). It suggests the highest rate whose run was network-bound and efficient
and saves it (emu.experiments.rates: `emu run` then uses it for this topology).

Efficient is measured against the same permutation in virtual time (exact, no CPU in
the results), run once first: where collisions, losses and retransmission timeouts keep
the links idle even there (fattree4's 128 KB permutation: 16%), a real run cannot be
asked for 60%, and every rate was judged unfaithful.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from emu.control.params import LbMode

from . import argtypes
from .jsontypes import JsonDict

if TYPE_CHECKING:
    from .config import RunConfig
    from .summary import RunSummary

DEFAULT_RATES_BPS = (2_000_000, 5_000_000, 10_000_000, 20_000_000)
# Busiest-link utilisation below which a rate is "too fast": stricter than the run
# guard's bound (metrics.FidelityLimits), so the suggested rate leaves headroom for
# heavier workloads than a permutation.
MIN_EFFICIENCY = 0.6
# ... unless the exact (virtual-time) run of the same permutation is itself below it:
# then this fraction of the exact run's utilisation.
REFERENCE_FRACTION = 0.8


@dataclass(frozen=True)
class CalibrationPoint:
    rate_bps: int
    ok: bool  # every flow verified
    cpu_bound: bool
    efficiency: float  # busiest link's utilisation while traffic ran
    goodput_ratio: float  # mean flow goodput / link rate
    switch_pps: float  # packets the switches sent per second, summed
    kernel_drops: int
    tm_lag_ms: float | None
    tx_lag_p99_ms: float | None
    reasons: tuple[str, ...]
    reference_efficiency: float = 1.0  # the same permutation's, in virtual time

    @property
    def efficiency_bound(self) -> float:
        return min(MIN_EFFICIENCY, REFERENCE_FRACTION * self.reference_efficiency)

    @property
    def faithful(self) -> bool:
        return self.ok and not self.cpu_bound and self.efficiency >= self.efficiency_bound

    def verdict(self) -> str:
        if self.faithful:
            return "faithful"
        if self.cpu_bound:
            return "CPU-bound: " + "; ".join(self.reasons)
        if not self.ok:
            return "flows not verified"
        return (f"too fast: links idle (busiest {self.efficiency:.2f} < "
                f"{self.efficiency_bound:.2f}, the exact run's {self.reference_efficiency:.2f})")

    def to_dict(self) -> JsonDict:
        return {**dataclasses.asdict(self), "faithful": self.faithful}


def point_from_summary(rate_bps: int, summary: RunSummary,
                       reference_efficiency: float = 1.0) -> CalibrationPoint:
    gps = [f.goodput_bps for f in summary.flows if f.goodput_bps]
    ratio = (sum(gps) / len(gps) / rate_bps) if gps else 0.0
    window = summary.traffic_s or summary.duration_s or 0.0
    pps = summary.fabric.tx_pkts / window if window > 0 else 0.0
    fd = summary.fidelity
    return CalibrationPoint(rate_bps, summary.ok, fd.cpu_bound, fd.efficiency or 0.0, ratio,
                            pps, fd.switch_kernel_drops + fd.host_kernel_drops,
                            fd.tm_lag_max_ms, fd.tx_lag_p99_ms, fd.reasons,
                            reference_efficiency)


def suggest(points: list[CalibrationPoint]) -> int | None:
    """The highest faithful rate below the first unfaithful one."""
    best = None
    for p in sorted(points, key=lambda p: p.rate_bps):
        if not p.faithful:
            break
        best = p.rate_bps
    return best


def no_faithful_rate(points: list[CalibrationPoint]) -> str:
    """What to try when no rate was faithful: lower rates than the lowest tried."""
    lowest = min(p.rate_bps for p in points) / 1e6 if points else 1.0
    return (f"no rate tried was faithful: try rates below {lowest:g} Mb/s "
            f"(--rates {lowest / 4:g}Mbps,{lowest / 2:g}Mbps)")


def calibrate(topo: str, rates_bps: tuple[int, ...], size_bytes: int, target: str,
              results_root: Path) -> list[CalibrationPoint]:
    from rich.console import Console

    from .config import RunConfig
    from .run import run_experiment
    from .workloads import WorkloadParams

    def point_config(rate: int) -> RunConfig:
        return RunConfig(topo=topo, lb=LbMode.ECMP, cc="none", recovery="gbn", target=target,
                         workload=WorkloadParams(kind="permutation", message_bytes=size_bytes),
                         rate_bps=rate, rate_reason="calibration point", progress=False,
                         timeout_s=60.0, results_root=results_root)

    print(f"calibrate: {topo}, the same permutation in virtual time ...", file=sys.stderr,
          flush=True)
    reference = reference_efficiency(point_config(rates_bps[0]))
    points: list[CalibrationPoint] = []
    for rate in rates_bps:
        cfg = point_config(rate)
        print(f"calibrate: {topo} at {rate / 1e6:g} Mb/s ...", file=sys.stderr, flush=True)
        # Quiet: the per-run summaries are left out, calibration prints its own table.
        try:
            summary = run_experiment(cfg, console=Console(quiet=True))
        except KeyboardInterrupt:  # during a point's bring-up: torn down, nothing measured
            raise CalibrationInterrupted(len(points), len(rates_bps)) from None
        if summary.run.get("interrupted"):
            # Stopped by the user, not too slow: no verdict on this rate, and no other
            # point is run (the stop was for the whole calibration).
            raise CalibrationInterrupted(len(points), len(rates_bps))
        points.append(point_from_summary(rate, summary, reference))
    return points


def reference_efficiency(cfg: RunConfig) -> float:
    """The busiest link's utilisation of `cfg`'s permutation in virtual time (the
    embedded target, exact): what a faithful real run can reach at best."""
    from .plan import plan_run
    from .virtual import run_virtual

    vcfg = dataclasses.replace(cfg, virtual=True, target="embedded")
    summary = run_virtual(plan_run(vcfg), write=False)
    return summary.fidelity.efficiency or 0.0


class CalibrationInterrupted(KeyboardInterrupt):
    """A stop signal during a calibration point: the points so far are no verdict."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(f"emu calibrate: interrupted after {done} of {total} rates; "
                         "nothing saved")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("calibrate", help="measure which link rates this machine emulates "
                                         "faithfully, and suggest one")
    p.add_argument("topo", metavar="TOPO", nargs="?", default="clos4")
    p.add_argument("--rates", type=argtypes.rates,
                   default=",".join(f"{r // 1_000_000}Mbps" for r in DEFAULT_RATES_BPS),
                   help="comma-separated link rates to try (default %(default)s)")
    p.add_argument("--size", type=argtypes.size, default=128 * 1024, help="bytes per flow")
    p.add_argument("--target", default="embedded", choices=("embedded", "bmv2"))
    p.add_argument("--results", default="results/calibrate", metavar="DIR")
    p.add_argument("--no-save", action="store_true",
                   help="do not save the suggested rate for `emu run` (default: saved to "
                        "$XDG_CACHE_HOME/emu/calibration.json or ~/.cache/emu/...)")
    p.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from .run import USER_ERRORS, user_message

    try:
        points = calibrate(args.topo, args.rates, args.size, args.target, Path(args.results))
    except USER_ERRORS as exc:
        print(user_message(exc, "calibrate"), file=sys.stderr)
        return 1
    except CalibrationInterrupted as exc:
        print(str(exc), file=sys.stderr)
        return 130
    print(f"{'rate':>10} {'verified':>8} {'busiest link':>12} {'goodput/rate':>12} "
          f"{'switch pps':>10} {'kdrops':>6} {'TM lag':>8} {'tx lag p99':>10}  verdict")
    for p in points:
        verdict = p.verdict()
        tm = "n/a" if p.tm_lag_ms is None else f"{p.tm_lag_ms:.1f} ms"
        tx = "n/a" if p.tx_lag_p99_ms is None else f"{p.tx_lag_p99_ms:.1f} ms"
        print(f"{p.rate_bps / 1e6:>5g} Mb/s {str(p.ok):>8} {p.efficiency:>12.2f} "
              f"{p.goodput_ratio:>12.2f} {p.switch_pps:>10.0f} {p.kernel_drops:>6} {tm:>8} "
              f"{tx:>10}  {verdict}")
    best = suggest(points)
    if best is None:
        print(no_faithful_rate(points))
        return 1
    print(f"suggested: --rate {best / 1e6:g}Mbps")
    return 0 if args.no_save else save_suggestion(args.topo, args.target, best, points)


def save_suggestion(topo: str, target: str, rate_bps: int,
                    points: list[CalibrationPoint]) -> int:
    """Save the suggested rate for `emu run`; the exit code."""
    from .rates import calibration_path, save_calibration

    path = calibration_path()
    try:
        save_calibration(path, topo, target, rate_bps, [p.to_dict() for p in points])
    except OSError as exc:  # read-only or full cache: the table printed still stands
        print(f"emu calibrate: cannot save to {path}: {exc.strerror or exc} "
              f"(give emu run --rate {rate_bps / 1e6:g}Mbps)", file=sys.stderr)
        return 1
    print(f"saved to {path}: `emu run {topo}` uses it when no --rate is given")
    return 0
