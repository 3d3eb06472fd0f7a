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


class _Wire:
    """The far end of a daemon port: what the peer receives, when, in order."""

    last_failure = ""

    def __init__(self, clock) -> None:  # type: ignore[no-untyped-def]
        self.clock = clock
        self.got: list[tuple[int, bytes]] = []

    def send(self, frame: bytes) -> bool:
        self.got.append((self.clock.now_ns(), frame))
        return True

    def close(self) -> None:
        pass


def test_a_credit_update_sent_while_a_frame_is_on_the_wire_arrives_after_it():
    """The port sender timed each frame from its hand-over alone, as if the port had a
    transmitter per frame: a 60-byte credit update sent while a 1500-byte frame was on the
    wire reached the peer first, and its FCTBS (which counts that frame) made the peer
    grant the frame's blocks twice. A PAUSE overtook data the same way."""
    opts = SwitchOptions(flow_control=FlowControl(mode="credit"),
                         ports={1: PortSettings(rate_bps=10e6)})
    d = SwitchDaemon(opts)
    wire = _Wire(d.clock)
    d.ports[1] = wire  # type: ignore[assignment]
    d.delay_ns[1] = 1_000
    try:
        send = d._make_sender(1)
        t0 = d.clock.now_ns()
        data = bytes(12) + b"\x08\x00" + bytes(1500 - 14)
        update = credit_frame(PEER, 3, 24, 280)
        send(data)
        send(update)
        d.clock.run(until=lambda: len(wire.got) == 2, timeout_s=5)
        assert [f for _t, f in wire.got] == [data, update]
        # 10 Mb/s: 800 ns a byte, 24 B of preamble, FCS and gap a frame, then the delay
        # (timers fire late on a real clock, never early)
        t_data, t_update = (t - t0 for t, _f in wire.got)
        assert t_data >= (1500 + 24) * 800 + 1_000
        assert t_update >= (1500 + 24 + 60 + 24) * 800 + 1_000
    finally:
        d.close()
