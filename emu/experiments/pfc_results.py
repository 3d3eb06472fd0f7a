"""The figures of the lossless-fabric scenarios (emu.experiments.pfc_scenarios runs
them, emu.experiments.pfc_plots draws them). Times in virtual nanoseconds, rates in
bit/s; `series` are (ms, value) points for the plots."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["DcqcnResult", "DeadlockResult", "StormResult", "VictimResult"]


@dataclass(frozen=True)
class VictimResult:
    alone_bps: float  # the victim's goodput with no incast: its fair share
    pfc_bps: float  # with the incast, PFC, no congestion control
    dcqcn_bps: float  # with the incast, PFC and DCQCN
    pauses_pfc: int
    pauses_dcqcn: int
    drops: int
    series: dict[str, list[tuple[float, float]]] = field(default_factory=dict, compare=False)

    @property
    def pfc_share(self) -> float:
        return self.pfc_bps / self.alone_bps

    @property
    def dcqcn_share(self) -> float:
        return self.dcqcn_bps / self.alone_bps


@dataclass(frozen=True)
class DcqcnResult:
    pauses_off: int
    pauses_on: int
    drops: int
    retransmits: int
    fct_off_ms: float
    fct_on_ms: float

    @property
    def reduction(self) -> float:
        return self.pauses_off / max(1, self.pauses_on)


@dataclass(frozen=True)
class StormResult:
    storm_start_ns: int
    storm_end_ns: int
    detected_ns: int | None  # the leaf's watchdog declared the storm
    restored_ns: int | None  # ... and restored the port
    detection_ns: int
    restoration_ns: int
    stalled_bps: float  # goodput of a flow that crosses the stormed leaf, before detection
    after_bps: float  # the same flow after detection
    alone_bps: float  # the same flow without a storm
    paused_upstream: list[str]  # ports beyond the leaf that were paused by the storm
    watchdog_drops: int
    series: dict[str, list[tuple[float, float]]] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class DeadlockResult:
    progress_pkts: int  # received after the stall began (0: deadlocked)
    stall_ns: int  # the interval of no progress that declares the deadlock
    deadlocked_at_ns: int | None
    ring_buffer_bytes: list[int]  # per ring ingress (lossless class) at detection
    xoff_bytes: int
    delivered_deadlocked: int  # messages completed before the deadlock, PFC alone
    delivered_with_watchdog: int  # messages completed with the watchdog on (by the limit)
    total_msgs: int
    watchdog_storms: int
    # Routing without the cycle (the ring link s_n -- s_1 taken out of the routes, so
    # paths are up/down along a line): every message completes, no deadlock.
    delivered_acyclic: int
    acyclic_stalled: bool
    limit_ns: int
    # (ms, data packets received so far) per run: "PFC", "PFC + watchdog", "acyclic"
    series: dict[str, list[tuple[float, float]]] = field(default_factory=dict, compare=False)
