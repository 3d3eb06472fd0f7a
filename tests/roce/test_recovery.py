"""Exactly-once, in-order delivery under loss, duplication and reordering (both modes)."""

from __future__ import annotations

import hashlib
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emu.roce.qp import SEND, WRITE
from tests.roce.helpers import is_data, pair, psn_of

# Fates of successive frames: drop, pass, duplicate, or delay (reorder) by some ns.
FATE = st.one_of(
    st.just([]), st.just([0]), st.just([0, 700]),
    st.integers(min_value=1, max_value=40).map(lambda k: [k * 1000]),
)


def _fate_fn(fates: list[list[int]], only_data: bool):
    it = iter(fates)

    def fate(frame: bytes) -> list[int]:
        if only_data and not is_data(frame):
            return [0]
        return next(it, [0])
    return fate


def _run(mode: str, start_a: int, sizes: list[int], fates_data: list[list[int]],
         fates_ctrl: list[list[int]], mtu: int = 256, window: int = 64,
         rate_bps: int | None = None, **qp_kw):
    clk, a, b, qa, qb, _ = pair(
        recovery=mode, rate_bps=rate_bps, delay_ns=2000, start_a=start_a, start_b=0xFFFFF0,
        fate_a=_fate_fn(fates_data, True), fate_b=_fate_fn(fates_ctrl, False),
        qp_kw={"mtu": mtu, "max_outstanding_pkts": window, "reorder_window_pkts": window,
               "ack_every_pkts": 4, "sr_dupthresh": 3, "rto_ns": 200_000, **qp_kw})
    got = []
    qb.responder.on_message = got.append
    rnd = random.Random(len(sizes) * 1000 + start_a)
    msgs = [rnd.randbytes(n) for n in sizes]
    wrs = [qa.post_send(m, WRITE if i % 3 == 2 else SEND, imm=i, va=0x1000 * i, rkey=9)
           for i, m in enumerate(msgs)]
    clk.run_until_idle(max_ns=60_000_000_000)
    assert all(wr.completed_ns is not None for wr in wrs)
    assert [m.data for m in got] == msgs  # exactly once, in order, byte-identical
    assert [m.imm for m in got] == list(range(len(msgs)))
    assert [hashlib.sha256(m.data or b"").digest() for m in got] == \
        [hashlib.sha256(m).digest() for m in msgs]
    assert qa.requester.idle() and clk.pending() == 0
    rs = qb.responder.stats
    assert rs.msgs_delivered == len(msgs) and rs.payload_bytes_delivered == sum(sizes)
    assert qa.requester.stats.msgs_completed == len(msgs)
    # every PSN that arrived after a higher one is either late or a filled hole, once
    assert rs.late_pkts + rs.lost_gaps <= qa.requester.s.snd_max
    return qa, qb


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mode=st.sampled_from(["gbn", "sr"]),
       start=st.integers(min_value=(1 << 24) - 40, max_value=(1 << 24) - 1),
       sizes=st.lists(st.integers(min_value=0, max_value=20000), min_size=1, max_size=4),
       fates_data=st.lists(FATE, max_size=160),
       fates_ctrl=st.lists(st.sampled_from([[], [0], [0], [0, 300], [5000]]), max_size=30))
def test_any_loss_dup_reorder_pattern_delivers_exactly_once(mode, start, sizes, fates_data,
                                                            fates_ctrl):
    _run(mode, start, sizes, fates_data, fates_ctrl)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mode=st.sampled_from(["gbn", "sr"]),
       start=st.integers(min_value=(1 << 24) - 40, max_value=(1 << 24) - 1),
       sizes=st.lists(st.integers(min_value=1, max_value=20000), min_size=1, max_size=3),
       drops=st.lists(st.booleans(), max_size=120))
def test_losses_alone_are_never_counted_as_reordering(mode, start, sizes, drops):
    """Drop-only patterns (no delay, no duplicate): nothing is late, whatever the mode."""
    _qa, qb = _run(mode, start, sizes, [[] if d else [0] for d in drops], [])
    rs = qb.responder.stats
    assert rs.late_pkts == 0
    assert sum(n for k, n in rs.reorder_distance.as_dict().items() if k != "0") == 0
    assert (rs.lost_gaps > 0) <= any(drops)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=st.integers(min_value=(1 << 24) - 40, max_value=(1 << 24) - 1),
       sizes=st.lists(st.integers(min_value=1, max_value=20000), min_size=1, max_size=3),
       delays=st.lists(st.integers(min_value=0, max_value=30), max_size=120))
def test_reordering_alone_is_late_never_lost(start, sizes, delays):
    """Delay-only patterns with selective repeat that never resends: no lost gaps."""
    qa, qb = _run("sr", start, sizes, [[k * 1000] if k else [0] for k in delays], [],
                  sr_dupthresh=1000, rto_ns=10**9)
    rs = qb.responder.stats
    assert qa.requester.stats.retx_pkts == 0 and rs.lost_gaps == 0
    assert sum(n for k, n in rs.reorder_distance.as_dict().items() if k != "0") == rs.late_pkts


@settings(max_examples=60, deadline=None)
@given(mode=st.sampled_from(["gbn", "sr"]), seed=st.integers(0, 10**6))
def test_permuted_window_across_psn_wrap(mode, seed):
    """Every data frame delayed by a random amount (a permutation), across the PSN wrap."""
    rnd = random.Random(seed)
    fates = [[rnd.randrange(1, 30) * 1000] for _ in range(120)]
    _run(mode, (1 << 24) - 30, [20_000, 3], fates, [])


def test_gbn_spurious_retransmissions_sr_none_under_reordering():
    """Spraying-like reordering without loss: go-back-N retransmits, selective repeat not."""
    out = {}
    for mode in ("gbn", "sr"):
        rnd = random.Random(1)
        # at 10 Gb/s a 1 KB frame takes ~0.9 us: delays of 1-2 us reorder by 1-2 packets
        fates = [[0] if i % 4 else [rnd.choice([1000, 2000])] for i in range(400)]
        qa, qb = _run(mode, 100, [100_000], fates, [], mtu=1024, window=64,
                      rate_bps=10_000_000_000)
        out[mode] = (qa.requester.stats, qb.responder.stats)
    gbn_req, gbn_rsp = out["gbn"]
    sr_req, sr_rsp = out["sr"]
    assert gbn_req.retx_pkts > 0 and gbn_rsp.out_of_sequence > 0 and gbn_rsp.naks_sent > 0
    assert sr_req.retx_pkts == 0 and sr_req.timeouts == 0
    assert sr_rsp.reorder_hwm >= 1 and sr_rsp.duplicates == 0
    hist = sr_rsp.reorder_distance.as_dict()
    assert hist["0"] > 0 and sum(v for k, v in hist.items() if k != "0") > 0


def test_sr_retransmits_only_lost_packets():
    lost = {5, 17, 18, 40}
    fates = [[] if i in lost else [0] for i in range(200)]
    qa, qb = _run("sr", 0, [150 * 256], fates, [], mtu=256, window=64)
    assert qa.requester.stats.retx_pkts == len(lost)
    assert qb.responder.stats.duplicates == 0


def test_gbn_loss_recovers_via_nak():
    fates = [[] if i == 10 else [0] for i in range(200)]
    qa, qb = _run("gbn", 0, [150 * 256], fates, [], mtu=256, window=64)
    assert qa.requester.stats.naks_rcvd >= 1 and qa.requester.stats.timeouts == 0
    assert qa.requester.stats.retx_pkts >= 1


def test_lost_final_ack_recovered_by_timeout_and_reack():
    """The last ACK is lost: the requester times out, resends, and the duplicate is re-ACKed."""
    fates_ctrl = [[]] * 3  # drop the first three ACKs
    qa, qb = _run("gbn", 0, [256], [], fates_ctrl, mtu=256)
    assert qa.requester.stats.timeouts >= 1
    assert qb.responder.stats.duplicates >= 1


# -- issue #13 -----------------------------------------------------------------------------

def _drop_once(lost: set[int], start: int, seen: dict[int, int]):
    """Drops the first copy of each data packet whose sequence number is in `lost`."""
    def fate(frame: bytes) -> list[int]:
        if not is_data(frame):
            return [0]
        seq = (psn_of(frame) - start) & 0xFFFFFF
        n = seen.get(seq, 0)
        seen[seq] = n + 1
        return [] if seq in lost and n == 0 else [0]
    return fate


def _ten_packets_sr_drop_2_and_5(start: int, **qp_kw):
    seen: dict[int, int] = {}
    clk, _a, _b, qa, qb, _ = pair(recovery="sr", start_a=start, start_b=start,
                                  fate_a=_drop_once({2, 5}, start, seen),
                                  qp_kw={"mtu": 1024, "rto_ns": 1_000_000, **qp_kw})
    got = []
    qb.responder.on_message = got.append
    data = bytes(range(256)) * 40  # 10 packets
    wr = qa.post_send(data)
    clk.run_until_idle(max_ns=10**10)
    assert [m.data for m in got] == [data]
    return wr, qa.requester.stats, seen


@pytest.mark.parametrize("start", [0, (1 << 24) - 4])
def test_sr_sack_in_a_nak_that_advances_una_keeps_its_holes(start):
    """Issue #13.1: one NAK both advancing una and carrying the bitmap applied the bitmap
    at the wrong offset, marking hole 5 received: it was resent only after a second,
    backed-off timeout (3.0 ms instead of the first RTO, 1.0 ms)."""
    wr, st, seen = _ten_packets_sr_drop_2_and_5(start)  # sr_dupthresh 8 > the SACKs above 2
    assert st.timeouts == 1 and st.retx_pkts == 2  # both holes resent at the first RTO
    assert seen[2] == seen[5] == 2
    assert wr.completed_ns is not None and wr.completed_ns < 1_100_000


@pytest.mark.parametrize("start", [0, (1 << 24) - 4])
def test_sr_resends_both_holes_without_a_timeout(start):
    """With dupthresh 3 the SACKs alone expose both holes: no RTO at all."""
    wr, st, seen = _ten_packets_sr_drop_2_and_5(start, sr_dupthresh=3)
    assert st.timeouts == 0 and st.retx_pkts == 2 and st.sacks_rcvd >= 1
    assert seen[2] == seen[5] == 2
    assert wr.completed_ns is not None and wr.completed_ns < 100_000  # a few RTTs, not an RTO


def _late_lost(mode: str, fate, npkts: int = 200, **qp_kw):
    clk, _a, _b, qa, qb, _ = pair(recovery=mode, fate_a=fate,
                                  qp_kw={"mtu": 1024, "max_outstanding_pkts": 64,
                                         "reorder_window_pkts": 64, **qp_kw})
    got = []
    qb.responder.on_message = got.append
    data = random.Random(3).randbytes(npkts * 1024)
    qa.post_send(data)
    clk.run_until_idle(max_ns=10**10)
    assert [m.data for m in got] == [data]
    return qa.requester.stats, qb.responder.stats


@pytest.mark.parametrize("mode", ["gbn", "sr"])
def test_losses_are_lost_gaps_not_reordering(mode):
    """Issue #13.9: gaps left by losses were counted as reordered packets."""
    lost = {5, 17, 40, 41, 90}
    seen: dict[int, int] = {}
    rq, rs = _late_lost(mode, _drop_once(lost, 0, seen))
    assert rs.late_pkts == 0
    assert sum(n for k, n in rs.reorder_distance.as_dict().items() if k != "0") == 0
    assert rs.lost_gaps == len(lost)  # go-back-N's dropped out-of-sequence packets are not
    if mode == "sr":
        assert rq.retx_pkts == len(lost)
    else:
        assert rs.out_of_sequence > 0 and rq.retx_pkts > len(lost)


@pytest.mark.parametrize("mode", ["gbn", "sr"])
def test_reordered_packets_are_late_not_lost(mode):
    """Every 10th packet delayed by ~3 packet times: late, never a lost gap."""
    delayed = {i for i in range(3, 190, 10)}
    count = iter(range(10**6))

    def fate(frame: bytes) -> list[int]:
        if not is_data(frame):
            return [0]
        return [3000] if next(count) in delayed else [0]
    rq, rs = _late_lost(mode, fate)
    assert rs.lost_gaps == 0
    if mode == "sr":
        assert rq.retx_pkts == 0 and rs.late_pkts == len(delayed)
        hist = rs.reorder_distance.as_dict()
        assert sum(n for k, n in hist.items() if k != "0") == len(delayed)
        assert set(hist) == {"0", "2-3"}  # overtaken by 3 packets each
    else:  # the first delayed frame is late; go-back-N's resends reorder the rest anew
        assert rs.late_pkts >= 1


def test_loss_and_reordering_are_told_apart():
    lost = {20, 60}
    delayed = {40, 100}
    seen: dict[int, int] = {}
    drop = _drop_once(lost, 0, seen)

    def fate(frame: bytes) -> list[int]:
        if is_data(frame) and psn_of(frame) in delayed and seen.get(psn_of(frame)) is None:
            seen[psn_of(frame)] = 1
            return [3000]
        return drop(frame)
    _rq, rs = _late_lost("sr", fate)
    assert (rs.late_pkts, rs.lost_gaps) == (len(delayed), len(lost))


@pytest.mark.parametrize("mode", ["gbn", "sr"])
@pytest.mark.parametrize("window", [1, 2, 5, 15, 16, 17])
def test_a_sender_stopped_by_its_window_asks_for_an_ack(mode, window):
    """A window smaller than the responder's ACK coalescing (an ACK per 16 packets,
    or at a message's end) left the sender waiting for an ACK that never came: every
    window of every message ended in a retransmission timeout (`emu run --window 1`:
    one timeout and one duplicate per packet, 455 s for 256 KB). The packet that fills
    the window now sets AckReq, so a lossless link sees no timeout and no resend."""
    delay_ns, mtu, rate = 2000, 1024, 10_000_000_000
    clk, _a, _b, qa, qb, _ = pair(
        recovery=mode, rate_bps=rate, delay_ns=delay_ns,
        qp_kw={"mtu": mtu, "max_outstanding_pkts": window, "reorder_window_pkts": window,
               "ack_every_pkts": 16, "rto_ns": 1_000_000})
    got = []
    qb.responder.on_message = got.append
    msg = random.Random(window).randbytes(64 * mtu)
    wr = qa.post_send(msg, SEND)
    clk.run_until_idle(max_ns=10_000_000_000)
    assert [m.data for m in got] == [msg]
    rq = qa.requester.stats
    assert (rq.timeouts, rq.retx_pkts, qb.responder.stats.duplicates) == (0, 0, 0)
    # one round trip per window at most (frames of 1024 B + headers take ~0.85 us)
    rounds = -(-64 // window)
    assert wr.completed_ns is not None
    assert wr.completed_ns - wr.posted_ns < rounds * (2 * delay_ns + 2_000) + 64 * 1_000
