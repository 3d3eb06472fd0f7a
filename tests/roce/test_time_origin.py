"""The host stack keeps no state tied to the clock's origin: what a QP does depends on
when things happened relative to each other, never on how far from time 0 it started
(a run waits 0.3 s before its first send, a test often not at all)."""

from __future__ import annotations

from emu.core.clock import VirtualClock
from emu.roce.agent import _start_ns
from emu.roce.dcqcn import ReactionPoint, profile
from emu.roce.pacing import Pacer
from tests.roce.helpers import is_data, pair

SECOND = 10**9


def exchange(origin_ns: int) -> list[tuple[int, str, int]]:
    """A 16-packet message from A to B on a clock starting at `origin_ns`: every frame on
    the wire as (time since the origin, data or ack, PSN)."""
    log: list[tuple[int, str, int]] = []
    clock = VirtualClock(origin_ns)

    def note(frame: bytes) -> list[int]:
        kind = "data" if is_data(frame) else "ack"
        log.append((clock.now_ns() - origin_ns, kind, int.from_bytes(frame[51:54], "big")))
        return [0]

    # ACK only on ackreq, at the message's end or after the interval since the last ACK
    # (the first packet starts it): at time 0 the first packet was not ACKed, a second
    # later it was (a second since "the last ACK" at time 0).
    clk, a, _b, qa, _qb, _link = pair(clock=clock, fate_a=note, fate_b=note,
                                      qp_kw={"ack_every_pkts": 64, "ack_interval_ns": 50_000})
    qa.post_send(b"x" * 16 * 1024)
    clk.run_until_idle()
    return log


def test_a_message_runs_the_same_at_time_zero_and_a_second_later() -> None:
    at_zero, later = exchange(0), exchange(SECOND)
    assert at_zero == later
    # 16 KB at 10 Gb/s take 13 us, under the 50 us interval: one ACK, the message's
    assert [kind for _t, kind, _psn in at_zero].count("ack") == 1


def test_a_pacer_gives_no_credit_for_time_with_nothing_to_send() -> None:
    """A sender that becomes active (restart, as the NIC does when a QP gets something to
    send) starts its next slot now, whatever the clock reads and however long it was
    idle: that credit was burst_ns of wire time, so it depended on the clock's origin
    (none before burst_ns) and on the dilation (the same burst is more modelled time at
    a smaller one)."""
    def gaps(origin: int, idle: int) -> tuple[int, int]:
        p = Pacer(1e9, burst_ns=5_000)
        p.restart(origin)
        p.on_send(1000, origin)
        first = p.next_ns - origin
        later = origin + first + idle
        p.restart(later)
        p.on_send(1000, later)
        return first, p.next_ns - later

    assert gaps(0, 0) == gaps(SECOND, 0) == gaps(3_000, 0)
    assert gaps(0, 100_000) == gaps(SECOND, 100_000) == gaps(0, 0)
    # time spent waiting to send still counts, up to burst_ns: the rate holds
    p = Pacer(1e9, burst_ns=5_000)
    p.restart(0)
    p.on_send(1000, 0)
    p.on_send(1000, p.next_ns + 2_000)  # sent 2 us after its slot: that slot stands
    assert p.next_ns == 2 * 8_192


def test_paper_alpha_waits_for_the_first_cnp() -> None:
    """The paper's simulator starts its alpha timer at a CNP: a QP created long before
    its first CNP cuts as hard as one created just before it."""
    def rate_after_first_cnp(idle_ns: int) -> tuple[float, float]:
        clock = VirtualClock()
        rp = ReactionPoint(profile("paper", 40e9), 40e9, clock)
        clock.advance(idle_ns)
        rp.on_cnp()
        return rp.rc, rp.alpha

    assert rate_after_first_cnp(0) == rate_after_first_cnp(10 * 55_000)


def test_a_start_time_rounds_to_the_nearest_nanosecond() -> None:
    """A Poisson arrival n ns in, given in us (n / 1e3) plus the start delay: the float
    sum is a hair off the whole ns either way; truncating it lost a ns (here 144272509
    with a 0.3 s delay, 531969374 with none)."""
    for n in (144_272_509, 531_969_374, 47_437_687):
        for delay_us in (0.0, 300_000.0):
            assert _start_ns(delay_us + n / 1e3) == round(delay_us * 1000) + n
