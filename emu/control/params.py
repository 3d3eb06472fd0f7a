"""Typed settings the controller programs: load balancing, ECN (RED), QoS.

Limits mirror p4src/include/headers.p4 (MAX_MEMBERS, MAX_GROUPS, ...): the program is
written for them, so the controller refuses anything beyond.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from emu.core.wire import DSCP_CNP, DSCP_ROCE_DATA, MAX_GROUP_MEMBERS
from emu.roce.dcqcn import ECN_MARK_POINTS, EcnMarkAt

from .errors import ParamError

MAX_MEMBERS = MAX_GROUP_MEMBERS
"""Members per next-hop group: fabric.p4 unrolls the adaptive choice over 16 candidates."""
MAX_GROUPS = 1024
FLOWLET_SLOTS = 4096
SPRAY_SLOTS = 4096
"""Entries of fabric.p4's spray_next register: flows sharing a slot share one rotation."""
TE_FLOW_SLOTS = 4096
"""Entries of fabric.p4's te_flow table: the flows TE can pin on one switch."""
PORT_SLOTS = 512
QDEPTH_SLOTS = PORT_SLOTS * 8
"""Entries of fabric.p4's port_qdepth registers: one per port and priority."""
ECN_PROB_ONE = 1 << 24
"""RED probabilities are compared with random numbers in [0, 2^24)."""
U32_MAX = (1 << 32) - 1



class LbMode(str, enum.Enum):
    """Load-balancing modes; the value of each is its `mode` code in fabric.p4."""

    ECMP = "ecmp"
    FLOWLET = "flowlet"
    ADAPTIVE = "adaptive"
    SPRAY = "spray"
    TE = "te"

    @property
    def code(self) -> int:
        return _MODE_CODES[self]

    @classmethod
    def parse(cls, value: str | LbMode) -> LbMode:
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(m.value for m in cls)
            raise ParamError(f"unknown load-balancing mode {value!r} (modes: {names})") from None

    def __str__(self) -> str:
        return self.value


_MODE_CODES = {LbMode.ECMP: 0, LbMode.FLOWLET: 1, LbMode.ADAPTIVE: 2, LbMode.SPRAY: 3,
               LbMode.TE: 4}


def _u32(name: str, value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= U32_MAX:
        raise ParamError(f"{name} must be an integer in 0..{U32_MAX}, got {value!r}")


PFC_DATA_PRIORITY = 3
"""The lossless priority RoCE data uses with PFC (QosSettings.lossless, FlowControl)."""


@dataclass(frozen=True)
class LbSettings:
    """One switch's load balancing.

    seed: None gives every switch its own seed (derived from its device id), which
    avoids hash polarization; an integer puts that same seed on every switch (the
    classic polarized setup). flowlet_timeout_us: idle gap that ends a flowlet.
    qdepth_max_age_us: adaptive mode treats queue readings older than this as empty;
    None (the default): never. A reading is refreshed by every departure from its queue
    and the last one of a drained queue reads 0, so a reading stays deep only while its
    queue stops sending (PFC pause, a starved priority): the queue is deep then, and
    aging its reading to empty sent new traffic into a paused port.
    """

    mode: LbMode = LbMode.ECMP
    seed: int | None = None
    flowlet_timeout_us: int = 500
    qdepth_max_age_us: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", LbMode.parse(self.mode))
        if self.seed is not None:
            _u32("seed", self.seed)
        _u32("flowlet_timeout_us", self.flowlet_timeout_us)
        if self.qdepth_max_age_us is not None:
            _u32("qdepth_max_age_us", self.qdepth_max_age_us)
        if self.flowlet_timeout_us == 0:
            raise ParamError("flowlet_timeout_us must be positive")

    def seed_for(self, device_id: int) -> int:
        if self.seed is not None:
            return self.seed
        # Odd-multiplier scramble: distinct, well-spread seeds for distinct device ids.
        return (device_id * 0x9E3779B1 + 0x7F4A7C15) & U32_MAX

    def action_params(self, device_id: int) -> dict[str, int]:
        """Parameters of fabric.p4's `set_lb_config` action."""
        return {
            "mode": self.mode.code,
            "seed": self.seed_for(device_id),
            "flowlet_timeout_us": self.flowlet_timeout_us,
            # now - time > 2^32 - 1 never holds in fabric.p4's 32-bit arithmetic
            "qdepth_max_age_us": U32_MAX if self.qdepth_max_age_us is None
            else self.qdepth_max_age_us,
        }


@dataclass(frozen=True)
class EcnSettings:
    """RED-style ECN marking on an egress queue, thresholds in packets.

    Marks never at or below kmin_pkts, always above kmax_pkts, with probability
    pmax * (q - kmin) / (kmax - kmin) in between (pmax at kmax itself, as DCQCN's RED and
    the DCQCN and HPCC authors' ns-3 switches mark). enabled=False: never mark.
    mark_at: where q is read. "dequeue" (the packets left behind the departing one, as
    the HPCC simulator and the DCQCN authors' ns-3 model mark: the signal carries no
    queueing delay) or "enqueue" (the packets an arrival finds, as switches that mark
    on admission do: the signal reaches the receiver a queueing delay later).
    """

    kmin_pkts: int = 5
    kmax_pkts: int = 20
    pmax: float = 0.2
    enabled: bool = True
    mark_at: EcnMarkAt = "dequeue"

    def __post_init__(self) -> None:
        for name in ("kmin_pkts", "kmax_pkts"):
            _u32(name, getattr(self, name))
        if not self.kmin_pkts < self.kmax_pkts:
            raise ParamError(
                f"ECN needs kmin < kmax, got kmin={self.kmin_pkts} kmax={self.kmax_pkts}")
        if not 0.0 <= self.pmax <= 1.0:
            raise ParamError(f"ECN pmax must be in [0, 1], got {self.pmax}")
        if self.mark_at not in ECN_MARK_POINTS:
            raise ParamError(f"ECN mark_at must be one of {', '.join(ECN_MARK_POINTS)}, "
                             f"got {self.mark_at!r}")

    def validate_for(self, depth_pkts: int, where: str = "port") -> None:
        """Kmax must be a depth a packet can see, or the ramp could never reach pmax: a
        queue of depth D holds at most D packets, so a packet finds (enqueue) or leaves
        behind (dequeue) at most D - 1."""
        if self.enabled and self.kmax_pkts >= depth_pkts:
            raise ParamError(
                f"ECN kmax={self.kmax_pkts} is not below the queue depth of {where} "
                f"({depth_pkts} packets): need kmin < kmax < depth")

    @property
    def slope(self) -> int:
        """round(pmax * 2^24 / (kmax - kmin)): fabric.p4 has no division."""
        return round(self.pmax * ECN_PROB_ONE / (self.kmax_pkts - self.kmin_pkts))

    def mark_probability(self, q_pkts: int) -> float:
        """The probability the program implements at queue depth q (for tests/plots)."""
        if q_pkts > self.kmax_pkts:
            return 1.0
        if q_pkts <= self.kmin_pkts:
            return 0.0
        return min(1.0, self.slope * (q_pkts - self.kmin_pkts) / ECN_PROB_ONE)

    def action_params(self) -> dict[str, int]:
        """Parameters of fabric.p4's `set_red` action."""
        return {"kmin": self.kmin_pkts, "kmax": self.kmax_pkts, "slope": self.slope,
                "at_dequeue": int(self.mark_at == "dequeue")}


@dataclass(frozen=True)
class QosSettings:
    """DSCP -> strict-priority egress queue (standard_metadata.priority; higher first).

    priority_queues is how many queues each switch port has (BMv2 --priority-queues);
    a priority at or beyond it would be dropped by the traffic manager, so it is refused.
    """

    priority_queues: int = 1
    dscp_priority: Mapping[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not 1 <= self.priority_queues <= 8:
            raise ParamError(f"priority_queues must be 1..8, got {self.priority_queues}")
        for dscp, prio in self.dscp_priority.items():
            if not 0 <= dscp < 64:
                raise ParamError(f"DSCP must be 0..63, got {dscp}")
            if not 0 <= prio < self.priority_queues:
                raise ParamError(
                    f"priority {prio} for DSCP {dscp} needs {prio + 1} priority queues; "
                    f"the switches have {self.priority_queues}")

    @classmethod
    def roce(cls, priority_queues: int) -> QosSettings:
        """DSCP 48 (CNPs; ACKs too with ack_class "cnp") on the highest queue, the rest
        on queue 0."""
        if priority_queues <= 1:
            return cls(priority_queues=max(1, priority_queues))
        return cls(priority_queues, {DSCP_CNP: priority_queues - 1})

    @classmethod
    def lossless(cls, priority_queues: int = 8, data_dscp: int = DSCP_ROCE_DATA,
                 data_priority: int = PFC_DATA_PRIORITY) -> QosSettings:
        """RoCE with PFC: data (DSCP 26) on priority 3, the lossless class, CNPs (DSCP 48)
        on the highest queue, everything else on 0. The PFC priority of a packet is this
        same number (emu.core.pfc), on switches and hosts alike."""
        return cls(priority_queues, {data_dscp: data_priority, DSCP_CNP: priority_queues - 1})
