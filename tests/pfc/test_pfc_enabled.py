"""PFC acts only on the priorities it is enabled for (the lossless ones): a PFC frame
naming another priority (a lossy class, the CNPs') is counted and does not stop it, on
the switch's egress queues and in the host MAC. 802.3x PAUSE still stops every one."""

from __future__ import annotations

from emu.core.clock import VirtualClock
from emu.core.pfc import FlowControl, PauseState, pause_frame, pfc_frame
from emu.core.port import FramePort
from emu.p4.v1model.buffer import SwitchFlowControl
from emu.p4.v1model.traffic_manager import TrafficManager
from emu.roce.pfc import HostMac, HostPfcParams

SRC = "02:00:00:00:00:99"
OUT, IN = 1, 5


def switch(clock: VirtualClock, out: list[tuple[int, int]]) -> SwitchFlowControl:
    tm = TrafficManager(clock, lambda port, pkt, info: out.append((clock.now_ns(), info.qid)),
                        default_priority_queues=8, default_depth_pkts=64)
    tm.configure_port(OUT, rate_bps=1e9)  # 1000 B take 8 us; 0xFFFF quanta 33.55 ms
    tm.configure_port(IN, rate_bps=1e9)
    return SwitchFlowControl(tm, FlowControl(mode="pfc", lossless={3}), lambda p, f: None)


def test_switch_a_pfc_frame_for_a_lossy_priority_does_not_stop_it():
    clock, out = VirtualClock(), []
    fc = switch(clock, out)
    fc.on_mac_control(OUT, pfc_frame(SRC, {0: 0xFFFF, 7: 0xFFFF, 3: 0xFFFF}))
    fc.ingress = IN
    for prio in (0, 7, 3):
        fc.tm.enqueue(OUT, object(), 1000, prio)
    clock.advance(100_000)
    # 7 then 0 leave at once (8 us each); 3, PFC-enabled, waits out its 33.55 ms
    assert out == [(0, 7), (8_000, 0)]
    c = fc.counters()["ports"][OUT]
    assert c["pause_rx"] == [1, 0, 0, 1, 0, 0, 0, 1]  # every frame is counted
    assert c["paused_now"] == [False, False, False, True, False, False, False, False]
    clock.run_until_idle()
    assert out[2] == (33_553_920, 3)


def test_switch_global_pause_still_stops_every_priority():
    clock, out = VirtualClock(), []
    fc = switch(clock, out)
    fc.on_mac_control(OUT, pause_frame(SRC, 100))  # 51.2 us
    fc.ingress = IN
    fc.tm.enqueue(OUT, object(), 1000, 0)
    clock.run_until_idle()
    assert out == [(51_200, 0)]


def test_pause_state_honours_only_enabled_priorities():
    st = PauseState(lambda: 0, 1e9, enabled=0b1000)
    st.on_frame(pfc_frame(SRC, {0: 10, 3: 10}))
    assert st.until[:4] == [0, 0, 0, 5120] and st.rx[:4] == [1, 0, 0, 1]
    st.on_frame(pause_frame(SRC, 10))  # 802.3x: not per priority
    assert st.until == [5120] * 8


class _Sink(FramePort):
    def __init__(self) -> None:
        super().__init__("sink")
        self.frames: list[bytes] = []

    def send(self, frame: bytes) -> bool:
        self.frames.append(frame)
        return True


def ip_frame(dscp: int) -> bytes:
    return bytes(12) + b"\x08\x00" + bytes([0x45, dscp << 2]) + bytes(1000 - 16)


def test_host_a_pfc_frame_for_the_cnp_class_does_not_hold_cnps():
    clock = VirtualClock()
    lower = _Sink()
    mac = HostMac(clock, lower, HostPfcParams(mac="02:00:00:00:00:01", rate_bps=1e9,
                                              dscp_priority={26: 3, 48: 7}))
    assert lower.receiver is not None
    lower.receiver(pfc_frame(SRC, {7: 0xFFFF, 3: 0xFFFF}))  # 7: CNPs, lossy
    assert mac.send(ip_frame(48)) and mac.send(ip_frame(26))
    assert [f[15] >> 2 for f in lower.frames] == [48]  # the CNP left, the data waits
    assert mac.counters()["pause_rx"] == [0, 0, 0, 1, 0, 0, 0, 1]
    assert mac.pause.until[7] == 0 and mac.pause.until[3] == 33_553_920


def test_pause_quanta_are_timed_at_the_ports_rate_not_the_modelled_links():
    """The switches' `links` are the modelled links (for headroom), a dilated run's clock
    the wire's: a port without a rate of its own timed quanta at the modelled link's
    100 Gb/s, dilation times too short; it takes `default_rate_bps`."""
    clock, out = VirtualClock(), []
    tm = TrafficManager(clock, lambda port, pkt, info: out.append(clock.now_ns()),
                        default_priority_queues=8, default_depth_pkts=64)
    fc = SwitchFlowControl(tm, FlowControl(mode="pfc", lossless={3}, default_rate_bps=1e9),
                           lambda p, f: None, links={OUT: (100e9, 1_000, 1500)})
    fc.on_mac_control(OUT, pfc_frame(SRC, {3: 1000}))  # 512,000 bit times: 512 us at 1G
    fc.ingress = IN
    tm.enqueue(OUT, object(), 1000, 3)
    clock.run_until_idle()
    assert out == [512_000]


def test_pause_state_counts_pause_and_resume_frames_apart() -> None:
    """A zero-quanta frame resumes a class: counted as such, not as a PAUSE, so a link's
    receive counts match what its sender counts as PAUSE and resume frames."""
    st = PauseState(lambda: 0, 1e9, enabled=0b1000)
    st.on_frame(pfc_frame(SRC, {3: 10, 5: 0}))
    st.on_frame(pfc_frame(SRC, {3: 0}))
    c = st.counters()
    assert c["pause_rx"][3] == 1 and c["resume_rx"][3] == 1
    assert c["pause_rx"][5] == 0 and c["resume_rx"][5] == 1
