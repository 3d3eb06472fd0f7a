"""The lossless-fabric scenarios of #14 in virtual time, with their figures asserted
(emu.experiments.pfc_scenarios; `python -m emu.experiments.pfc_scenarios NAME` runs
them for users, README "Lossless fabric (PFC)" shows their plots)."""

from __future__ import annotations

import logging

import pytest

from emu.experiments import pfc_scenarios as S

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(autouse=True)
def _quiet_storm_warnings() -> None:
    logging.getLogger("emu.pfc").setLevel(logging.ERROR)


def test_victim_flow_is_slowed_by_pauses_and_dcqcn_restores_it() -> None:
    r = S.victim_flow()
    assert r.alone_bps > 8e9  # its fair share: the line rate, the uplinks have room
    assert r.pfc_share < 0.5  # congestion spreading: pauses stop it with the incast
    assert r.dcqcn_share >= 0.8
    assert r.pauses_pfc > 10 * r.pauses_dcqcn > 0
    assert r.drops == 0  # lossless throughout


def test_dcqcn_cuts_pause_frames_tenfold() -> None:
    r = S.dcqcn_pauses()
    assert r.pauses_off > 100
    assert r.reduction >= 10
    assert r.drops == 0 and r.retransmits == 0


def test_pause_storm_spreads_and_the_watchdog_detects_and_restores() -> None:
    r = S.pause_storm()
    # the storm spreads beyond the leaf: the spine, the other leaf's uplink, its hosts
    assert {"spine1:1", "leaf2:5", "h8:0"} <= set(r.paused_upstream)
    assert r.stalled_bps == 0  # the probe h8 -> h4 never goes to h3, yet stops
    # detected within its detection time of the storm's first PAUSE (plus the link)
    assert r.detected_ns is not None
    assert r.detection_ns <= r.detected_ns - r.storm_start_ns <= r.detection_ns + 10_000
    assert r.after_bps > 0.5 * r.alone_bps  # what is queued for h3 is dropped: it goes on
    assert r.watchdog_drops > 0
    # restored once no PAUSE came for the restoration time (the last at end - 1 ms)
    assert r.restored_ns is not None and r.restored_ns > r.storm_end_ns
    assert r.restored_ns - (r.storm_end_ns - 1_000_000) <= r.restoration_ns + 10_000


def test_ring_deadlocks_under_pfc_and_watchdog_or_acyclic_routes_break_it() -> None:
    r = S.deadlock()
    assert r.deadlocked_at_ns is not None and r.progress_pkts == 0
    # every buffer on the cycle (the clockwise ring ingresses) is at XOFF or above
    cycle = sorted(r.ring_buffer_bytes, reverse=True)[:5]
    assert all(b >= r.xoff_bytes for b in cycle)
    pfc = dict(r.series["PFC"])
    assert max(pfc.values()) == min(v for t, v in pfc.items() if t >= r.deadlocked_at_ns / 1e6)
    assert r.delivered_deadlocked < r.total_msgs
    assert r.watchdog_storms > 0 and r.delivered_with_watchdog > r.delivered_deadlocked
    assert r.delivered_acyclic == r.total_msgs and not r.acyclic_stalled
