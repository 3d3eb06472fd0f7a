"""Spraying over unequal paths, go-back-N against selective repeat
(experiments/spray-recovery.yaml; criterion and topology of
tests/validation/test_loss_recovery.py).

Claim: go-back-N takes reordering for loss and resends (spuriously: nothing is dropped);
selective repeat resends nothing while the reorder depth stays below its duplicate
threshold. The reorder-distance distribution is reported.
"""

from __future__ import annotations

from typing import Any

import pytest

from emu.control import LbMode
from emu.experiments.config import RunConfig
from emu.experiments.workloads import WorkloadParams
from emu.roce.config import QpConfig

from .common import run, suite

pytestmark = pytest.mark.timeout(600)


def spray(recovery: str) -> Any:
    b = suite("spray-recovery")["base"]
    assert (b["size"], b["lb"], b["cc"]) == ("4M", "spray", "none")
    wl = WorkloadParams("incast", message_bytes=4 * 1024 * 1024,
                        incast_senders=b["incast_senders"], incast_target=b["incast_target"])
    _plan, s = run(RunConfig(topo=b["topology"], lb=LbMode.SPRAY, cc="none",
                             recovery=recovery, dilation=b["dilation"], workload=wl))  # type: ignore[arg-type]
    return s


def deepest(hist: dict[str, int]) -> int:
    """Upper bound of the deepest non-empty bucket ("lo-hi" or "n")."""
    return max((int(k.split("-")[-1]) for k, n in hist.items() if n), default=0)


def test_go_back_n_resends_spuriously_selective_repeat_does_not() -> None:
    gbn, sr = spray("gbn"), spray("sr")
    dupthresh = QpConfig.sr_dupthresh
    print(f"reorder distance sr {sr.hosts.reorder_distance} (deepest <= "
          f"{deepest(sr.hosts.reorder_distance)}, dupthresh {dupthresh}), late "
          f"{sr.hosts.late_pkts}; retx gbn {gbn.hosts.retx_pkts}, sr {sr.hosts.retx_pkts}")
    assert gbn.ok and sr.ok
    for s in (gbn, sr):  # no drops: every retransmission is spurious
        assert s.fabric.queue_drops == 0 and s.hosts.nic_drops == 0
    assert sr.hosts.late_pkts > 0  # the slow uplink reorders
    assert sum(sr.hosts.reorder_distance.values()) > 0
    assert gbn.hosts.retx_pkts > 0
    assert deepest(sr.hosts.reorder_distance) < dupthresh
    assert sr.hosts.retx_pkts == 0
