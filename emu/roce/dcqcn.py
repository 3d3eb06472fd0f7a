"""DCQCN (Zhu et al., SIGCOMM 2015): notification point and reaction point, plus profiles.

All parameters are given in nominal units (the emulated link, e.g. 100 Gbps) and turned
into wire units by a `Dilation` (see `emu.roce.pacing`): rates divide by the dilation
factor D and durations multiply by it, byte counts stay. The reaction point works only
in wire units. docs/dcqcn-profiles.md lists the profiles and where each value comes from.

Reaction point, per QP (current rate Rc, target rate Rt, alpha). Two ways to update
alpha and decide decreases (`DcqcnParams.alpha_update`):

- "per_period" (NVIDIA NICs; the HPCC simulator's Mellanox model). The first CNP of the
  QP sets alpha = alpha_init (that CNP does not count as "a CNP arrived") and starts two
  clocks: alpha is updated at the end of every alpha period, to (1-g) alpha + g if a CNP
  arrived in that period (whether or not its decrease was suppressed) and to (1-g) alpha
  otherwise; and at the end of every rate_reduce_period that saw a CNP the rate decreases
  once (the decrease rule below), alpha updates at the same instant coming first. Further CNPs in that period are counted in cnps_ignored. Both clocks are
  evaluated lazily (nothing is scheduled while no CNP is pending), which equals the
  free-running timers of the model.
- "per_cnp" (the paper): each CNP decreases the rate with the current alpha and then
  sets alpha = (1-g) alpha + g; alpha decays, (1-g) alpha, once per full alpha period
  without a CNP (a timer restarted at each CNP; none runs before the first CNP). A non-zero rate_reduce_period
  suppresses decreases closer than that to the last one, but never the alpha update.

A decrease sets Rc = max(min_rate, Rc (1 - alpha 2^(10 - alpha_to_rate_shift)),
min_dec_factor Rc): with the shift at 11 (NVIDIA's rpg_gd default) that is Rc (1 - alpha/2);
min_dec_factor (rpg_min_dec_fac) bounds what one decrease may take, 0 for no bound.
Before it, Rt = Rc (clamp) if clamp_target_rate (clamp_tgt_rate), or if a byte-counter
increase event happened since the previous decrease (whatever timer events followed it),
or a timer one with clamp_after_timer_increase (clamp_tgt_rate_after_time_inc);
otherwise (no increase since the previous decrease, or only timer ones without that
flag) Rt keeps its value. A non-zero rate_on_first_cnp_bps sets Rc = Rt to it on the first CNP.
The decrease restarts the increase timer (every time_reset) and the byte counter (every
byte_reset bytes sent; 0 disables it) and their stage counts i, j. Each increase event
sets Rc = (Rt + Rc) / 2 after raising Rt as the stage says (`increase_stages`):

- "timer_and_bytes" (QCN/DCQCN): counts i, j include the event; fast recovery (Rt
  unchanged) while max(i, j) <= F, so F events of either counter; hyper increase
  Rt += (min(i, j) - F) R_HAI once both exceed F; additive Rt += R_AI otherwise.
- "timer_only" (the HPCC simulator's Mellanox model): the timer's stage s, counted
  before the event: fast recovery while s < F (F events), additive at s = F, then
  hyper with a fixed Rt += R_HAI per event. No byte counter.

Rt never exceeds the line rate; once Rc is within 1 bit/s of it, the episode ends and the
increase timer stops (further events would leave Rc at the line rate).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, get_args

from emu.core.clock import Clock, TimerHandle
from emu.core.units import Dilation
from emu.core.wire import DSCP_CNP
from emu.roce.wire import AckClass

AlphaUpdate = Literal["per_period", "per_cnp"]
IncreaseStages = Literal["timer_and_bytes", "timer_only"]


@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN parameters in nominal units (defaults: the NVIDIA NIC profile)."""

    enabled: bool = True
    g: float = 5 / 1024
    alpha_init: float = 1023 / 1024
    alpha_period_ns: int = 1_000
    rate_reduce_period_ns: int = 4_000
    min_rate_bps: float = 1e6
    rate_on_first_cnp_bps: float = 0.0
    time_reset_ns: int = 300_000
    byte_reset_bytes: int = 32767
    threshold_f: int = 1
    ai_rate_bps: float = 5e6
    hai_rate_bps: float = 50e6
    # Notification point: at most one CNP per QP per this long. NVIDIA's pages available
    # to us stop before the notification point table; the one device source is a
    # ConnectX firmware query whose every other value is the documented default, and it
    # reads MIN_TIME_BETWEEN_CNPS 2 (us) (docs/dcqcn-profiles.md [F]; 50 us is the paper's).
    min_time_between_cnps_ns: int = 2_000
    # model differences between the sources (see the module docstring)
    alpha_update: AlphaUpdate = "per_period"
    increase_stages: IncreaseStages = "timer_and_bytes"
    clamp_target_rate: bool = False
    clamp_after_timer_increase: bool = True
    alpha_to_rate_shift: int = 11  # rpg_gd: a decrease takes alpha x 2^(10 - shift)
    min_dec_factor: float = 0.5  # rpg_min_dec_fac: one decrease keeps >= this x Rc
    # A rate change re-times the pacing gap already running (a rate limiter), or applies
    # from the next packet on (the simulators' DCQCN models); see emu.roce.pacing.Pacer.
    retime_pacing: bool = True

    def validate(self) -> None:
        if not 0 < self.g < 1:
            raise ValueError("dcqcn.g must be in (0, 1)")
        if not 0 <= self.alpha_init <= 1:
            raise ValueError("dcqcn.alpha_init must be in [0, 1]")
        if self.alpha_period_ns <= 0 or self.time_reset_ns <= 0:
            raise ValueError("dcqcn.alpha_period_ns and time_reset_ns must be positive")
        if self.threshold_f < 1:
            raise ValueError("dcqcn.threshold_f must be >= 1")
        if self.alpha_to_rate_shift not in (10, 11):
            raise ValueError("dcqcn.alpha_to_rate_shift must be 10 or 11 (rpg_gd: a decrease "
                             "takes alpha, or alpha/2, of the rate)")
        if not 0 <= self.min_dec_factor <= 1:
            raise ValueError("dcqcn.min_dec_factor must be in [0, 1]")
        if self.alpha_update not in ("per_period", "per_cnp"):
            raise ValueError("dcqcn.alpha_update must be 'per_period' or 'per_cnp'")
        if self.increase_stages not in ("timer_and_bytes", "timer_only"):
            raise ValueError("dcqcn.increase_stages must be 'timer_and_bytes' or 'timer_only'")
        if self.alpha_update == "per_period" and self.rate_reduce_period_ns <= 0:
            raise ValueError("dcqcn.rate_reduce_period_ns must be positive with "
                             "alpha_update 'per_period' (decreases are checked once per period)")
        if self.increase_stages == "timer_only" and self.byte_reset_bytes:
            raise ValueError("dcqcn.byte_reset_bytes must be 0 with increase_stages "
                             "'timer_only' (that model has no byte counter)")
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
                raise ValueError(f"dcqcn.{f.name} must not be negative")


PROFILES = ("paper", "nvidia", "hpcc")
# What a run, an incast and an agent config without `profile:` use: one default.
DEFAULT_PROFILE = "hpcc"

# Where DCQCN's congestion point (the switch) reads the queue it marks on: the packets an
# arrival finds (enqueue) or those a departure leaves behind (dequeue); emu.control.EcnSettings.
EcnMarkAt = Literal["dequeue", "enqueue"]
ECN_MARK_POINTS: tuple[str, ...] = get_args(EcnMarkAt)


@dataclass(frozen=True)
class ProfileSpec:
    """A profile as its source runs it: the reaction/notification point parameters plus
    the switch ECN marking (RED-style ramp from kmin to kmax bytes of queue, marking
    probability pmax at kmax and 1 above), the switch buffer, and the class ACK/NAK
    travel in ("qp": the data's own traffic class; "cnp": the high-priority class
    CNPs use). `sources` names where each value comes from (docs/dcqcn-profiles.md)."""

    name: str
    dcqcn: DcqcnParams
    kmin_bytes: int
    kmax_bytes: int
    pmax: float
    buffer_bytes: int
    ack_class: AckClass
    cnp_dscp: int | None = None  # None: the source does not set one (CNPs as ACKs)
    cnp_pcp: int | None = None
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    # Where the switch reads the queue for marking: every profile's source marks at
    # dequeue (the HPCC simulator's SwitchNotifyDequeue, and the DCQCN authors' ns-3
    # model it extends); see emu.control.EcnSettings.mark_at.
    mark_at: EcnMarkAt = "dequeue"
    # The RoCE MTU of the source's runs: marking thresholds and Pmax are per packet, so
    # converting the source's Kmin/Kmax to packets needs its packet size (4 KB packets
    # would get a quarter of the marks per byte below Kmax).
    mtu_bytes: int = 1024

    @property
    def min_time_between_cnps_ns(self) -> int:
        return self.dcqcn.min_time_between_cnps_ns


_HPCC = "alibaba-edu/High-Precision-Congestion-Control"
_HPCC_RUN = f"{_HPCC} simulation/run.py (dcqcn run)"
_HPCC_RDMA = f"{_HPCC} simulation/src/point-to-point/model/rdma-hw.cc (Mlx functions)"
_DOCA = "NVIDIA DOCA docs, 'DCQCN CC Parameters'"
_SILENT = "not in the NVIDIA documentation available to us (DOCA pages cut off)"
_FW = "a public ConnectX firmware query (mlxconfig) shows the same values"
_PAPER = "Zhu et al., 'Congestion Control for Large-Scale RDMA Deployments', SIGCOMM 2015"
_NS3RDMA = "bobzhuyb/ns3-rdma windows/ns-3-dev/mix/config.txt (the paper's simulator)"


def _check_rate(line_rate_bps: float) -> None:
    if not (isinstance(line_rate_bps, (int, float)) and line_rate_bps > 0):
        raise ValueError(f"line rate must be a positive number of bit/s, got {line_rate_bps!r}")


def _hpcc_switch(line_rate_bps: float) -> tuple[int, int, float, int]:
    """HPCC simulator's marking per link speed (Kmin/Kmax 100/400 kB per 25 Gbps, kB =
    1000 B in its switch MMU, Pmax 0.2) and buffer (16 MiB per 50 Gbps of NIC speed)."""
    k25 = line_rate_bps / 25e9
    return (round(100_000 * k25), round(400_000 * k25), 0.2,
            round(16 * 1024 * 1024 * line_rate_bps / 50e9))


def _hpcc_spec(line_rate_bps: float) -> ProfileSpec:
    """The HPCC simulator's DCQCN run (its Mellanox model and switch settings)."""
    k = line_rate_bps / 25e9
    dc = DcqcnParams(
        g=1 / 256, alpha_init=1.0, alpha_period_ns=1_000, rate_reduce_period_ns=4_000,
        min_rate_bps=1e9, rate_on_first_cnp_bps=0.0, time_reset_ns=300_000,
        byte_reset_bytes=0, threshold_f=1, ai_rate_bps=5e6 * k, hai_rate_bps=50e6 * k,
        min_time_between_cnps_ns=0, alpha_update="per_period",
        increase_stages="timer_only", clamp_target_rate=False,
        clamp_after_timer_increase=True, alpha_to_rate_shift=11, min_dec_factor=0.0,
        retime_pacing=False)
    kmin, kmax, pmax, buf = _hpcc_switch(line_rate_bps)
    return ProfileSpec(
        "hpcc", dc, kmin, kmax, pmax, buf, ack_class="qp", sources={
            "rp parameters": _HPCC_RUN + ": ALPHA_RESUME_INTERVAL 1, RATE_DECREASE_INTERVAL "
            "4, RP_TIMER 300, EWMA_GAIN 1/256, FAST_RECOVERY_TIMES 1, RATE_AI/HAI 5/50 "
            "Mb/s x bw/25, MIN_RATE 1000 Mb/s, CLAMP_TARGET_RATE 0",
            "rp model": _HPCC_RDMA,
            "pacing after a rate change": _HPCC_RDMA + ": the new rate applies from "
            "the next packet (m_rate set without ChangeRate's re-timing)",
            "alpha_init, rate on first CNP": f"{_HPCC} rdma-queue-pair.cc (alpha 1), "
            "rdma-hw.cc RateOnFirstCnp default 1.0 (rate unchanged)",
            "cnp pacing": _HPCC_RDMA + ": CNP flag on the ACK of every marked packet "
            "(run.py L2_ACK_INTERVAL 1: an ACK per packet)",
            "marking": _HPCC_RUN + ": KMIN_MAP/KMAX_MAP/PMAX_MAP; switch-mmu.cc kB = 1000 B",
            "buffer": _HPCC_RUN + ": BUFFER_SIZE 16 x bw/50 MiB, one buffer per switch",
            "packet size": _HPCC_RUN + ": PACKET_PAYLOAD_SIZE 1000 (the RoCE MTU 1024 is "
            "the nearest path MTU)",
            "ack class": _HPCC_RUN + ": ACK_HIGH_PRIO 1 puts ACKs first at the sending "
            "NIC only; switch-node.cc queues them by the data's PG (AckHighPrio "
            "defaults 0, scratch/third.cc never sets it)",
        })


def _nvidia_spec(line_rate_bps: float) -> ProfileSpec:
    """NVIDIA's documented ConnectX parameters (switch settings as hpcc's)."""
    dc = DcqcnParams()  # the defaults are this profile (CNP pacing 2 us: see the field)
    kmin, kmax, pmax, buf = _hpcc_switch(line_rate_bps)
    return ProfileSpec(
        "nvidia", dc, kmin, kmax, pmax, buf, ack_class="qp", cnp_dscp=DSCP_CNP, cnp_pcp=6,
        sources={
            "g, alpha period, alpha_init, rate decrease period, min rate, rate on "
            "first CNP, decrease shift and bound": _DOCA + " (dce_tcp_g 1019 = 1024 "
            "(1-g); dce_tcp_rtt 1 us; initial_alpha_value 1023/1024; "
            "rate_reduce_monitor_period 4 us; rpg_min_rate 1 Mb/s; "
            "rate_to_set_on_first_cnp 0; rpg_gd 11 (alpha/2); rpg_min_dec_fac 50%)",
            "clamp": _DOCA + " 'Rate Increase' (clamp_tgt_rate 0, "
            "clamp_tgt_rate_after_time_inc 1; the pages available to us are cut off "
            "there, the rule's wording is Mellanox's as quoted in public simulators): "
            "Rt = Rc on a decrease after a byte-counter increase, and after a timer "
            "increase with clamp_tgt_rate_after_time_inc",
            "time/byte reset, F, AI/HAI": _SILENT + ": rpg_time_reset 300 us, "
            "rpg_byte_reset 32767 B, rpg_threshold 1, rpg_ai_rate/rpg_hai_rate 5/50 "
            "Mb/s, rpg_max_rate 0 (line rate) kept; " + _FW,
            "rp model": _HPCC_RDMA + " (the HPCC simulator's model of these NICs)",
            "pacing after a rate change": "not documented; re-timed as a rate limiter "
            "would (a QP cut to 1 Mb/s would otherwise wait 33 ms for its next 4 KB "
            "frame after its rate had recovered)",
            "cnp pacing": "min_time_between_cnps 2 us: a public ConnectX firmware "
            "query (mlxconfig) whose other values are the documented defaults reads "
            "MIN_TIME_BETWEEN_CNPS 2 (" + _SILENT + "; the 50 us used before was the "
            "paper's value, not NVIDIA's)",
            "cnp class": _SILENT + ": cnp_dscp 48, cnp_802p_prio 6 kept; " + _FW,
            "ack class": "RoCE ACK/NAK use the QP's own traffic class",
            "marking, buffer": "set on the switch, not the NIC: the HPCC simulator's",
            "packet size": "RoCE MTU 1024, the largest that fits the default 1500-byte "
            "Ethernet MTU (NVIDIA's RoCE documentation)",
        })


def _paper_spec(line_rate_bps: float) -> ProfileSpec:
    """The DCQCN paper's algorithm and parameters at 40 Gbps, scaled."""
    k40 = line_rate_bps / 40e9
    dc = DcqcnParams(
        g=1 / 256, alpha_init=1.0, alpha_period_ns=55_000, rate_reduce_period_ns=0,
        min_rate_bps=1e6, time_reset_ns=55_000, byte_reset_bytes=10 * 1024 * 1024,
        threshold_f=5, ai_rate_bps=40e6, hai_rate_bps=200e6,
        min_time_between_cnps_ns=50_000, alpha_update="per_cnp",
        increase_stages="timer_and_bytes", clamp_target_rate=True,
        alpha_to_rate_shift=11, min_dec_factor=0.0, retime_pacing=False)
    kmax = round(200_000 * k40)
    return ProfileSpec(
        "paper", dc, round(5_000 * k40), kmax, 0.01, 12_000_000, ack_class="qp", sources={
            "rp parameters": _PAPER + ": g 1/256, K 55 us, timer 55 us, byte counter "
            "10 MB, F 5, R_AI 40 Mb/s; Rt = Rc on every CNP",
            "R_HAI": _NS3RDMA + ": RATE_HAI 200Mb/s (the paper gives none)",
            "min rate": "not in the paper: the NVIDIA NIC default, 1 Mb/s",
            "pacing after a rate change": "bobzhuyb/ns3-rdma qbb-net-device.cc (the "
            "paper's simulator): the next send time is set at each send, rate changes "
            "apply from the next packet",
            "cnp pacing": _PAPER + ": at most one CNP per 50 us per QP",
            "marking": _PAPER + ": Kmin 5 KB, Kmax 200 KB, Pmax 1% at 40 Gbps, "
            "scaled here with the link speed",
            "buffer": _PAPER + ": its testbed switches (Arista 7050QX32, Broadcom "
            "Trident II) share a 12 MB buffer; the emulator gives each port that buffer "
            "(one congested port at a time, as in the incast experiments)",
            "ack class": "not stated in the paper: the QP's own class",
            "packet size": _NS3RDMA + ": PACKET_PAYLOAD_SIZE 1000 (RoCE MTU 1024 the "
            "nearest path MTU)",
        })


_PROFILE_SPECS = {"hpcc": _hpcc_spec, "nvidia": _nvidia_spec, "paper": _paper_spec}


def profile_spec(name: str, line_rate_bps: float = 100e9) -> ProfileSpec:
    """The named profile at a link speed; rates and thresholds scale with the speed where
    the source does (HPCC's AI/HAI and thresholds per 25 Gbps; the paper's at 40 Gbps)."""
    _check_rate(line_rate_bps)
    spec = _PROFILE_SPECS.get(name)
    if spec is None:
        raise ValueError(f"unknown DCQCN profile {name!r}; choose one of {', '.join(PROFILES)}")
    return spec(line_rate_bps)


def profile(name: str, line_rate_bps: float = 100e9) -> DcqcnParams:
    """The reaction/notification point parameters of `profile_spec(name, line_rate_bps)`."""
    return profile_spec(name, line_rate_bps).dcqcn


class NotificationPoint:
    """Receiver side: at most one CNP per QP per min interval, on CE-marked packets."""

    __slots__ = ("min_interval_ns", "last_ns", "suppressed")

    def __init__(self, min_interval_ns: int) -> None:
        self.min_interval_ns = min_interval_ns
        self.last_ns: int | None = None
        self.suppressed = 0

    def on_ce(self, now_ns: int) -> bool:
        """A CE-marked packet arrived; True if a CNP must be sent now."""
        last = self.last_ns
        if last is not None and now_ns - last < self.min_interval_ns:
            self.suppressed += 1
            return False
        self.last_ns = now_ns
        return True


class ReactionPoint:
    """Sender side rate control of one QP. Rates in wire bit/s, times in clock ns."""

    def __init__(self, params: DcqcnParams, line_rate_bps: float, clock: Clock,
                 on_rate: Callable[[float], None] | None = None, trace_max: int = 100_000) -> None:
        params.validate()
        self.p = params
        self.line = float(line_rate_bps)
        self.clock = clock
        self.on_rate = on_rate
        self.rc = self.line
        self.rt = self.line
        self._alpha = params.alpha_init
        # per_cnp: start of the current alpha period, from the QP's first CNP on (the
        # paper's simulator starts its alpha timer at a CNP: alpha holds its initial
        # value until then). The QP's creation time made alpha decay while the run
        # waited to start, so results depended on that wait.
        self._alpha_t: int | None = None
        # per_period: time of the QP's first CNP (the origin of both period clocks), the
        # alpha period ends processed so far and whether the current one saw a CNP.
        self._t0: int | None = None
        self._alpha_k = 0
        self._alpha_cnp = False
        self._decrease_pending = False
        self._decrease_timer: TimerHandle | None = None
        self.i = 0  # timer stage count since the last decrease
        self.j = 0  # byte-counter stage count since the last decrease
        self.bytes = 0
        self.cnps = 0
        self.cnps_ignored = 0  # CNPs whose own rate decrease was suppressed
        self.decreases = 0
        self.increases = 0
        self.last_decrease_ns: int | None = None
        self.active = False  # in a congestion episode (Rc below line rate)
        self._timer: TimerHandle | None = None
        self.trace: list[tuple[int, float]] = [(clock.now_ns(), self.rc)]
        self._trace_max = trace_max

    # -- alpha --------------------------------------------------------------------------
    @property
    def alpha(self) -> float:
        now = self.clock.now_ns()
        if self.p.alpha_update == "per_period":
            self._alpha_catch_up(now)
        else:
            self._decay(now)
        return self._alpha

    def _decay(self, now: int) -> None:
        """per_cnp: one (1-g) step per full alpha period since the last CNP."""
        t = self._alpha_t
        if t is None:
            return
        period = self.p.alpha_period_ns
        k = (now - t) // period
        if k > 0:
            self._alpha *= (1.0 - self.p.g) ** k
            self._alpha_t = t + k * period

    def _alpha_catch_up(self, now: int) -> None:
        """per_period: apply every alpha period end at or before now."""
        if self._t0 is None:
            return
        n = (now - self._t0) // self.p.alpha_period_ns
        steps = n - self._alpha_k
        if steps <= 0:
            return
        g = self.p.g
        a = self._alpha
        if self._alpha_cnp:  # only the period the flag was set in ends with a CNP
            a = (1.0 - g) * a + g
            steps -= 1
            self._alpha_cnp = False
        self._alpha = a * (1.0 - g) ** steps
        self._alpha_k = n

    # -- rate ---------------------------------------------------------------------------
    def _set_rc(self, rc: float) -> None:
        self.rc = rc
        if len(self.trace) < self._trace_max:
            self.trace.append((self.clock.now_ns(), rc))
        if self.on_rate is not None:
            self.on_rate(rc)

    def on_cnp(self) -> None:
        self.cnps += 1
        if self.p.alpha_update == "per_period":
            self._cnp_per_period()
        else:
            self._cnp_per_cnp()

    def _first_cnp_rate(self) -> None:
        r = self.p.rate_on_first_cnp_bps
        if r > 0:
            r = min(self.line, max(self.p.min_rate_bps, r))
            self.rt = r
            self._set_rc(r)

    def _cnp_per_period(self) -> None:
        p = self.p
        now = self.clock.now_ns()
        if self._t0 is None:
            self._t0 = now
            self._alpha = p.alpha_init
            self._alpha_k = 0
            self._alpha_cnp = False  # the first CNP only initialises alpha
            self._first_cnp_rate()
        else:
            self._alpha_catch_up(now)  # period ends up to now belong to earlier CNPs
            self._alpha_cnp = True
        if self._decrease_pending:
            self.cnps_ignored += 1  # one decrease per period, already due
            return
        self._decrease_pending = True
        period = p.rate_reduce_period_ns
        when = self._t0 + ((now - self._t0) // period + 1) * period
        self._decrease_timer = self.clock.call_at(when, self._on_decrease_check)

    def _on_decrease_check(self) -> None:
        self._decrease_timer = None
        self._decrease_pending = False
        self._alpha_catch_up(self.clock.now_ns())  # alpha updates at this instant first
        self._decrease(self._alpha)

    def _cnp_per_cnp(self) -> None:
        p = self.p
        now = self.clock.now_ns()
        self._decay(now)
        alpha = self._alpha
        # alpha follows every CNP, a suppressed decrease included
        self._alpha = (1.0 - p.g) * alpha + p.g
        self._alpha_t = now
        last = self.last_decrease_ns
        if last is not None and p.rate_reduce_period_ns and now - last < p.rate_reduce_period_ns:
            self.cnps_ignored += 1
            return
        if self.decreases == 0 and p.rate_on_first_cnp_bps > 0:
            self.rt = self.rc
            self._apply_decrease(min(self.line, max(p.min_rate_bps, p.rate_on_first_cnp_bps)))
            return
        self._decrease(alpha)

    def _clamps(self) -> bool:
        """Whether this decrease sets Rt = Rc (clamp_tgt_rate and
        clamp_tgt_rate_after_time_inc): after any byte-counter increase since the
        previous decrease, whatever came after it (as the paper's simulator,
        ns3-rdma rpr_cnm_received, tests its byte stage), and after a timer one only
        with the flag."""
        p = self.p
        return (p.clamp_target_rate or self.j > 0
                or (self.i > 0 and p.clamp_after_timer_increase))

    def _decrease(self, alpha: float) -> None:
        p = self.p
        if self._clamps():
            self.rt = self.rc
        cut = alpha * 2.0 ** (10 - p.alpha_to_rate_shift)
        rc = max(self.rc * (1.0 - cut), self.rc * p.min_dec_factor)
        self._apply_decrease(min(self.line, max(p.min_rate_bps, rc)))

    def _apply_decrease(self, rc: float) -> None:
        now = self.clock.now_ns()
        self.decreases += 1
        self.last_decrease_ns = now
        self.i = self.j = 0
        self.bytes = 0
        self.active = True
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.clock.call_later(self.p.time_reset_ns, self._on_timer)
        self._set_rc(rc)

    def _on_timer(self) -> None:
        self._timer = None
        if not self.active:
            return
        p = self.p
        if p.increase_stages == "timer_only":
            s = self.i  # the stage before this event
            self.i += 1
            if s < p.threshold_f:
                step = 0.0
            elif s == p.threshold_f:
                step = p.ai_rate_bps
            else:
                step = p.hai_rate_bps
            self._increase(step)
        else:
            self.i += 1
            self._increase(self._qcn_step())
        if self.active:
            self._timer = self.clock.call_later(p.time_reset_ns, self._on_timer)

    def on_sent(self, nbytes: int) -> None:
        """Bytes sent by the QP: drives the byte counter during an episode."""
        if not self.active:
            return
        reset = self.p.byte_reset_bytes
        if reset <= 0:
            return
        self.bytes += nbytes
        while self.bytes >= reset and self.active:
            self.bytes -= reset
            self.j += 1
            self._increase(self._qcn_step())

    def _qcn_step(self) -> float:
        """Rt increment of a QCN/DCQCN increase event; i, j include the event."""
        p = self.p
        f = p.threshold_f
        lo = min(self.i, self.j)
        if lo > f:
            return (lo - f) * p.hai_rate_bps
        if max(self.i, self.j) > f:
            return p.ai_rate_bps
        return 0.0  # fast recovery

    def _increase(self, step: float) -> None:
        if step:
            self.rt = min(self.line, self.rt + step)
        rc = (self.rt + self.rc) / 2.0
        self.increases += 1
        if self.line - rc < 1.0:
            rc = self.line
            self.active = False
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        self._set_rc(min(rc, self.line))

    def stop(self) -> None:
        for t in (self._timer, self._decrease_timer):
            if t is not None:
                t.cancel()
        self._timer = self._decrease_timer = None
        self._decrease_pending = False
        self.active = False


def scaled(params: DcqcnParams, dilation: Dilation, floor_ns: int
           ) -> tuple[DcqcnParams, list[str]]:
    """Params in wire units for time dilation D; durations below floor_ns are raised to
    it (zero stays zero: it means 'no limit'; a positive one never becomes zero, even
    under a dilation below 1). Returns the params and the clamped names."""
    clamped: list[str] = []
    changes: dict[str, Any] = {}
    for f in fields(params):
        v = getattr(params, f.name)
        if f.name.endswith("_ns"):
            w = dilation.wire_ns(v)
            if v > 0 and w < max(floor_ns, 1):
                w = max(floor_ns, 1)
                clamped.append(f.name)
            changes[f.name] = w
        elif f.name.endswith("_bps"):
            changes[f.name] = dilation.wire_rate_bps(v)
    return replace(params, **changes), clamped
