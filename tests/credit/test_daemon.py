"""The switch daemon's credit mode (SwitchOptions.flow_control): on a committed
pipeline the ports' MAC layer takes updates and PAUSE frames before the pipeline, each
port announces its credit, and admin `stats` reports the credit counters."""

from __future__ import annotations

from pathlib import Path

from emu.core.credit import credit_frame, parse_credit
from emu.core.pfc import FlowControl, pfc_frame
from emu.p4.v1model.credit import SwitchCreditControl
from emu.switch.admin_commands import stats
from emu.switch.daemon import SwitchDaemon
from emu.switch.options import PortSettings, SwitchOptions

FABRIC = Path(__file__).resolve().parents[2] / "p4src" / "fabric.p4"
PEER = "02:00:00:00:00:99"


def test_daemon_credit_mode():
    opts = SwitchOptions(priority_queues=8, flow_control=FlowControl(mode="credit"),
                         cpu_port=3, ports={n: PortSettings(rate_bps=1e9) for n in (1, 2, 3)})
    d = SwitchDaemon(opts)
    sent: list[tuple[int, bytes]] = []
    for num in (1, 2, 3):  # the ports' send functions (the daemon builds them per port)
        d._senders[num] = lambda frame, num=num: sent.append((num, frame))
    try:
        d._load_program(str(FABRIC))
        dp = d.device.dataplane
        assert dp is not None
        fc = dp.sw.flow_control
        assert isinstance(fc, SwitchCreditControl)
        rx = d._receiver(1)
        rx(credit_frame(PEER, 3, 0, 500))
        rx(pfc_frame(PEER, {3: 10}))
        out = stats(d, {})
        port = out["credit"]["ports"][1]
        assert port["updates_rx"][3] == 1 and port["fccl"][3] == 500 and port["pause_rx"] == 1
        assert "pfc" not in out and out["drops"] == {}
        announced = {num for num, f in sent if not isinstance(parse_credit(f), str)}
        assert announced == {1, 2}  # every link port announced its credit, not the CPU port
    finally:
        d.close()
