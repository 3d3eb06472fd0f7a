"""802.1Qbb / 802.3x MAC-control frames: byte-exact against Scapy, decoded by tshark,
malformed ones named, and the headroom formula."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from scapy.contrib.mac_control import MACControlClassBasedFlowControl, MACControlPause
from scapy.layers.l2 import Ether

from emu.core.pfc import (
    OP_PAUSE,
    OP_PFC,
    MacControl,
    PauseState,
    headroom_bytes,
    parse_mac_control,
    pause_frame,
    pfc_frame,
    quanta_ns,
)

SRC = "02:00:00:00:00:05"
DST = "01:80:c2:00:00:01"


def test_pfc_frame_is_byte_exact_with_scapy():
    ours = pfc_frame(SRC, {3: 0xFFFF, 5: 0x1234})
    ref = bytes(Ether(dst=DST, src=SRC) / MACControlClassBasedFlowControl(
        c3_enabled=1, c3_pause_time=0xFFFF, c5_enabled=1, c5_pause_time=0x1234))
    assert ours == ref and len(ours) == 60
    assert parse_mac_control(ours) == MacControl(OP_PFC, 0b101000,
                                                 (0, 0, 0, 0xFFFF, 0, 0x1234, 0, 0))


def test_pause_frame_is_byte_exact_with_scapy():
    ours = pause_frame(SRC, 100)
    ref = bytes(Ether(dst=DST, src=SRC) / MACControlPause(pause_time=100))
    assert ours == ref[:60] and len(ours) == 60
    assert parse_mac_control(ours) == MacControl(OP_PAUSE, 0xFF, (100,) * 8)


@pytest.mark.parametrize("frame, why", [
    (pfc_frame(SRC, {3: 1})[:40], "short"),
    (pfc_frame(SRC, {3: 1})[:14] + b"\x00\x02" + bytes(44), "unknown_opcode"),
    (pfc_frame(SRC, {3: 1})[:16] + b"\x01\x08" + bytes(42), "bad_class_vector"),
])
def test_malformed_frames_are_named_and_do_not_stop_the_port(frame, why):
    now = [0]
    st = PauseState(lambda: now[0], 100e9)
    st.on_frame(frame)
    assert st.malformed == {why: 1} and st.until == [0] * 8
    st.on_frame(pfc_frame(SRC, {3: 10}))  # the port goes on
    assert st.paused(3, 0) and st.rx[3] == 1


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        pfc_frame(SRC, {8: 1})
    with pytest.raises(ValueError):
        pfc_frame(SRC, {0: 1 << 16})


def test_pause_timer_reloads_and_ignores_disabled_classes():
    now = [0]
    st = PauseState(lambda: now[0], 1e9)  # a quantum is 512 ns at 1 Gbit/s
    st.on_frame(pfc_frame(SRC, {3: 10}))
    assert st.until[3] == 5120
    now[0] = 2000
    st.on_frame(pfc_frame(SRC, {3: 10}))
    assert st.until[3] == 2000 + 5120  # reloaded, not 10240
    # vector enables class 0 only; the time in class 3's field is ignored
    raw = bytearray(pfc_frame(SRC, {0: 0}))
    raw[16 + 2 + 6:16 + 2 + 8] = (0xFFFF).to_bytes(2, "big")
    st.on_frame(bytes(raw))
    assert st.until[3] == 7120
    now[0] = 3000
    st.on_frame(pfc_frame(SRC, {3: 0}))  # resume
    assert not st.paused(3, 3000) and st.paused_ns(3) == 3000
    now[0] = 10_000
    assert st.paused_ns(3) == 3000


def test_global_pause_honour_or_drop():
    st = PauseState(lambda: 0, 1e9)
    st.on_frame(pause_frame(SRC, 1))
    assert all(st.paused(p, 0) for p in range(8)) and st.rx_global == 1
    st2 = PauseState(lambda: 0, 1e9, global_pause="drop")
    st2.on_frame(pause_frame(SRC, 1))
    assert not st2.paused(0, 0) and st2.malformed == {"pause_global_dropped": 1}


def test_quanta_and_headroom_arithmetic():
    assert quanta_ns(0xFFFF, 100e9) == 335_540  # 65535 * 512 bits at 100 Gbit/s
    # 100G, 1 us: 2 x 12.5 KB in flight, 2 x 1538-byte frames, the PAUSE, 201728 bits
    assert headroom_bytes(100e9, 1000, 1500) == 25_000 + 2 * 1538 + 84 + 25_216


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_tshark_decodes_a_written_pcap(tmp_path):
    from emu.switch.pcap import PcapWriter

    path = tmp_path / "pfc.pcap"
    w = PcapWriter(str(path))
    w.write(pfc_frame(SRC, {3: 0xFFFF}), 0)
    w.write(pfc_frame(SRC, {3: 0}), 1000)
    w.close()
    out = subprocess.run(
        ["tshark", "-r", str(path), "-T", "fields", "-e", "eth.dst", "-e", "eth.type",
         "-e", "macc.opcode", "-e", "macc.cbfc.enbv", "-e", "macc.cbfc.pause_time.c3",
         "-e", "macc.cbfc.pause_time.c0"],
        capture_output=True, text=True, check=True, timeout=60).stdout
    lines = [ln.split("\t") for ln in out.strip().splitlines()]
    assert len(lines) == 2
    dst, etype, op, enbv, c3, c0 = lines[0]
    assert dst == DST and int(etype, 0) == 0x8808 and int(op, 0) == OP_PFC
    assert int(enbv, 0) == 0x0008 and int(c3) == 0xFFFF and int(c0) == 0
    assert int(lines[1][4]) == 0  # the resume
