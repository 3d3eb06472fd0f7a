"""RunConfig: everything one `emu run` needs, as one typed, validated object.

The CLI only maps flags onto it; the results folder records it resolved (config.json).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from emu.control.params import EcnSettings, LbMode, ParamError
from emu.core.flowmode import WATCHDOG_MODES, FlowControlMode, WatchdogMode
from emu.core.units import MAX_DILATION, MAX_LINE_RATE_BPS, Dilation
from emu.roce.config import MAX_OUTSTANDING_PKTS
from emu.roce.dcqcn import DEFAULT_PROFILE, EcnMarkAt
from emu.roce.dcqcn import PROFILES as DCQCN_PROFILES
from emu.roce.recovery import RECOVERY_MODES, RecoveryMode
from emu.roce.verbs import ACK_TIMEOUT_MAX, local_ack_timeout_ns
from emu.roce.wire import ACK_CLASSES, AckClass
from emu.topo import Fabric

from .jsontypes import JsonDict
from .workloads import WorkloadParams

# Congestion control of the hosts: DCQCN, or none (every QP at line rate).
CcMode = Literal["dcqcn", "none"]
CC_MODES: tuple[str, ...] = get_args(CcMode)
TARGETS = ("embedded", "bmv2")
# The wire rate of a run that names neither a rate nor a dilation (library and test use;
# `emu run` picks a calibrated or built-in rate, emu.experiments.rates).
DEFAULT_WIRE_RATE_BPS = 20_000_000


# Sampling of switch counters and queues when the run gives no interval: wall seconds
# in real time; seconds of the wire clock in virtual time, where reading costs no
# run time and a finer default shows queue build-up of a few microseconds modelled.
REAL_SAMPLE_S = 0.05
VIRTUAL_SAMPLE_S = 0.005
# The workload's budget when the run gives none, on the wire clock: wall seconds in real
# time; virtual seconds in virtual time, where waiting costs only the traffic's CPU.
REAL_TIMEOUT_S = 120.0
VIRTUAL_TIMEOUT_S = 600.0

# Numeric settings checked alike (dilation, sample_interval_s, timeout_s and rto_us may
# also be None: the dilation derived from the rate, the mode's own interval and budget,
# each path's own RTO).
_POSITIVE = ("dilation", "sample_interval_s", "timeout_s", "pfc_watchdog_ms",
             "flowlet_timeout_us", "rto_us")
_NON_NEGATIVE = ("agent_progress_s", "start_delay_s", "lock_wait_s", "fail_after_s",
                 "qdepth_max_age_us", "link_jitter_ns")
_TIME_UNITS_NS = (("_s", 10**9), ("_ms", 10**6), ("_us", 10**3), ("_ns", 1))
# The longest time a run's option may give: 10^9 s, in nanoseconds still within the
# 64-bit integers of the compiled clock (and what `emu incast` gives as "no timeout").
MAX_RUN_TIME_NS = 10**18


def _finite(value: object) -> bool:
    """A real number: not a bool, NaN or an infinity (NaN passes `not x <= 0`)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


class RunConfigError(ValueError):
    """A run configuration that cannot work; the message names the setting."""


@dataclass(frozen=True)
class RunConfig:
    topo: str = "clos4"
    lb: LbMode = LbMode.ECMP  # a mode's name is parsed on construction (the library's edge)
    cc: CcMode = "dcqcn"
    recovery: RecoveryMode = "gbn"
    target: str = "embedded"
    workload: WorkloadParams = field(default_factory=WorkloadParams)
    # Time dilation (emu.core.units): the topology is the modelled network; the run
    # divides every rate by the dilation and multiplies every delay and timer by it.
    # None: derived from `rate_bps`, the wire rate of the topology's fastest link (all
    # links keep their ratios), else from DEFAULT_WIRE_RATE_BPS. Give one of the two.
    dilation: float | None = None
    rate_bps: int | None = None
    rate_reason: str = ""  # why this rate (`emu run` chose it: --rate, calibrated, built-in)
    ecn_kmin_pkts: int = 5
    ecn_kmax_pkts: int = 20
    ecn_pmax: float = 0.2
    # Where the marking reads the queue (emu.control.EcnSettings.mark_at): at dequeue,
    # as the HPCC simulator and the DCQCN authors' simulator do, or at enqueue.
    ecn_mark_at: EcnMarkAt = "dequeue"
    # Strict-priority egress queues per switch port; with >1, fabric.p4 puts DSCP 48
    # (CNPs; ACK/NAKs ride with the data unless the agents' ack_class is "cnp") on the
    # top queue, so feedback does not wait behind data (as RoCE fabrics configure it).
    # 1: everything shares one queue.
    priority_queues: int = 2
    # ACK/NAK class of the host NICs: "qp" (the data class, as RC NICs send them) or
    # "cnp" (DSCP 48 with the CNPs, so the top queue carries them past the data).
    ack_class: AckClass = "qp"
    # Outstanding packets per QP (and the sr reorder window); None: twice each QP's
    # bandwidth-delay product (emu.experiments.agent_configs.window_pkts_for).
    window_pkts: int | None = None
    # Each QP's base retransmission timeout, modelled, doubled on repeated timeouts
    # (None: twice the sum of the QP's base round trip, the worst queueing its path
    # can hold and link_jitter_ns on every link of the round trip,
    # agent_configs.rto_wire_ms).
    rto_us: float | None = None
    # Instead of rto_us: every QP's IBTA local ACK timeout T (1..31), a timer of
    # 4.096 us x 2^T that every timeout waits again, without doubling, as RoCE NICs
    # run it (NCCL_IB_TIMEOUT; NCCL's default 20 is 4.3 s).
    ack_timeout: int | None = None
    # IBTA retry_cnt of every QP: timeouts in a row it retransmits after before it goes
    # to the error state and its messages fail (NCCL_IB_RETRY_CNT's default, 7); None:
    # retry until the run's budget ends (no NIC does).
    retry_cnt: int | None = 7
    mtu_bytes: int = 1024  # RoCE path MTU (payload per packet)
    # emu.roce.dcqcn profiles: hpcc (a CNP per marked packet, rates scaled to the link)
    # reacts within the queue's fill time here; nvidia rate-limits CNPs to one per 2 us
    # per QP nominal, which dilation stretches like every duration (10 ms at D = 5000).
    dcqcn_profile: str = DEFAULT_PROFILE
    plb: bool = False
    # PLB's N and M (emu.roce.plb): consecutive congested rounds before a QP re-paths with
    # packets in flight, and with none (Linux tcp_plb's defaults; 0 M: never when idle)
    plb_rounds: int = 12
    plb_idle_rounds: int = 3
    # fabric.p4's load-balancing timers, modelled (the run stretches them by the
    # dilation): the idle gap that ends a flowlet (about one base RTT of clos4 at
    # 100 Gbps; longer than any queueing skew between its paths, so a new flowlet never
    # overtakes the last) and the age past which adaptive routing treats a queue
    # reading as empty (None: never; emu.control.LbSettings says why).
    flowlet_timeout_us: float = 10.0
    qdepth_max_age_us: float | None = None
    # fabric.p4's hash seed: None gives every switch its own (no polarization); an
    # integer puts that seed on every switch (hash polarization; experiments).
    lb_seed: int | None = None
    # Counters and queue depths: one admin `stats` call per switch per sample (cheap;
    # fabric.p4 counters over P4Runtime are read less often, see run.P4_SAMPLE_S).
    sample_interval_s: float | None = None  # None: REAL_SAMPLE_S or VIRTUAL_SAMPLE_S
    agent_progress_s: float = 0.25  # agents print their counters this often (live view)
    timeout_s: float | None = None  # the workload's budget; None: REAL/VIRTUAL_TIMEOUT_S
    start_delay_s: float = 0.3  # after every agent is READY, before the first flow
    pcap: bool = False
    lock_wait_s: float = 0.0  # wait this long for another live run's lock (0: refuse)
    cli: bool = False
    progress: bool = True  # the live view (off when stdout is not a terminal)
    virtual: bool = False  # in-process virtual-time fabric instead of Mininet
    results_root: Path = Path("results")
    fail_link: tuple[str, str] | None = None  # fail this link mid-run (tests, experiments)
    fail_after_s: float = 1.0  # after the first bytes reach a host (virtual: workload start)
    # False: every link's delay is 0 (for a target that cannot emulate delays here,
    # e.g. BMv2 on a kernel without netem); results then say so.
    link_delay: bool = True
    # Virtual runs: each frame reaches the far end of its link up to this much later
    # (modelled ns, uniform, FIFO kept; emu.core.MemLink), the timing noise of real NICs
    # and switches. 0: none, so senders at one rate stay in lockstep and a full queue
    # drops the same ones over and over (phase effects). A real-time run has its CPU's.
    link_jitter_ns: float = 0.0
    # Link-level flow control (emu.core.flowmode): none keeps lossy Ethernet; pfc makes
    # the data class lossless (QosSettings.lossless, 8 priority queues). The watchdog
    # acts on a queue paused for `pfc_watchdog_ms` (modelled; restoration the same).
    flow_control: FlowControlMode = FlowControlMode.NONE
    pfc_watchdog: WatchdogMode = "off"
    pfc_watchdog_ms: float = 200.0

    def __post_init__(self) -> None:
        if isinstance(self.lb, str) and not isinstance(self.lb, LbMode):
            try:
                object.__setattr__(self, "lb", LbMode.parse(self.lb))
            except ValueError:
                pass  # validate() names the setting and the choices

    def validate(self) -> None:
        def bad(what: str) -> RunConfigError:
            return RunConfigError(f"run configuration: {what}")

        if not isinstance(self.lb, LbMode):
            raise bad(f"lb must be one of {', '.join(m.value for m in LbMode)}, "
                      f"got {self.lb!r}")
        if self.cc not in CC_MODES:
            raise bad(f"cc must be one of {', '.join(CC_MODES)}, got {self.cc!r}")
        if self.dcqcn_profile not in DCQCN_PROFILES:
            raise bad(f"dcqcn_profile must be one of {', '.join(DCQCN_PROFILES)}, "
                      f"got {self.dcqcn_profile!r}")
        if self.recovery not in RECOVERY_MODES:
            raise bad(f"recovery must be one of {', '.join(RECOVERY_MODES)}")
        if self.target not in TARGETS:
            raise bad(f"target must be one of {', '.join(TARGETS)}, got {self.target!r}")
        for name in _POSITIVE + _NON_NEGATIVE:
            value = getattr(self, name)
            if value is None and name in ("dilation", "sample_interval_s", "timeout_s",
                                          "qdepth_max_age_us", "rto_us"):
                continue
            least = "> 0" if name in _POSITIVE else ">= 0"
            if not _finite(value) or not (value > 0 if name in _POSITIVE else value >= 0):
                raise bad(f"{name} must be a finite number {least}, got {value!r}")
            unit_ns = next((ns for suffix, ns in _TIME_UNITS_NS if name.endswith(suffix)), None)
            if unit_ns is not None and value * unit_ns > MAX_RUN_TIME_NS:
                # the clocks count whole nanoseconds (a timeout of 1e300 s overflowed them)
                raise bad(f"{name} must be at most {MAX_RUN_TIME_NS / unit_ns:g}, got {value!r}")
        if self.rate_bps is not None and self.rate_bps <= 0:
            raise bad("rate_bps must be positive")
        if self.dilation is not None and self.rate_bps is not None:
            raise bad("give a wire rate (rate_bps) or a dilation, not both: "
                      "one follows from the other and the topology's fastest link")
        if not 1 <= self.priority_queues <= 8:
            raise bad(f"priority_queues must be 1..8, got {self.priority_queues}")
        if not 256 <= self.mtu_bytes <= 4096:  # as the hosts' NIC configuration takes it
            raise bad(f"mtu_bytes (the RoCE path MTU) must be 256..4096, got {self.mtu_bytes}")
        if self.window_pkts is not None and not 1 <= self.window_pkts <= MAX_OUTSTANDING_PKTS:
            # past it the hosts' configuration was refused with a traceback
            raise bad(f"window_pkts must be 1..{MAX_OUTSTANDING_PKTS} (packets in flight: "
                      f"under a quarter of the 24-bit PSN space), got {self.window_pkts}")
        if self.ack_timeout is not None:
            if isinstance(self.ack_timeout, bool) or not isinstance(self.ack_timeout, int) \
                    or not 1 <= self.ack_timeout <= ACK_TIMEOUT_MAX:
                raise bad(f"ack_timeout must be 1..{ACK_TIMEOUT_MAX} (IBTA local ACK timeout: "
                          f"4.096 us x 2^T), got {self.ack_timeout!r}")
            if self.rto_us is not None:
                raise bad("give rto_us or ack_timeout, not both: each sets the QPs' "
                          "retransmission timeout")
        if self.retry_cnt is not None and not 0 <= self.retry_cnt <= 7:
            raise bad(f"retry_cnt must be 0..7 (IBTA's 3 bits) or null (retry until the "
                      f"budget ends), got {self.retry_cnt}")
        if not 1 <= self.plb_rounds <= 1000 or not 0 <= self.plb_idle_rounds <= 1000:
            raise bad(f"plb_rounds must be 1..1000 and plb_idle_rounds 0..1000, got "
                      f"{self.plb_rounds} and {self.plb_idle_rounds}")
        if self.plb and self.cc == "none":
            # PLB re-paths on the congestion CNPs report; without DCQCN no NP sends any,
            # and the run would be ECMP plus re-paths at timeouts, labelled ecmp+plb
            raise bad("plb needs cc dcqcn: PLB counts congested rounds from the CNPs the "
                      "receivers send, and with cc none they send none")
        if self.plb and self.lb is LbMode.TE:
            # a re-path changes the UDP source port, which te_flow matches exactly: the
            # flow would leave its pinned path for the ECMP hash, in a run labelled te
            raise bad("plb and lb te exclude each other: TE pins each flow's 5-tuple, and "
                      "a PLB re-path changes its UDP source port (the flow would fall back "
                      "to ECMP)")
        if self.lb_seed is not None and not 0 <= self.lb_seed <= 0xFFFF_FFFF:
            raise bad(f"lb_seed must be an integer in 0..{0xFFFF_FFFF}, got {self.lb_seed}")
        if self.ack_class not in ACK_CLASSES:
            raise bad(f"ack_class must be one of {', '.join(ACK_CLASSES)}, got {self.ack_class!r}")
        if not isinstance(self.flow_control, FlowControlMode):
            raise bad(f"flow_control must be one of "
                      f"{', '.join(m.value for m in FlowControlMode)}, got {self.flow_control!r}")
        if self.flow_control.lossless and self.target == "bmv2":
            raise bad(f"BMv2 has neither PFC nor credit flow control; --flow-control "
                      f"{self.flow_control.value} needs --target embedded (TARGET=embedded)")
        if self.virtual and self.target != "embedded":
            # The virtual clock drives the embedded pipeline in this process; a run that
            # said BMv2 would have reported the embedded target's figures under its name.
            raise bad(f"virtual time runs the embedded target in this process; target "
                      f"{self.target} needs a real-time run (emu run without --virtual, "
                      f"emu experiment --real)")
        if self.link_jitter_ns and not self.virtual:
            raise bad("link_jitter_ns (--jitter) is for virtual runs: a real-time run has "
                      "its own timing noise, the CPU's (drop --jitter or add --virtual)")
        if self.virtual and self.cli:
            raise bad("the CLI (--cli) opens Mininet's prompt on a real-time fabric; virtual "
                      "time has no Mininet (drop --virtual or --cli)")
        if self.pfc_watchdog not in WATCHDOG_MODES:
            raise bad(f"pfc_watchdog must be one of {', '.join(WATCHDOG_MODES)}, "
                      f"got {self.pfc_watchdog!r}")
        try:  # the marking's own rules (kmin < kmax, pmax in [0, 1]), before any run
            EcnSettings(self.ecn_kmin_pkts, self.ecn_kmax_pkts, self.ecn_pmax,
                        mark_at=self.ecn_mark_at)
        except ParamError as exc:
            raise bad(str(exc)) from None
        self.workload.validate()

    def sample_interval(self) -> float:
        """Seconds between samples: the run's own, else its mode's default (wall time in
        real time, the wire clock in virtual time)."""
        if self.sample_interval_s is not None:
            return self.sample_interval_s
        return VIRTUAL_SAMPLE_S if self.virtual else REAL_SAMPLE_S

    def fixed_rto_us(self) -> float | None:
        """Every QP's RTO, modelled, when the run sets one (rto_us or ack_timeout); None:
        each QP's own, from its path."""
        if self.ack_timeout is not None:
            return local_ack_timeout_ns(self.ack_timeout) / 1e3
        return self.rto_us

    def timeout(self) -> float:
        """The workload's budget in seconds of the wire clock (wall time in real time,
        virtual time in virtual time): the run's own, else its mode's default."""
        if self.timeout_s is not None:
            return self.timeout_s
        return VIRTUAL_TIMEOUT_S if self.virtual else REAL_TIMEOUT_S

    def dilation_for(self, model: Fabric) -> Dilation:
        """The run's one dilation for the modelled fabric `model`."""
        factor = (self.dilation if self.dilation is not None else
                  model.max_rate_bps / (self.rate_bps or DEFAULT_WIRE_RATE_BPS))
        wire_bps = model.max_rate_bps / factor
        if not (0 < factor <= MAX_DILATION and wire_bps <= MAX_LINE_RATE_BPS):
            raise RunConfigError(
                f"run configuration: dilation {factor:g} puts {model.name}'s fastest link "
                f"({model.max_rate_bps:g} bit/s modelled) at {wire_bps:g} bit/s on the "
                f"wire; the dilation must be at most {MAX_DILATION:g} and the wire rate "
                f"at most {MAX_LINE_RATE_BPS:g} bit/s")
        return Dilation(factor)

    def to_dict(self) -> JsonDict:
        d = dataclasses.asdict(self)
        d["results_root"] = str(self.results_root)
        return d

    def notes(self) -> list[str]:
        warning = reorder_gbn_warning(self.lb, self.recovery)
        return [warning] if warning else []


def reorder_gbn_warning(lb: LbMode, recovery: str) -> str | None:
    """Spraying and adaptive routing choose a path per packet, so packets arrive out of
    order; go-back-N treats each gap as a loss and resends the window from it."""
    if recovery != "gbn" or lb not in (LbMode.SPRAY, LbMode.ADAPTIVE):
        return None
    if lb is LbMode.SPRAY:
        return ("spray with go-back-N: every reorder triggers a resend of the whole window "
                "(livelock-prone); use --recovery sr (RECOVERY=sr)")
    return ("adaptive with go-back-N: each packet takes the shortest queue, so packets "
            "arrive out of order and every gap resends the window from it; use --recovery "
            "sr (RECOVERY=sr)")


def without_link_delay(fabric: Fabric) -> Fabric:
    """`fabric` with every link's delay set to 0 (emu run --no-link-delay)."""
    return dataclasses.replace(fabric, links=tuple(dataclasses.replace(link, delay_ns=0)
                                                   for link in fabric.links))
