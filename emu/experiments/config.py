"""RunConfig: everything one `emu run` needs, as one typed, validated object.

The CLI only maps flags onto it; the results folder records it resolved (config.json).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .workloads import WorkloadParams

LB_MODES = ("ecmp", "flowlet", "adaptive", "spray", "te")
CC_MODES = ("dcqcn", "none")
RECOVERY_MODES = ("gbn", "sr")
TARGETS = ("embedded", "bmv2")


class RunConfigError(ValueError):
    """A run configuration that cannot work; the message names the setting."""


@dataclass(frozen=True)
class RunConfig:
    topo: str = "clos4"
    lb: str = "ecmp"
    cc: Literal["dcqcn", "none"] = "dcqcn"
    recovery: Literal["gbn", "sr"] = "gbn"
    target: str = "embedded"
    workload: WorkloadParams = field(default_factory=WorkloadParams)
    # Time dilation: the hosts model links `dilation` times faster than the wire runs
    # (20 Mb/s x 1000 = 20 Gb/s); DCQCN timers stretch by the same factor. Larger
    # factors stretch the timers past the time a 64-packet queue takes to fill, and
    # DCQCN then reacts too late to prevent drops.
    dilation: float = 1000.0
    rate_bps: int | None = None  # every link's rate (None: the topology's)
    rate_reason: str = ""  # why this rate (`emu run` chose it: --rate, calibrated, built-in)
    ecn_kmin_pkts: int = 5
    ecn_kmax_pkts: int = 20
    ecn_pmax: float = 0.2
    # Strict-priority egress queues per switch port; with >1, fabric.p4 puts DSCP 48
    # (ACKs, NAKs, CNPs) on the top queue, so feedback does not wait behind data (as
    # RoCE fabrics configure it). 1: everything shares one queue.
    priority_queues: int = 2
    window_pkts: int = 32  # outstanding packets per QP (and the sr reorder window)
    mtu_bytes: int = 1024  # RoCE path MTU (payload per packet)
    # emu.roce.dcqcn profiles: hpcc (a CNP per marked packet, rates scaled to the link)
    # reacts within the queue's fill time here; nvidia rate-limits CNPs to one per 50 us
    # nominal, which dilation stretches to tens of milliseconds.
    dcqcn_profile: str = "hpcc"
    plb: bool = False
    # Counters and queue depths: one admin `stats` call per switch per sample (cheap;
    # fabric.p4 counters over P4Runtime are read less often, see run.P4_SAMPLE_S).
    sample_interval_s: float = 0.05
    agent_progress_s: float = 0.25  # agents print their counters this often (live view)
    timeout_s: float = 120.0  # the workload's wall-clock budget
    start_delay_s: float = 0.3  # after every agent is READY, before the first flow
    pcap: bool = False
    cli: bool = False
    progress: bool = True  # the live view (off when stdout is not a terminal)
    virtual: bool = False  # in-process virtual-time fabric instead of Mininet
    results_root: Path = Path("results")
    fail_link: tuple[str, str] | None = None  # fail this link mid-run (tests, experiments)
    fail_after_s: float = 1.0  # after the first bytes reach a host (virtual: run time)
    # False: every link's delay is 0 (for a target that cannot emulate delays here,
    # e.g. BMv2 on a kernel without netem); results then say so.
    link_delay: bool = True

    def validate(self) -> None:
        def bad(what: str) -> RunConfigError:
            return RunConfigError(f"run configuration: {what}")

        if self.lb not in LB_MODES:
            raise bad(f"lb must be one of {', '.join(LB_MODES)}, got {self.lb!r}")
        if self.cc not in CC_MODES:
            raise bad(f"cc must be one of {', '.join(CC_MODES)}, got {self.cc!r}")
        if self.recovery not in RECOVERY_MODES:
            raise bad(f"recovery must be one of {', '.join(RECOVERY_MODES)}")
        if self.target not in TARGETS:
            raise bad(f"target must be one of {', '.join(TARGETS)}, got {self.target!r}")
        if self.dilation <= 0:
            raise bad("dilation must be positive")
        if self.rate_bps is not None and self.rate_bps <= 0:
            raise bad("rate_bps must be positive")
        if self.sample_interval_s <= 0 or self.timeout_s <= 0:
            raise bad("sample_interval_s and timeout_s must be positive")
        if self.agent_progress_s < 0:
            raise bad("agent_progress_s must be >= 0")
        if not 1 <= self.priority_queues <= 8:
            raise bad(f"priority_queues must be 1..8, got {self.priority_queues}")
        if self.window_pkts < 1:
            raise bad("window_pkts must be >= 1")
        self.workload.validate()

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["results_root"] = str(self.results_root)
        return d

    def notes(self) -> list[str]:
        warning = spray_gbn_warning(self.lb, self.recovery)
        return [warning] if warning else []


def spray_gbn_warning(lb: str, recovery: str) -> str | None:
    """Spraying reorders nearly every packet; go-back-N treats each gap as a loss and
    resends the whole window, which reorders again: livelock-prone."""
    if lb == "spray" and recovery == "gbn":
        return ("spray with go-back-N: every reorder triggers a resend of the whole window "
                "(livelock-prone); use --recovery sr (RECOVERY=sr)")
    return None


def without_link_delay(fabric: Any) -> Any:
    """`fabric` with every link's delay set to 0 (emu run --no-link-delay)."""
    return dataclasses.replace(fabric, links=tuple(dataclasses.replace(link, delay_ns=0)
                                                   for link in fabric.links))


def with_link_rate(topo: str, rate_bps: int) -> Any:
    """The topology with every link's rate set to `rate_bps` (for calibrated runs)."""
    import yaml

    from emu.topo import loads_topology, resolve_topology

    path = resolve_topology(topo)
    data = yaml.safe_load(path.read_text())
    data.setdefault("defaults", {})["rate"] = f"{rate_bps}bps"
    for key in ("links",):
        for link in data.get(key) or []:
            if isinstance(link, dict):
                link.pop("rate", None)
    return loads_topology(yaml.safe_dump(data), str(path))
