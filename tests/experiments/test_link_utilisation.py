"""Link utilisation has one definition: a frame occupies the link for its bytes plus
emu.core.wire.WIRE_OVERHEAD_BYTES (preamble+SFD 8, FCS 4, gap 12), as the emulator's
ports serialise it; the uplink plot and the summary's busiest link both count that."""

from __future__ import annotations

import pytest

from emu.core.wire import WIRE_OVERHEAD_BYTES
from emu.experiments.metrics import PortCount, busiest_link_utilisation
from emu.experiments.plots import utilization
from emu.experiments.report import port_series
from emu.experiments.sampler import Snapshot

RATE = 1e6
KEY = ("leaf1", 1)


def _saturated(frame: int, frames: int, every: int) -> list[Snapshot]:
    """Port counters of a link sending `frame`-byte frames back to back, read every
    `every` frames."""
    ft = (frame + WIRE_OVERHEAD_BYTES) * 8 / RATE
    return [Snapshot(k * every * ft, {KEY: PortCount(tx_pkts=k * every, tx_bytes=k * every * frame)})
            for k in range(frames // every + 1)]


@pytest.mark.parametrize("frame", [1082, 256 + 58])
def test_a_saturated_link_reads_100_percent_in_the_plot_and_the_summary(frame: int) -> None:
    """Before: the plot counted frame bytes only (97.8% for 1082 B frames, 92.9% for
    314 B ones), the summary 20 B per frame (99.6%); the link carried 24 B more each."""
    snaps = _saturated(frame, 1000, 10)
    series = port_series(snaps)[KEY]
    assert series[1] == (snaps[1].t_s, 10 * (frame + WIRE_OVERHEAD_BYTES))
    curve = utilization(series, RATE, 0.0, 0)
    assert len(curve) == 100 and all(u == pytest.approx(1.0, abs=1e-9) for _, u in curve)
    last = snaps[-1]
    u, key = busiest_link_utilisation(last.ports, {KEY: RATE}, last.t_s)
    assert key == KEY and u == pytest.approx(1.0, abs=1e-9)
    # half the window busy reads 50%: the summary's cap at 100% hides nothing here
    u, _ = busiest_link_utilisation(last.ports, {KEY: RATE}, 2 * last.t_s)
    assert u == pytest.approx(0.5, abs=1e-9)
