"""Exactly-once, in-order delivery under loss, duplication and reordering (both modes)."""

from __future__ import annotations

import hashlib
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from emu.roce.qp import SEND, WRITE
from tests.roce.helpers import is_data, pair

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
         rate_bps: int | None = None):
    clk, a, b, qa, qb, _ = pair(
        recovery=mode, rate_bps=rate_bps, delay_ns=2000, start_a=start_a, start_b=0xFFFFF0,
        fate_a=_fate_fn(fates_data, True), fate_b=_fate_fn(fates_ctrl, False),
        qp_kw={"mtu": mtu, "max_outstanding_pkts": window, "reorder_window_pkts": window,
               "ack_every_pkts": 4, "sr_dupthresh": 3, "rto_ns": 200_000})
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
