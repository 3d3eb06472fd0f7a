"""The virtual fabric carries frames at the link rate counting what each frame costs on
the wire beyond its bytes (preamble, FCS, inter-frame gap: emu.core.wire), at the
switches as at the NICs. The switches' egress ports used to serialise the frame bytes
alone, so a bottleneck port drained 2% (1 KiB MTU) faster than its link can."""

from __future__ import annotations

from emu.core.wire import WIRE_OVERHEAD_BYTES
from emu.experiments.incast import IncastSpec, run_incast


def test_an_incast_takes_at_least_the_wire_time_of_its_frames() -> None:
    spec = IncastSpec(senders=2, flow_bytes=512 * 1024, cc="none", mtu_bytes=1024,
                      buffer_bytes=4 * 1024 * 1024)
    rec = run_incast(spec)
    assert rec.delivered_ok and rec.drops == 0
    wire_bytes = rec.frame_bytes_delivered + rec.frames * WIRE_OVERHEAD_BYTES
    wire_ns = wire_bytes * 8 / spec.link_rate_bps * 1e9
    # the bottleneck (the receiver's port) is busy from its first frame to its last
    assert rec.completion_ns >= wire_ns, (rec.completion_ns, wire_ns)
    assert rec.completion_ns <= 1.02 * wire_ns, (rec.completion_ns, wire_ns)
