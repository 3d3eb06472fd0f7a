"""The retransmission timer: when timeouts fire after back-off and progress, and the
back-off cap under time dilation."""

from __future__ import annotations

import math

import pytest

from emu.core.clock import VirtualClock
from emu.core.port import MemLink
from emu.roce.nic import Nic, NicParams
from emu.roce.qp import QpParams, QueuePair
from emu.roce.verbs import RTO_BACKOFF_MAX, local_ack_timeout_ns, retry_span_ns, rto_cap_ns

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


def test_an_ibta_timer_waits_the_same_rto_every_time_and_fails_on_schedule() -> None:
    """rto_backoff False (the IBTA local ACK timer): on a dead path the timeouts come
    every RTO, not at 1, 3, 7, ... RTOs, and with retry_cnt 7 the eighth fails the QP
    at 8 RTOs, as retry_span_ns computes for the run's budget."""
    fired: list[int] = []
    holder: list[QueuePair] = []

    def fate(frame: bytes) -> list[int]:
        if is_data(frame):
            n = holder[0].requester.stats.timeouts
            if n > len(fired):
                fired.append(clk.now_ns())
            return []
        return [0]

    clk, _a, _b, qa, _qb, _link = pair(fate_a=fate, qp_kw={"rto_ns": RTO, "rto_backoff": False})
    holder.append(qa)
    qa.post_send(bytes(4096))
    clk.advance_to(10 * RTO)
    r = qa.requester
    assert r.rto_max_ns == r.rto_base_ns == RTO
    assert fired == [k * RTO for k in range(1, 8)]  # seven retransmissions
    assert r.error_ns == 8 * RTO
    assert retry_span_ns(RTO, rto_cap_ns(RTO, 256_000_000, False), 8) == 8 * RTO


def test_retry_span_follows_the_backoff_and_its_cap() -> None:
    """With backoff: 1 + 2 + 4 + ... RTOs, each at most the cap (at least 8 RTOs)."""
    assert retry_span_ns(RTO, rto_cap_ns(RTO, 256_000_000, True), 8) == 255 * RTO
    assert rto_cap_ns(RTO, RTO, True) == RTO_BACKOFF_MAX * RTO
    assert retry_span_ns(RTO, rto_cap_ns(RTO, RTO, True), 8) == (1 + 2 + 4 + 5 * 8) * RTO


def test_the_local_ack_timeout_is_4096_ns_times_two_to_the_t() -> None:
    assert local_ack_timeout_ns(1) == 8192
    assert local_ack_timeout_ns(20) == 4_294_967_296  # NCCL_IB_TIMEOUT's default: 4.29 s
    for bad in (0, 32):
        with pytest.raises(ValueError, match="1..31"):
            local_ack_timeout_ns(bad)


def test_an_agent_configuration_takes_rto_backoff_as_a_boolean() -> None:
    from emu.roce.config import ConfigError, load_dict

    from .test_agent import two_hosts

    h1, _h2 = two_hosts()
    h1["qps"][0]["rto_backoff"] = False
    assert load_dict(h1).qps[0].rto_backoff is False
    h1["qps"][0]["rto_backoff"] = "no"
    with pytest.raises(ConfigError, match="rto_backoff.*true/false"):
        load_dict(h1)
