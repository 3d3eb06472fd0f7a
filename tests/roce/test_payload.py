"""Payloads generated on demand (emu.roce.payload): byte-identical, exactly-once delivery
of large messages without holding them, and a corrupted delivery caught by the digests."""

from __future__ import annotations

import hashlib

import pytest

from emu.core.clock import VirtualClock
from emu.core.port import MemLink
from emu.roce import config, icrc
from emu.roce.agent import Agent, flow_payload, lazy_flow_payload
from emu.roce.payload import BLOCK, LazyPayload
from tests.roce.helpers import ShimPort, is_data, pair, psn_of
from tests.roce.test_agent import host_cfg


def test_slices_match_the_materialised_bytes_across_blocks():
    p = LazyPayload(b"k", 3 * BLOCK + 77)
    whole = p.tobytes()
    assert len(whole) == len(p) == 3 * BLOCK + 77
    for off, n in [(0, 10), (BLOCK - 5, 10), (BLOCK, BLOCK), (100, 2 * BLOCK + 3),
                   (3 * BLOCK + 70, 100), (len(p), 5)]:
        assert p[off:off + n] == whole[off:off + n]
    assert p.sha256() == hashlib.sha256(whole).hexdigest()
    assert LazyPayload(b"other", len(p)).tobytes() != whole  # the key picks the content
    assert flow_payload("f", 5000) == lazy_flow_payload("f", 5000).tobytes()


@pytest.mark.parametrize("reads", [
    [],                                              # never read: all made by sha256()
    [(0, 10 ** 9)],                                  # everything, forwards
    [(0, 1000), (5000, 1000)],                       # block 0, then 1 (within one read)
    [(0, 5000), (100, 10), (2 * BLOCK, 50)],         # a re-read back, then on
    [(3 * BLOCK, 9), (0, 3)],                        # a jump ahead first: hashed later
    [(2 * BLOCK, BLOCK), (0, 3 * BLOCK + 77)],       # ahead, then everything
    [(BLOCK, 3 * BLOCK), (3 * BLOCK + 70, 7)],       # block 0 never read
])
def test_sha256_is_that_of_the_bytes_whatever_was_read_before(reads):
    """The running hash folds in blocks as they are first made in order; whatever the
    reads before (forwards, backwards, ahead, none), the digest is the bytes' one, and
    asking twice gives it twice."""
    whole = LazyPayload(b"k", 3 * BLOCK + 77).tobytes()
    p = LazyPayload(b"k", 3 * BLOCK + 77)
    for off, n in reads:
        assert p[off:off + n] == whole[off:off + n]
    want = hashlib.sha256(whole).hexdigest()
    assert p.sha256() == want and p.sha256() == want
    assert p[0:5] == whole[0:5] and p.sha256() == want  # reads after it change nothing
    assert LazyPayload(b"k", 0).sha256() == hashlib.sha256(b"").hexdigest()
    assert LazyPayload(b"k", 2 * BLOCK).sha256() == \
        hashlib.sha256(LazyPayload(b"k", 2 * BLOCK).tobytes()).hexdigest()


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError, match="too large"):
        LazyPayload(b"k", 1 << 31)
    with pytest.raises(ValueError, match=">= 0"):
        LazyPayload(b"k", -1)


@pytest.mark.parametrize("recovery", ["gbn", "sr"])
def test_large_lazy_message_arrives_byte_identical_despite_losses(recovery):
    """6 MB (not a whole number of MTUs or blocks) over a link dropping every 97th data
    packet once: retransmissions regenerate the same bytes; one delivery, identical."""
    size = 6 * 1024 * 1024 + 123
    dropped: set[int] = set()

    def fate(frame: bytes) -> list[int]:
        if is_data(frame):
            psn = psn_of(frame)
            if psn % 97 == 5 and psn not in dropped:
                dropped.add(psn)
                return []
        return [0]

    clk, _a, _b, qa, qb, _link = pair(recovery=recovery, fate_a=fate)
    got = []
    qb.responder.on_message = got.append
    payload = LazyPayload(b"big", size)
    qa.post_send(payload)
    clk.run_until_idle()
    assert dropped and qa.requester.stats.retx_pkts > 0
    assert len(got) == 1 and got[0].length == size
    assert got[0].data == payload.tobytes()


class CorruptingPort(ShimPort):
    """Flips one payload byte of one data packet and rewrites its ICRC to match."""

    corrupted = 0

    def send(self, frame: bytes) -> bool:
        if is_data(frame) and psn_of(frame) % 1000 == 700 and not self.corrupted:
            self.corrupted += 1
            b = bytearray(frame)
            b[-10] ^= 0x01  # a payload byte, before the 4-byte ICRC
            b[-4:] = icrc.to_bytes(icrc.compute(bytes(b)))
            frame = bytes(b)
        return self.inner.send(frame)


def _agents(corrupt: bool) -> tuple[Agent, Agent]:
    """h1 sends 3 MB to h2; with `corrupt`, one data packet's payload byte is flipped on
    the wire and its ICRC recomputed, so only the end-to-end digest can tell."""
    h1 = host_cfg("h1", "10.1.0.1", "02:00:00:00:01:01", "10.1.0.2", "02:00:00:00:01:02", 5, 6,
                  [{"id": "big", "qpn": 5, "size_bytes": 3 * 1024 * 1024}], [])
    h2 = host_cfg("h2", "10.1.0.2", "02:00:00:00:01:02", "10.1.0.1", "02:00:00:00:01:01", 6, 5,
                  [], ["big"])
    clk = VirtualClock()
    link = MemLink(clk, rate_bps=10_000_000_000, delay_ns=5000, overhead_bytes=24)
    shim = CorruptingPort(link.a, clk) if corrupt else ShimPort(link.a, clk)
    a1 = Agent(config.load_dict(h1), clk, shim)
    a2 = Agent(config.load_dict(h2), clk, link.b)
    a1.start()
    a2.start()
    clk.run_until_idle()
    assert not corrupt or shim.corrupted == 1  # type: ignore[union-attr]
    return a1, a2


@pytest.mark.parametrize("corrupt", [False, True])
def test_receiver_digest_matches_the_sender_unless_corrupted(corrupt):
    a1, a2 = _agents(corrupt)
    tx = next(r for r in a1.results() if r.get("flow") == "big")
    rx = next(r for r in a2.results() if r.get("flow") == "big")
    assert tx["completed"] and rx["completed"] and rx["deliveries"] == 1
    assert tx["sha256"] == lazy_flow_payload("big", 3 * 1024 * 1024).sha256()
    assert (rx["sha256"] == tx["sha256"]) is not corrupt
