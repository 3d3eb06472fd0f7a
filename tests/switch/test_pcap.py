"""Per-port pcap capture: a file that cannot be written ends that capture, never the
switch or the run feeding it."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from emu.switch.pcap import PcapWriter, capture_problems, read_pcap

from ..small_disk import small_disk

FRAME = bytes(range(64))


def test_a_capture_on_a_full_device_stops_quietly(caplog: pytest.LogCaptureFixture) -> None:
    """/dev/full fails every write with ENOSPC, as a full disk does: the writer raised
    OSError into whoever fed it a frame (the switch's port loop, a virtual run's tick)."""
    with caplog.at_level(logging.WARNING, logger="emu.switch.pcap"):
        w = PcapWriter("/dev/full")
        for _ in range(2000):  # past the 64 KiB buffer
            w.write(FRAME, 1_000)
        w.flush()
        w.close()
    assert w.error == os.strerror(28)
    assert [r.getMessage() for r in caplog.records] == [
        "pcap /dev/full: capture stopped after 0 frames: No space left on device"]
    assert capture_problems([w, PcapWriter(os.devnull)]) == [
        "pcap capture stopped early in 1 file(s) (full): No space left on device"]


def test_frames_written_before_the_disk_filled_stay_readable(tmp_path: Path) -> None:
    with small_disk(tmp_path / "small", "64k") as small:
        w = PcapWriter(str(small / "p_in.pcap"))
        for i in range(5000):
            w.write(FRAME, i * 1000)
        w.close()
        assert w.error == "No space left on device" and 0 < w.frames < 5000
        frames = read_pcap(str(small / "p_in.pcap"))
        assert len(frames) >= w.frames - 1024 and all(f == FRAME for f in frames[:-1])


def test_a_virtual_run_whose_pcaps_fill_the_disk_still_reports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The run crashed in a tick with OSError: nothing measured was shown."""
    from emu.experiments.commands import _run
    from emu.experiments.config import RunConfig
    from emu.experiments.plan import plan_run
    from emu.experiments.workloads import WorkloadParams

    # room for the 64 capture files' headers (a page each), not for what they capture
    with small_disk(tmp_path / "small", "320k") as small:
        cfg = RunConfig(virtual=True, results_root=small, progress=False, pcap=True,
                        workload=WorkloadParams("permutation", message_bytes=262144))
        assert _run(cfg, plan_run(cfg)) == 1  # the results folder does not fit either
    out, err = capsys.readouterr()
    out = " ".join(out.split())  # the console wraps long notes
    assert "OK: 8/8 flows verified" in out
    assert "pcap capture stopped early in " in out and "No space left on device" in out
    assert "cannot write the results in" in err and "Traceback" not in err


def _classic_pcap(path: Path, records: list[tuple[int, bytes]], *, order: str = "<",
                  nanosecond: bool = False) -> None:
    """A pcap as libpcap writes one (BMv2's, tcpdump's), in either byte order."""
    import struct

    magic = 0xA1B23C4D if nanosecond else 0xA1B2C3D4
    out = [struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 262144, 1)]
    for ts_ns, frame in records:
        sec, ns = divmod(ts_ns, 1_000_000_000)
        out.append(struct.pack(order + "IIII", sec, ns if nanosecond else ns // 1000,
                               len(frame), len(frame)) + frame)
    path.write_bytes(b"".join(out))


@pytest.mark.parametrize("order", ["<", ">"])
@pytest.mark.parametrize("nanosecond", [False, True])
def test_reader_takes_either_byte_order_and_resolution(tmp_path: Path, order: str,
                                                       nanosecond: bool) -> None:
    from emu.switch.pcap import PcapReader

    recs = [(1_700_000_000_123_456_789, FRAME), (1_700_000_001_000_001_999, FRAME[:20])]
    _classic_pcap(tmp_path / "p.pcap", recs, order=order, nanosecond=nanosecond)
    with PcapReader(str(tmp_path / "p.pcap")) as r:
        got = [(x.ts_ns, x.data, x.orig_len) for x in r]
        assert r.nanosecond is nanosecond and r.snaplen == 262144 and r.linktype == 1
    cut = 1 if nanosecond else 1000  # microsecond files keep whole microseconds
    assert got == [(t - t % cut, f, len(f)) for t, f in recs]


def test_reader_leaves_out_a_record_cut_short_and_refuses_other_files(tmp_path: Path) -> None:
    from emu.switch.pcap import PcapFormatError, PcapReader

    w = PcapWriter(str(tmp_path / "p.pcap"))
    for i in range(3):
        w.write(FRAME, i * 1000)
    w.close()
    whole = (tmp_path / "p.pcap").read_bytes()
    (tmp_path / "p.pcap").write_bytes(whole[:-10])  # the capture stopped mid-record
    assert read_pcap(str(tmp_path / "p.pcap")) == [FRAME, FRAME]
    for bad in (b"", b"\x0a\x0d\x0d\x0a" + bytes(40), b"not a capture at all, not one"):
        (tmp_path / "bad.pcap").write_bytes(bad)
        with pytest.raises(PcapFormatError, match="not a classic pcap file"):
            PcapReader(str(tmp_path / "bad.pcap"))


def test_rescale_to_modelled_divides_time_since_the_origin(tmp_path: Path) -> None:
    """A real run's captures are stamped by the wall clock of a fabric running D times
    slower than the modelled one: rewritten, a frame t after the origin is t / D after
    it, in nanoseconds (a 1 KB frame at 100 Gbit/s lasts 84 ns: no microsecond stamp
    could show it)."""
    from emu.switch.pcap import PcapReader, read_stamps, rescale_to_modelled

    origin = 1_700_000_000_000_000_000
    d = 1000.0
    wire = [origin - 3_000_000, origin, origin + 84_000, origin + 168_000, origin + 2_000_001_000]
    _classic_pcap(tmp_path / "p.pcap", [(t, FRAME + bytes([i])) for i, t in enumerate(wire)])
    rescale_to_modelled(str(tmp_path / "p.pcap"), origin, d)
    assert read_stamps(str(tmp_path / "p.pcap")) == [
        origin - 3_000, origin, origin + 84, origin + 168, origin + 2_000_001]
    assert read_pcap(str(tmp_path / "p.pcap")) == [FRAME + bytes([i]) for i in range(5)]
    with PcapReader(str(tmp_path / "p.pcap")) as r:
        assert r.nanosecond and r.snaplen == 262144
    assert [p.name for p in tmp_path.iterdir()] == ["p.pcap"]  # no temporary file left
    # a switch that stamps in wall-clock nanoseconds, big-endian: rescaled the same
    _classic_pcap(tmp_path / "n.pcap", [(t, FRAME) for t in wire], order=">",
                  nanosecond=True)
    rescale_to_modelled(str(tmp_path / "n.pcap"), origin, d)
    assert read_stamps(str(tmp_path / "n.pcap")) == [
        origin - 3_000, origin, origin + 84, origin + 168, origin + 2_000_001]
    if shutil.which("tshark"):
        out = subprocess.run(["tshark", "-r", str(tmp_path / "p.pcap"), "-T", "fields",
                              "-e", "frame.time_relative"], capture_output=True, text=True,
                             timeout=60, check=True).stdout.split()
        assert [float(x) for x in out] == pytest.approx(
            [0, 3e-6, 3.084e-6, 3.168e-6, 2.003001e-3], abs=1e-12)


def test_captures_that_cannot_be_rewritten_are_noted_and_kept(tmp_path: Path) -> None:
    from emu.experiments.results import pcaps_to_modelled
    from emu.switch.pcap import read_stamps

    _classic_pcap(tmp_path / "a_in.pcap", [(2_000_000, FRAME)])
    (tmp_path / "b_in.pcap").write_bytes(b"garbage")
    notes = pcaps_to_modelled(tmp_path, 1_000_000, 10.0)
    assert read_stamps(str(tmp_path / "a_in.pcap")) == [1_100_000]
    assert (tmp_path / "b_in.pcap").read_bytes() == b"garbage"
    assert notes == ["1 capture(s) left in wall-clock time, not modelled (b_in.pcap): "
                     f"{tmp_path / 'b_in.pcap'}: not a classic pcap file"]
    assert pcaps_to_modelled(tmp_path / "none", 0, 10.0) == []
