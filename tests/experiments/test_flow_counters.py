"""Per-flow retransmissions, timeouts and CNPs are the flow's own: flows that overlap on
one QP (background flows to the same peer, posted while an earlier one is in flight)
each count what happened to their own packets, so the flows' counters add up to the
hosts'."""

from __future__ import annotations

import itertools

from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.experiments.virtual import run_virtual
from emu.experiments.workloads import WorkloadParams


def test_overlapping_flows_on_one_qp_are_not_double_counted() -> None:
    """Each flow took its QP's counter change between its post and its completion, so
    CNPs and resends during overlapping flows counted once per flow: per-flow CNPs
    summed to 446 against 430 the hosts received (in a mix run, whose dp and tp flows
    then shared a QP)."""
    cfg = RunConfig(topo="clos4", cc="dcqcn", virtual=True, progress=False, start_delay_s=0.0,
                    workload=WorkloadParams("background", background_load=0.8,
                                            size_dist="hadoop", background_us=200.0))
    s = run_virtual(plan_run(cfg), write=False)
    assert s.ok
    spans: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for f in s.flows:
        assert f.start_s is not None and f.fct_s is not None
        spans.setdefault((f.src, f.dst), []).append((f.start_s, f.start_s + f.fct_s))
    overlapping = sum(b[0] < a[1] for v in spans.values()
                      for a, b in itertools.pairwise(sorted(v)))
    assert overlapping > 0  # the case this is about
    assert s.hosts.cnps_rcvd > 100 and s.hosts.retx_pkts > 0
    assert sum(f.cnps_rcvd for f in s.flows) == s.hosts.cnps_rcvd
    assert sum(f.retx_pkts for f in s.flows) == s.hosts.retx_pkts
    assert sum(f.timeouts for f in s.flows) == s.hosts.timeouts
