"""Per-port pcap capture: a file that cannot be written ends that capture, never the
switch or the run feeding it."""

from __future__ import annotations

import logging
import os
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
