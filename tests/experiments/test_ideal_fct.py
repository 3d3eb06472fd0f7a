"""A lone flow's FCT slowdown is 1: the ideal counts the frames the emulator carries
(emu.roce.wire's header sizes, the RETH and ImmDt of a WRITE with immediate, payload
padding, emu.core.wire.WIRE_OVERHEAD_BYTES per frame)."""

from __future__ import annotations

import pytest

from emu.experiments.agent_configs import ACK_FRAME_BYTES, FRAME_OVERHEAD_BYTES
from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.experiments.virtual import run_virtual
from emu.experiments.workloads import WorkloadParams


def test_frame_sizes_are_the_wire_ones() -> None:
    """78 and 84 (20 B of preamble and gap, no FCS) were stale: a data frame is 58 B of
    Ethernet, IPv4, UDP, BTH and ICRC around its payload plus 24 on the wire, an ACK
    62 + 24."""
    assert (FRAME_OVERHEAD_BYTES, ACK_FRAME_BYTES) == (82, 86)


@pytest.mark.parametrize(("size", "mtu"), [(64 * 1024, 1024), (1, 1024), (1001, 1024),
                                           (5000, 1024), (3000, 256)])
def test_a_lone_flow_scores_1(size: int, mtu: int) -> None:
    """A lone 64 KB flow on clos4 took 13961.12 ns against an ideal of 13933.60 (slowdown
    1.0020): 78 B per frame and no RETH or ImmDt."""
    # One flow, h1 -> h3: with a flow each way (a 2-host permutation) the receiver's ACK
    # of the first packet (sent at once) waits on its link behind that host's own data,
    # or delays it by one ACK frame.
    wl = WorkloadParams("incast", message_bytes=size, hosts=("h1", "h3"))
    cfg = RunConfig(topo="clos4", cc="none", virtual=True, progress=False, start_delay_s=0.0,
                    workload=wl, mtu_bytes=mtu)
    s = run_virtual(plan_run(cfg), write=False)
    assert len(s.flows) == 1
    for f in s.flows:
        assert f.slowdown == pytest.approx(1.0, abs=1e-6)
    if size == 64 * 1024:
        assert s.flows[0].ideal_fct_s == pytest.approx(13961.12e-9, abs=1e-14)


@pytest.mark.parametrize("lb", ["ecmp", "spray"])
def test_a_sprayed_flow_can_beat_its_one_path_ideal_and_the_run_says_so(lb: str) -> None:
    """The ideal is the fastest single path for every mode (slowdowns compare across
    modes). leafspine2's uplinks run at 50 Gbit/s under 100 Gbit/s hosts: one ECMP path
    gives a lone flow 50, spraying it over leaf1's three uplinks (two to spine1) about 75.
    Its slowdown fell below 1 with no word of why (0.84 for 40 KB background flows).
    (64 KB: the ECMP flow's uplink queue, filling at half the rate it is fed, holds it.)"""
    wl = WorkloadParams("incast", message_bytes=64 * 1024, hosts=("h1", "h3"))
    cfg = RunConfig(topo="leafspine2", lb=lb, recovery="sr", cc="none", virtual=True,
                    progress=False, start_delay_s=0.0, workload=wl)
    s = run_virtual(plan_run(cfg), write=False)
    (f,) = s.flows
    assert f.slowdown is not None
    notes = [n for n in s.notes if "beat their ideal" in n]
    if lb == "ecmp":
        assert f.slowdown == pytest.approx(1.0, abs=1e-6) and not notes
    else:
        assert f.slowdown < 0.9
        assert notes == [f"1 flow(s) beat their ideal (slowdown down to {f.slowdown:.3g}): "
                         "the ideal carries a flow on the fastest single path, and these were "
                         "spread over several at once (uplinks slower than the hosts' links, "
                         "or a short last packet overtaking on another path)"]
