"""What a queue pair's two halves share: the work requests posted to it, the messages it
delivers, its parameters, and what each half needs of the QP and NIC it belongs to
(protocols, so `requester` and `responder` do not import `qp`, which composes them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Protocol

from emu.core.clock import Clock
from emu.roce import wire
from emu.roce.dcqcn import ReactionPoint
from emu.roce.metrics import DropCounter
from emu.roce.payload import LazyPayload
from emu.roce.plb import Plb
from emu.roce.recovery import RecoveryMode

SEND = "send"
WRITE = "write"
# The IBTA local ACK timeout of a QP (ibv_qp_attr.timeout, 5 bits): 4.096 us x 2^T;
# T = 0 means no timer at all (not modelled: a lost tail would wait forever).
ACK_TIMEOUT_UNIT_NS = 4096
ACK_TIMEOUT_MAX = 31


def local_ack_timeout_ns(exponent: int) -> int:
    """The transport timer of local ACK timeout `exponent` (1..31), in ns."""
    if not 1 <= exponent <= ACK_TIMEOUT_MAX:
        raise ValueError(f"local ACK timeout must be 1..{ACK_TIMEOUT_MAX}, got {exponent}")
    return ACK_TIMEOUT_UNIT_NS << exponent


RTO_MAX_NS = 256_000_000  # QpParams.rto_max_ns: the backed-off RTO's default cap, modelled
RTO_BACKOFF_MAX = 8  # the backed-off RTO may grow to this multiple of the base RTO


def rto_cap_ns(rto_ns: int, rto_max_ns: int, backoff: bool) -> int:
    """The longest one timeout waits: with backoff rto_max_ns, yet room for at least
    three doublings; without it (an IBTA local ACK timer) the RTO itself."""
    return max(rto_max_ns, RTO_BACKOFF_MAX * rto_ns) if backoff else rto_ns


def retry_span_ns(rto_ns: int, cap_ns: int, timeouts: int) -> int:
    """How long `timeouts` timeouts in a row take after a QP's last progress: the first
    waits the RTO, each next one twice the last (up to cap_ns), as the requester runs
    them."""
    total, wait = 0, rto_ns
    for _ in range(timeouts):
        total += wait
        wait = min(2 * wait, cap_ns)
    return total


@dataclass(eq=False)
class WorkRequest:
    """One posted message (SEND or RDMA WRITE)."""

    wr_id: int
    op: str
    data: memoryview | LazyPayload  # read by slices; a LazyPayload builds bytes on demand
    imm: int | None
    va: int
    rkey: int
    first_seq: int
    npkts: int
    opcodes: tuple[int, int, int, int]
    posted_ns: int
    completed_ns: int | None = None
    first_sent_ns: int | None = None
    # Called once the message ends, well or not: `status` then says how.
    on_complete: Callable[[WorkRequest], None] | None = None
    # ibv_wc_status, as a completion reports it: None while outstanding, "success",
    # "retry_exc_err" (the QP ran out of transport retries on this message) or
    # "wr_flush_err" (a later message of that QP, flushed by its error state).
    status: str | None = None
    error_ns: int | None = None
    # This message's share of its QP's counters (several messages of one QP overlap, so
    # the QP's counter change while one was outstanding counts the others' too):
    # resent packets of its PSN range, timeouts while its packet was the oldest
    # unacknowledged, CNPs and PLB re-paths that came while its packets were being sent.
    retx_pkts: int = 0
    timeouts: int = 0
    cnps_rcvd: int = 0
    repaths: int = 0

    @property
    def length(self) -> int:
        return len(self.data)


@dataclass(eq=False)
class Message:
    """A message delivered by the responder, in order, exactly once."""

    op: str
    length: int
    imm: int | None
    va: int
    rkey: int
    first_psn: int
    completed_ns: int
    first_ns: int
    data: bytes | None = None  # with deliver="bytes"
    sha256: str | None = None  # with deliver="digest"
    ecn_marked: int = 0


@dataclass(kw_only=True)
class QpTransport:
    """An RC QP's transport settings: what its configuration (config.QpConfig) gives and
    the NIC runs (QpParams), declared once. Times in ns, as configured; the NIC converts
    them to its clock when it adds the QP."""

    start_psn: int = 0
    peer_start_psn: int = 0
    recovery: RecoveryMode = "gbn"
    reorder_window_pkts: int = 256
    max_outstanding_pkts: int = 256
    ack_every_pkts: int = 16
    ack_interval_ns: int = 16_000  # ACK an in-order packet arriving this long after the last ACK
    sr_dupthresh: int = 8
    rto_ns: int = 4_000_000
    # Repeated timeouts double the RTO up to a cap, reset by progress (a research
    # model); False: every timeout waits rto_ns, as the IBTA local ACK timer does.
    rto_backoff: bool = True
    # IBTA retry_cnt (0..7): timeouts in a row, without an ACK moving the oldest
    # unacknowledged PSN, that the QP retransmits after; the next one moves it to the
    # error state. None: retry forever (no NIC does; a research knob).
    retry_cnt: int | None = 7

    def transport(self) -> dict[str, Any]:
        """These settings alone, to build the other side's object from."""
        return {f.name: getattr(self, f.name) for f in fields(QpTransport)}


@dataclass
class QpParams(QpTransport):
    """Everything one QP needs, in wire units (see config.QpConfig for the user view)."""

    qpn: int
    path: wire.Path
    mtu: int = 1024
    rto_max_ns: int = RTO_MAX_NS
    deliver: str = "digest"  # "bytes", "digest" or "none"
    extra: dict[str, object] = field(default_factory=dict)


class QpNic(Protocol):
    """What a QP half needs of its NIC: the clock, drop counters and the control path."""

    clock: Clock
    drops: DropCounter

    def send_ctrl(self, frame: bytes) -> None: ...


class QpSide(Protocol):
    """What a QP half needs of its queue pair (emu.roce.qp.QueuePair)."""

    @property
    def nic(self) -> QpNic: ...

    @property
    def wire(self) -> wire.QpWire: ...

    @property
    def rp(self) -> ReactionPoint | None: ...

    @property
    def plb(self) -> Plb: ...

    def kick(self) -> None: ...

    def repath(self) -> None: ...
