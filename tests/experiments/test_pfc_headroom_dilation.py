"""A dilated run's PFC headroom is the modelled link's (docs/pfc.md): bytes in flight
are the same on the wire, but the peer's response time is looked up by the modelled
speed (100 Gb/s: 201 728 bit times), not by the wire's (20 Mb/s: 30 720)."""

from __future__ import annotations

from pathlib import Path

from emu.core.clock import VirtualClock
from emu.core.flowmode import FlowControlMode
from emu.core.pfc import headroom_bytes
from emu.experiments import pfc
from emu.experiments.config import RunConfig
from emu.experiments.plan import plan_run
from emu.p4.v1model.buffer import SwitchFlowControl
from emu.p4.v1model.traffic_manager import TrafficManager


def test_realtime_switch_headroom_is_computed_on_the_modelled_link(tmp_path: Path) -> None:
    from emu.net import EmuNet

    plan = plan_run(RunConfig(topo="leafspine2", flow_control=FlowControlMode.PFC))
    assert plan.dilation.factor == 5000  # 100 Gb/s, 1 us modelled; 20 Mb/s, 5 ms wired
    fc = pfc.flow_control(plan)
    assert fc is not None and fc.reaction_ns == 8_000  # 40 ms of wire time, modelled
    net = EmuNet(plan.fabric, "embedded", tmp_path, flow_control=fc, model=plan.model)
    d = net._switch_pfc("leaf1")
    assert d is not None and d["links"]["1"] == [100e9, 1000, 4200]  # h4's jumbo frames
    # the daemon's traffic manager runs the wire rate; the headroom is the model's
    tm = TrafficManager(VirtualClock(), lambda *a: None, default_priority_queues=8)
    tm.configure_port(1, rate_bps=20e6)
    sfc = SwitchFlowControl(tm, fc, lambda p, f: None,
                            links={int(p): tuple(v) for p, v in d["links"].items()})
    # 25 000 in flight + 2 x 4238 + 84 + 25 216 (100G response) + 100 000 (the lag)
    assert headroom_bytes(100e9, 1000, 4200) == 58_776
    assert sfc.headroom_needed(1) == 158_776  # was 137_400: 30 720 bits (20 Mb/s)


def test_virtual_switch_headroom_is_computed_on_the_modelled_link() -> None:
    from emu.sim.fabric import SimFabric

    plan = plan_run(RunConfig(topo="leafspine2", virtual=True,
                              flow_control=FlowControlMode.PFC))
    fc = pfc.flow_control(plan)
    sim = SimFabric(plan.fabric, qos=pfc.qos(plan.config), flow_control=fc,
                    model=plan.model)
    rep = sim.switches["leaf1"].flow_control.headroom_report()
    assert rep[1]["needed"] == 58_776  # was 37_400 with the wire's response time
