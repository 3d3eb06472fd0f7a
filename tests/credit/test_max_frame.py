"""A credit buffer must hold two of the largest frames its link carries: with less, a
frame larger than the credit ever granted waits for ever (no drop, no error). The check
uses the link's or host's MTU (not 1500) and names the setting; `emu run` refuses it
before anything starts."""

from __future__ import annotations

import pytest

from emu.core.clock import VirtualClock
from emu.core.credit import CreditPort, CreditSettings, blocks, min_buffer_bytes
from emu.core.flowmode import FlowControlMode
from emu.core.pfc import FlowControl
from emu.experiments import plan as plan_mod
from emu.experiments.config import RunConfig, RunConfigError
from emu.p4.v1model.credit import SwitchCreditControl
from emu.p4.v1model.traffic_manager import TrafficManager
from emu.roce.credit import HostCreditParams
from emu.switch.commands import _pfc_config


def test_two_maximum_frames_in_blocks():
    assert min_buffer_bytes(1500) == 3072  # 2 x 24 blocks of 1514 bytes
    assert min_buffer_bytes(4200) == 8448  # 2 x 66 blocks of 4214 bytes
    assert min_buffer_bytes(9216) == 18_560


def test_a_buffer_below_one_frame_never_grants_it():
    """Why: what the audit saw, a 4096-byte buffer and a 4214-byte frame."""
    clock, tx, rx = VirtualClock(), [], []
    a = CreditPort(clock, tx.append, "02:00:00:00:00:0a", CreditSettings(), frozenset({3}), 1e9)
    b = CreditPort(clock, rx.append, "02:00:00:00:00:0b", CreditSettings(), frozenset({3}), 1e9,
                   buffer_bytes=4096)
    b.announce()
    a.on_frame(rx.pop())
    assert b.budget == 64 < blocks(4214) == 66 and not a.can_send(3, 4214)


def test_host_receive_buffer_is_checked_against_the_hosts_mtu():
    kw = {"mac": "02:00:00:00:00:01", "rate_bps": 10e9, "dscp_priority": {26: 3}}
    HostCreditParams(**kw, rx_buffer_bytes=4096)  # MTU 1500: 3072 suffice
    HostCreditParams(**kw, rx_buffer_bytes=8448, mtu=4200)
    with pytest.raises(ValueError, match=r"^rx_buffer_bytes 4096 bytes cannot hold two "
                       r"maximum frames of MTU 4200 \(8448 bytes"):
        HostCreditParams(**kw, rx_buffer_bytes=4096, mtu=4200)


def test_switch_buffer_is_checked_against_each_links_mtu():
    fc = FlowControl(mode="credit", credit=CreditSettings(buffer_bytes=8192))
    tm = TrafficManager(VirtualClock(), lambda *a: None, default_priority_queues=8)
    ctl = SwitchCreditControl(tm, fc, lambda p, f: None, links={1: (10e9, 1000, 4000)})
    with pytest.raises(ValueError, match="port 2: credit buffer_bytes 8192 bytes .* MTU 4200"):
        ctl.set_link(2, 10e9, 1000, 4200)
    with pytest.raises(ValueError, match="port 1: credit buffer_bytes 8192"):
        SwitchCreditControl(tm, fc, lambda p, f: None, links={1: (10e9, 1000, 4200)})
    # the daemon refuses its --pfc-config at start
    cfg = ('{"mode": "credit", "credit": {"buffer_bytes": 8192}, '
           '"links": {"3": [1e10, 1000, 4200]}}')
    with pytest.raises(SystemExit, match="--pfc-config: port 3: credit buffer_bytes 8192"):
        _pfc_config(cfg)


def test_run_refuses_a_credit_buffer_too_small_for_the_topology(monkeypatch):
    cfg = RunConfig(topo="leafspine2", virtual=True, flow_control=FlowControlMode.CREDIT)
    plan_mod.plan_run(cfg)  # 64 KiB hold two of h4's 4214-byte frames
    monkeypatch.setattr(plan_mod, "CREDIT", CreditSettings(buffer_bytes=8192))
    with pytest.raises(RunConfigError, match="topology leafspine2: credit buffer_bytes 8192 "
                       "bytes cannot hold two maximum frames of MTU 4200"):
        plan_mod.plan_run(cfg)


def test_sim_host_mac_takes_the_hosts_mtu():
    from emu.sim.fabric import SimFabric
    from emu.topo import load_topology

    sim = SimFabric(load_topology("leafspine2"), flow_control=FlowControl(mode="credit"))
    assert sim.host_mac("h1", rx_buffer_bytes=4096).params.mtu == 1500
    with pytest.raises(ValueError, match="rx_buffer_bytes 4096 bytes .* MTU 4200"):
        sim.host_mac("h4", rx_buffer_bytes=4096)
