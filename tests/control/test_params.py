"""LB / ECN / QoS settings: validation and the values fabric.p4 receives."""

from __future__ import annotations

import pytest

from emu.control import EcnSettings, LbMode, LbSettings, ParamError, QosSettings
from emu.control.params import ECN_PROB_ONE
from emu.core.wire import DSCP_CNP


def test_lb_modes_and_codes():
    assert [m.code for m in LbMode] == [0, 1, 2, 3, 4]
    assert LbSettings(mode="flowlet").mode is LbMode.FLOWLET
    with pytest.raises(ParamError, match="unknown load-balancing mode 'wcmp'.*ecmp, flowlet"):
        LbSettings(mode="wcmp")  # type: ignore[arg-type]


@pytest.mark.parametrize("kw", [{"seed": -1}, {"seed": 1 << 32}, {"flowlet_timeout_us": 0},
                                {"qdepth_max_age_us": -5}])
def test_lb_parameters_out_of_range(kw):
    with pytest.raises(ParamError):
        LbSettings(**kw)


def test_per_switch_seeds_differ_and_a_fixed_seed_is_shared():
    lb = LbSettings()
    seeds = {lb.seed_for(d) for d in range(1, 100)}
    assert len(seeds) == 99
    same = LbSettings(seed=7)
    assert {same.seed_for(d) for d in range(1, 10)} == {7}
    assert same.action_params(3) == {"mode": 0, "seed": 7, "flowlet_timeout_us": 500,
                                     "qdepth_max_age_us": 0xFFFFFFFF}  # never ages
    assert LbSettings(qdepth_max_age_us=1000).action_params(3)["qdepth_max_age_us"] == 1000


def test_ecn_thresholds_validated():
    with pytest.raises(ParamError, match="kmin < kmax"):
        EcnSettings(kmin_pkts=10, kmax_pkts=10)
    with pytest.raises(ParamError, match="pmax"):
        EcnSettings(pmax=1.5)
    s = EcnSettings(kmin_pkts=5, kmax_pkts=80)
    with pytest.raises(ParamError, match="not below the queue depth of leaf1:3 \\(64 packets\\)"):
        s.validate_for(64, "leaf1:3")
    # a queue of 80 packets shows a packet at most 79: Kmax 80 (pmax) is out of reach
    with pytest.raises(ParamError, match="need kmin < kmax < depth"):
        s.validate_for(80)
    s.validate_for(81)
    EcnSettings(kmin_pkts=5, kmax_pkts=80, enabled=False).validate_for(64)


def test_ecn_red_line():
    s = EcnSettings(kmin_pkts=10, kmax_pkts=30, pmax=0.5)
    assert s.slope == round(0.5 * ECN_PROB_ONE / 20)
    assert s.mark_probability(10) == 0.0
    assert s.mark_probability(9) == 0.0
    assert s.mark_probability(20) == pytest.approx(0.25, abs=1e-6)
    # pmax at Kmax itself, 1 only above (DCQCN's RED, the HPCC/DCQCN ns-3 switches)
    assert s.mark_probability(30) == pytest.approx(0.5, abs=1e-6)
    assert s.mark_probability(31) == 1.0
    assert s.action_params() == {"kmin": 10, "kmax": 30, "slope": s.slope, "at_dequeue": 1}
    enq = EcnSettings(kmin_pkts=10, kmax_pkts=30, pmax=0.5, mark_at="enqueue")
    assert enq.action_params()["at_dequeue"] == 0
    with pytest.raises(ParamError, match="mark_at"):
        EcnSettings(mark_at="ingress")  # type: ignore[arg-type]


def test_qos_priorities_must_exist():
    with pytest.raises(ParamError, match="needs 8 priority queues; the switches have 2"):
        QosSettings(priority_queues=2, dscp_priority={DSCP_CNP: 7})
    with pytest.raises(ParamError, match="DSCP"):
        QosSettings(priority_queues=2, dscp_priority={64: 1})
    assert QosSettings.roce(4).dscp_priority == {DSCP_CNP: 3}
    assert QosSettings.roce(1).dscp_priority == {}
