"""The controller against recording switch handles: what it writes, in what order."""

from __future__ import annotations

import pytest

from emu.control import (
    EcnSettings,
    FabricController,
    Flow,
    LbMode,
    MemorySwitchHandle,
    NoPathError,
    ParamError,
    UnknownLinkError,
    UnknownSwitchError,
)
from emu.control import program as P
from emu.topo import load_topology


@pytest.fixture
def clos4():
    return load_topology("clos4")


@pytest.fixture
def ctl(clos4):
    handles = {s.name: MemorySwitchHandle(s.name) for s in clos4.switches}
    c = FabricController(clos4, handles, ecn=EcnSettings(kmin_pkts=5, kmax_pkts=20, pmax=0.2))
    c.program()
    return c


def _h(ctl, name) -> MemorySwitchHandle:
    return ctl.handles[name]  # type: ignore[return-value]


def test_program_installs_routes_groups_macs_lb_and_ecn(ctl, clos4):
    leaf = _h(ctl, "leaf1")
    assert len(leaf.table(P.IPV4_LPM)) == 2 + 3  # 2 hosts, 3 remote leaves
    (group,) = leaf.table(P.ECMP_GROUP)
    assert group.params["member_count"] == 4
    assert [group.params[f"port_{i}"] for i in range(4)] == [3, 4, 5, 6]
    assert len(leaf.table(P.PORT_NEIGHBOR)) == 6
    assert len(leaf.table(P.ECN_CONFIG)) == 6
    action, params = leaf.defaults[P.LB_CONFIG]
    assert action == P.SET_LB_CONFIG and params["mode"] == 0
    seeds = {_h(ctl, s.name).defaults[P.LB_CONFIG][1]["seed"] for s in clos4.switches}
    assert len(seeds) == len(clos4.switches)  # per-switch seeds by default


def test_groups_are_written_before_routes_that_use_them(ctl):
    log = _h(ctl, "leaf1").log
    tables = [t for op, t in log if op == "insert"]
    assert tables.index(P.ECMP_GROUP) < tables.index(P.IPV4_LPM)


def test_program_twice_writes_nothing_new(ctl):
    before = len(_h(ctl, "spine1").log)
    ctl.program()
    after = _h(ctl, "spine1").log[before:]
    assert after == [("default", P.LB_CONFIG)]


def test_set_lb_mode_on_some_switches(ctl):
    ctl.set_lb("flowlet", switches=["leaf1"], flowlet_timeout_us=200)
    assert ctl.lb("leaf1").mode is LbMode.FLOWLET
    params = _h(ctl, "leaf1").defaults[P.LB_CONFIG][1]
    assert params["mode"] == 1 and params["flowlet_timeout_us"] == 200
    assert _h(ctl, "leaf2").defaults[P.LB_CONFIG][1]["mode"] == 0
    ctl.set_lb(seed=5)
    assert {_h(ctl, n).defaults[P.LB_CONFIG][1]["seed"] for n in ctl.handles} == {5}


def test_bad_requests_get_clear_errors(ctl):
    with pytest.raises(UnknownSwitchError, match="unknown switch 'leaf7'"):
        ctl.set_lb("ecmp", switches="leaf7")
    with pytest.raises(ParamError, match="unknown LB parameter 'timeout'"):
        ctl.set_lb(timeout=3)
    with pytest.raises(ParamError, match="unknown load-balancing mode"):
        ctl.set_lb("fastest")
    with pytest.raises(ParamError, match="flowlet_timeout_us must be positive"):
        ctl.set_lb(flowlet_timeout_us=0)
    with pytest.raises(ParamError, match="not below the queue depth"):
        ctl.set_ecn(EcnSettings(kmin_pkts=10, kmax_pkts=100))
    with pytest.raises(ParamError, match="not below the queue depth"):
        ctl.set_ecn(EcnSettings(kmin_pkts=10, kmax_pkts=64))  # clos4: 64-packet queues
    with pytest.raises(ParamError, match="has no port 42"):
        ctl.set_ecn(EcnSettings(), switches="leaf1", ports=[42])
    with pytest.raises(UnknownLinkError):
        ctl.link_down("leaf1", "leaf2")
    # a failed request changed nothing
    assert ctl.lb("leaf1").mode is LbMode.ECMP


def test_set_ecn_per_port(ctl):
    ctl.set_ecn(EcnSettings(kmin_pkts=2, kmax_pkts=8, pmax=1.0), switches="leaf1", ports=[3])
    entries = {e.match["standard_metadata.egress_port"]: e
               for e in _h(ctl, "leaf1").table(P.ECN_CONFIG)}
    assert entries[3].params["kmax"] == 8
    assert entries[4].params["kmax"] == 20
    ctl.set_ecn(EcnSettings(enabled=False), switches="leaf1", ports=[4])
    entries = {e.match["standard_metadata.egress_port"]: e
               for e in _h(ctl, "leaf1").table(P.ECN_CONFIG)}
    assert entries[4].action == P.NO_MARKING


def test_link_down_reprograms_make_before_break(ctl, clos4):
    leaf1 = _h(ctl, "leaf1")
    n = len(leaf1.log)
    link = ctl.link_down("leaf2", "spine1")
    ops = leaf1.log[n:]
    # a new 3-member group for leaf2's subnet, the route moved to it; the 4-member
    # group stays (leaf3 and leaf4 still use it)
    assert ops == [("insert", P.ECMP_GROUP), ("modify", P.IPV4_LPM)]
    groups = {e.params["member_count"] for e in leaf1.table(P.ECMP_GROUP)}
    assert groups == {3, 4}
    spine1 = _h(ctl, "spine1")
    assert len(spine1.table(P.IPV4_LPM)) == 3  # no more route to leaf2
    assert link.end("spine1").port not in {
        e.match["standard_metadata.egress_spec"] for e in spine1.table(P.PORT_NEIGHBOR)}
    ctl.link_up("leaf2", "spine1")
    assert {e.params["member_count"] for e in leaf1.table(P.ECMP_GROUP)} == {4}
    assert len(spine1.table(P.IPV4_LPM)) == 4


def test_te_refuses_more_pins_than_the_te_flow_table_holds_before_any_write(ctl):
    """fabric.p4's te_flow holds 4096 entries: the 4097th pin failed half way through
    the writes (RESOURCE_EXHAUSTED from the switch), some switches pinned, others not."""
    from emu.control import ControlError
    from emu.control.params import TE_FLOW_SLOTS

    fits = [Flow("h1", "h3", sport=1 + i, demand_bps=1e6) for i in range(TE_FLOW_SLOTS)]
    ctl.place_te(fits[:2])
    before = {name: list(h.table(P.TE_FLOW)) for name, h in ctl.handles.items()}
    with pytest.raises(ControlError) as ei:
        ctl.place_te([*fits, Flow("h2", "h4", sport=7, demand_bps=1e6)])
    assert str(ei.value) == ("TE would pin 4097 flows on leaf1, and fabric.p4's te_flow table "
                             "holds 4096: fewer flows (hosts, workload) or another load "
                             "balancing mode")
    assert {name: list(h.table(P.TE_FLOW)) for name, h in ctl.handles.items()} == before
    assert len(ctl.te_flows) == 2
    ctl.place_te(fits)  # exactly full is fine
    assert len(_h(ctl, "leaf1").table(P.TE_FLOW)) == TE_FLOW_SLOTS


def test_te_after_failures_never_pins_more_than_a_switch_holds(ctl, caplog, monkeypatch):
    """place_te refuses too many pins before the run; a failure cannot be refused. With
    te_flow tables of 100 (4096 in fabric.p4; smaller keeps the test quick), each leaf
    sends 100 pinned flows, 50 per spine; once leaf1 and leaf3 each keep only spine4,
    it carried all 200, and a switch past its table failed a write half way. The last
    placed flows go back to the group hash instead."""
    from emu.control import controller

    monkeypatch.setattr(controller, "TE_FLOW_SLOTS", 100)
    flows = [Flow(src, dst, sport=1 + i, demand_bps=1e6)
             for src, dst in (("h1", "h3"), ("h2", "h4"), ("h5", "h7"), ("h6", "h8"))
             for i in range(50)]
    ctl.place_te(flows)
    assert max(len(h.table(P.TE_FLOW)) for h in ctl.handles.values()) == 100
    for leaf in ("leaf1", "leaf3"):
        for spine in ("spine1", "spine2", "spine3"):
            ctl.link_down(leaf, spine)
            for name, h in ctl.handles.items():
                assert len(h.table(P.TE_FLOW)) <= 100, (leaf, spine, name)
    assert len(_h(ctl, "spine4").table(P.TE_FLOW)) == 100 == len(ctl.te_placements)
    assert {sw for p in ctl.te_placements for sw, _port in p.hops
            if sw.startswith("spine")} == {"spine4"}
    assert "TE: 100 flows left to the group hash" in caplog.text
    assert len(ctl.te_flows) == 200  # kept: repaired links place them all again
    ctl.link_up("leaf1", "spine1")
    ctl.link_up("leaf3", "spine1")
    assert len(ctl.te_placements) == 200


def test_te_installs_pins_on_every_switch_of_the_path(ctl):
    flows = [Flow("h1", "h3", sport=49152 + i, demand_bps=1e6) for i in range(4)]
    placed = ctl.place_te(flows)
    pins = _h(ctl, "leaf1").table(P.TE_FLOW)
    assert sorted(e.params["member_index"] for e in pins) == [0, 1, 2, 3]
    for p in placed:
        spine = _h(ctl, p.path.switches[1])
        assert len(spine.table(P.TE_FLOW)) == 1
    # a failure moves the pins off the dead link
    ctl.link_down("leaf1", "spine1")
    assert all(p.path.switches[1] != "spine1" for p in ctl.te_placements)
    assert len(_h(ctl, "spine1").table(P.TE_FLOW)) == 0
    ctl.clear_te()
    assert _h(ctl, "leaf1").table(P.TE_FLOW) == []


def test_te_without_path_is_refused_before_any_write(ctl):
    for i in range(1, 5):
        ctl.link_down("leaf2", f"spine{i}")
    n = len(_h(ctl, "leaf1").log)
    with pytest.raises(NoPathError, match="h1 -> h3"):
        ctl.place_te([Flow("h1", "h3", sport=1)])
    assert len(_h(ctl, "leaf1").log) == n


def test_counters_and_registers_are_read_by_name(ctl):
    h = _h(ctl, "leaf1")
    h.counters[(P.PORT_RX, 1)] = (10, 1000)
    h.counters[(P.PORT_ECN_MARKS, 3)] = (4, 0)
    gid = next(iter(ctl.group_ids("leaf1").values()))
    h.counters[(P.MEMBER_PACKETS, P.member_counter_index(gid, 2))] = (7, 700)
    h.registers[(P.PORT_QDEPTH, P.qdepth_index(3, 0))] = 12
    h.registers[(P.PORT_QDEPTH, P.qdepth_index(3, 1))] = 2
    pc = ctl.port_counters("leaf1")
    assert pc[1].rx_pkts == 10 and pc[1].rx_bytes == 1000 and pc[3].ecn_marks == 4
    (g,) = ctl.group_counters("leaf1")
    assert g.packets == (0, 0, 7, 0) and g.members == (3, 4, 5, 6)
    assert ctl.queue_readings("leaf1")[3] == (12, 0)
    assert ctl.queue_readings("leaf1", priority=1)[3] == (2, 0)


def test_controller_needs_a_handle_per_switch(clos4):
    with pytest.raises(ParamError, match="no switch handle for"):
        FabricController(clos4, {"leaf1": MemorySwitchHandle("leaf1")})


def test_settings_before_program_are_written_by_program(clos4):
    handles = {s.name: MemorySwitchHandle(s.name) for s in clos4.switches}
    c = FabricController(clos4, handles)
    c.set_ecn(EcnSettings(kmin_pkts=3, kmax_pkts=9), switches="leaf1", ports=[3])
    c.link_down("leaf1", "spine1")
    assert handles["leaf1"].log == []  # nothing written yet
    c.program()
    entries = {e.match["standard_metadata.egress_port"]: e
               for e in handles["leaf1"].table(P.ECN_CONFIG)}
    assert entries[3].params["kmax"] == 9
    (group,) = handles["leaf1"].table(P.ECMP_GROUP)
    assert group.params["member_count"] == 3
