"""The retransmission timer: when timeouts fire after back-off and progress, and the
back-off cap under time dilation."""

from __future__ import annotations

import math

from emu.core.clock import VirtualClock
from emu.core.port import MemLink
from emu.roce.nic import Nic, NicParams
from emu.roce.qp import QpParams, QueuePair

from .helpers import is_data, pair, path_ab

RTO = 100_000


def _timeout_sends(pass_at_timeout: int, second_post_ns: int | None = None) -> list[int]:
    """Times (ns) at which A's timeouts fire, seen as the first data frame sent after
    each one. All data is lost except the first frame sent after timeout
    `pass_at_timeout`; with `second_post_ns`, all the first message is let through after
    that timeout and a second message (all lost) is posted then."""
    state: dict[str, object] = {"seen": 0, "open": False}
    sends: list[int] = []
    holder: list[QueuePair] = []

    def fate(frame: bytes) -> list[int]:
        if not is_data(frame):
            return [0]
        n = holder[0].requester.stats.timeouts
        if n > state["seen"]:  # type: ignore[operator]
            state["seen"] = n
            sends.append(clk.now_ns())
            if n == pass_at_timeout:
                state["open"] = True
                return [0]
        if second_post_ns is not None and state["open"] and clk.now_ns() < second_post_ns:
            return [0]
        return []

    clk, _a, _b, qa, _qb, _link = pair(fate_a=fate, qp_kw={"rto_ns": RTO})
    holder.append(qa)
    qa.post_send(bytes(1024 * 20))
    if second_post_ns is not None:
        clk.advance_to(second_post_ns)
        assert qa.requester.idle()  # the first message is all acknowledged
        qa.post_send(bytes(1024))
    clk.advance_to(1_000_000)
    return sends


def test_a_timeout_after_progress_fires_one_base_rto_after_it() -> None:
    """Timeouts at 100 and 300 us back the RTO off to 400 us; the retransmission after
    the second gets through and is ACKed at ~303 us, which resets the RTO to 100 us: the
    next timeout is due 100 us later (it fired at 700 us, the backed-off deadline)."""
    sends = _timeout_sends(pass_at_timeout=2)
    assert sends[:2] == [100_000, 300_000]
    progress = sends[2] - RTO
    assert 300_000 < progress < 310_000  # one round trip after the retransmission
    assert sends[3] - sends[2] == 2 * RTO  # back-off starts over from the base
    assert sends[:4] == [100_000, 300_000, progress + RTO, progress + 3 * RTO]


def test_a_new_message_after_backed_off_recovery_times_out_at_the_base_rto() -> None:
    """The same back-off, then every packet of the message gets through; a message
    posted at 350 us whose packets are all lost times out at 450 us (it did at 700 us)."""
    sends = _timeout_sends(pass_at_timeout=2, second_post_ns=350_000)
    assert sends[:3] == [100_000, 300_000, 450_000]


def test_rto_cap_is_dilated_like_the_rto() -> None:
    """rto_max_ns (256 ms) against a 4 ms RTO: six doublings at any dilation D (at
    D >= 10 the undilated cap left the 8x floor, three doublings)."""
    for d in (1, 10, 100, 5000):
        clk = VirtualClock()
        link = MemLink(clk, rate_bps=int(100e9 // d), delay_ns=1000)
        nic = Nic(clk, link.a, NicParams(mac="02:00:00:00:00:0a", ip="10.9.0.1", dilation=d))
        r = nic.add_qp(QpParams(0x11, path_ab(), rto_ns=4_000_000)).requester
        assert r.rto_base_ns == 4_000_000 * d
        assert r.rto_max_ns == 256_000_000 * d
        assert math.log2(r.rto_max_ns / r.rto_base_ns) == 6
