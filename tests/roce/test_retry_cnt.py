"""The transport retry count (IBTA retry_cnt): a QP that times out more than retry_cnt
times in a row without progress goes to the error state, as a RoCE NIC's QP does; its
messages fail (the oldest) or are flushed (the rest), and it sends and takes in nothing
more. Progress (an ACK moving the oldest unacknowledged PSN) gives the retries back."""

from __future__ import annotations

import pytest

from emu.roce.config import ConfigError, load_dict
from emu.roce.qp import WorkRequest

from .helpers import is_data, pair

RTO = 100_000


def _lossy(pass_from_timeout: dict[int, int] | None = None):
    """A fate that drops every data frame A sends, except from the first frame after
    timeout k on for `pass_from_timeout[k]` frames."""
    holder: list = []
    budget: dict[str, int] = {"n": 0, "seen": 0}
    plan = pass_from_timeout or {}

    def fate(frame: bytes) -> list[int]:
        if not is_data(frame):
            return [0]
        n = holder[0].requester.stats.timeouts
        if n > budget["seen"]:
            budget["seen"] = n
            budget["n"] = plan.get(n, 0)
        if budget["n"] > 0:
            budget["n"] -= 1
            return [0]
        return []

    return holder, fate


def _setup(retry_cnt: int | None, plan: dict[int, int] | None = None):
    holder, fate = _lossy(plan)
    clk, a, _b, qa, qb, _link = pair(fate_a=fate, qp_kw={"rto_ns": RTO, "retry_cnt": retry_cnt})
    holder.append(qa)
    done: list[tuple[int, str | None]] = []

    def on_complete(wr: WorkRequest) -> None:
        done.append((wr.wr_id, wr.status))

    return clk, a, qa, qb, done, on_complete


def test_a_dead_path_fails_the_qp_after_retry_cnt_retries() -> None:
    """retry_cnt 7: seven retransmissions after timeouts, the eighth timeout fails the
    QP. The message in flight ends retry_exc_err, the next one wr_flush_err, both
    reported through their completion callback; the QP then sends nothing."""
    clk, a, qa, qb, done, cb = _setup(7)
    qa.post_send(bytes(4096), on_complete=cb)
    qa.post_send(bytes(1024), on_complete=cb)
    clk.advance_to(200_000_000)
    r = qa.requester
    assert r.stats.timeouts == 8
    assert r.stats.transport_retries_exceeded == 1
    assert r.error_ns is not None
    assert done == [(1, "retry_exc_err"), (2, "wr_flush_err")]
    assert r.stats.msgs_failed == 2 and r.stats.msgs_completed == 0
    sent = r.stats.data_pkts_sent
    clk.advance_to(2_000_000_000)
    assert r.stats.data_pkts_sent == sent  # nothing after the error
    assert r.stats.timeouts == 8
    assert qb.responder.stats.msgs_delivered == 0


def test_progress_gives_the_retries_back() -> None:
    """Two packets get through after timeouts 5 and 10 (each an ACK that moves the
    oldest PSN): 14 timeouts in all, never 8 in a row, and the message completes."""
    clk, _a, qa, _qb, done, cb = _setup(7, {5: 1, 10: 1, 14: 100})
    qa.post_send(bytes(1024 * 4), on_complete=cb)
    clk.advance_to(2_000_000_000)
    r = qa.requester
    assert done == [(1, "success")]
    assert r.stats.timeouts == 14
    assert r.error_ns is None and r.stats.transport_retries_exceeded == 0


@pytest.mark.parametrize("retry_cnt", [0, 3])
def test_retry_cnt_sets_how_many_timeouts_are_retried(retry_cnt: int) -> None:
    clk, _a, qa, _qb, done, cb = _setup(retry_cnt)
    qa.post_send(bytes(1024), on_complete=cb)
    clk.advance_to(2_000_000_000)
    assert qa.requester.stats.timeouts == retry_cnt + 1
    assert done == [(1, "retry_exc_err")]


def test_none_retries_until_the_end() -> None:
    clk, _a, qa, _qb, done, cb = _setup(None)
    qa.post_send(bytes(1024), on_complete=cb)
    clk.advance_to(200_000_000)
    assert qa.requester.stats.timeouts > 8
    assert done == [] and qa.requester.error_ns is None


def test_a_message_posted_to_a_failed_qp_is_flushed() -> None:
    clk, _a, qa, _qb, done, cb = _setup(0)
    qa.post_send(bytes(1024), on_complete=cb)
    clk.advance_to(10_000_000)
    sent = qa.requester.stats.data_pkts_sent
    wr = qa.post_send(bytes(1024), on_complete=cb)
    assert wr.status == "wr_flush_err"
    clk.advance_to(20_000_000)
    assert done == [(1, "retry_exc_err"), (2, "wr_flush_err")]
    assert qa.requester.stats.data_pkts_sent == sent


def test_a_failed_qp_takes_nothing_in() -> None:
    """B's messages to A's failed QP are dropped at A's NIC (qp_error), so B's QP in
    turn runs out of retries."""
    clk, a, qa, qb, done, cb = _setup(0)
    qa.post_send(bytes(1024), on_complete=cb)
    clk.advance_to(10_000_000)
    assert qa.requester.error_ns is not None
    qb.requester.retries_left = qb.requester.retry_cnt = 1
    qb.post_send(bytes(1024))
    clk.advance_to(2_000_000_000)
    assert a.drops["qp_error"] >= 2
    assert qa.responder.stats.msgs_delivered == 0
    assert qb.requester.stats.transport_retries_exceeded == 1


def _qp(**kw: object) -> dict[str, object]:
    return {"qpn": 17, "peer_ip": "10.0.2.1", "peer_mac": "02:00:00:00:02:01",
            "peer_qpn": 33, **kw}


@pytest.mark.parametrize("value", [8, -1])
def test_config_takes_ibta_retry_counts_only(value: int) -> None:
    with pytest.raises(ConfigError, match=r"qps\[0\]\.retry_cnt: must be 0\.\.7"):
        load_dict({"host": {"name": "h1", "ip": "10.0.1.1", "mac": "02:00:00:00:01:01"},
                   "qps": [_qp(retry_cnt=value)]})


def test_config_default_is_seven_and_null_is_unlimited() -> None:
    host = {"name": "h1", "ip": "10.0.1.1", "mac": "02:00:00:00:01:01"}
    cfg = load_dict({"host": host, "qps": [_qp()]})
    assert cfg.qp_params(cfg.qps[0]).retry_cnt == 7
    cfg = load_dict({"host": host, "qps": [_qp(retry_cnt=None)]})
    assert cfg.qp_params(cfg.qps[0]).retry_cnt is None


def test_agents_fail_the_flows_and_what_waits_on_them() -> None:
    """h1's flow a never gets through (its data is dropped): it fails retry_exc_err; h2's
    flow b waits on a, and h1's c on b. The agents end once told what will never come
    (the run's share_failures does it for a whole workload)."""
    from emu.core.clock import VirtualClock
    from emu.core.port import MemLink
    from emu.roce.agent import Agent

    from .helpers import ShimPort
    from .test_agent import two_hosts

    clk = VirtualClock()
    link = MemLink(clk, rate_bps=10_000_000_000, delay_ns=5000, overhead_bytes=24)
    h1, h2 = two_hosts()
    h1["qps"][0]["rto_ns"] = RTO
    dead = ShimPort(link.a, clk, lambda f: [] if is_data(f) else [0])
    a1 = Agent(load_dict(h1), clk, dead)
    a2 = Agent(load_dict(h2), clk, link.b)
    a1.start()
    a2.start()
    clk.advance_to(2_000_000_000)
    assert a1.failed_flows() == ["a"] and not a1.done()
    assert a1.progress()["failed"] == ["a"] and a2.progress()["failed"] == []
    a2.mark_lost({"a"})  # b, waiting on a, can never start
    assert a2.failed_flows() == ["b"] and not a2.done()
    a1.mark_lost({"b"})
    a2.mark_lost({"c"})
    assert a1.done() and a2.done() and not a1.ok() and not a2.ok()
    rows = {(r["flow"], r["role"]): r for a in (a1, a2) for r in a.results()
            if r["type"] == "flow"}
    assert rows["a", "sender"]["status"] == "retry_exc_err"
    assert rows["a", "sender"]["timeouts"] == 8  # the QP's eighth, which failed it
    assert rows["b", "sender"]["status"] == "dependency_failed"
    assert rows["c", "sender"]["status"] == "dependency_failed"
    assert rows["a", "receiver"]["lost"] and not rows["a", "receiver"]["completed"]
