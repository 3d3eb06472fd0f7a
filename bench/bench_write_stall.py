"""How long a P4Runtime Write batch stops forwarding (prints figures; not a test).

Run: .venv/bin/python bench/bench_write_stall.py [--sizes 1000,5000,100000]

The switch loop runs on its own thread as in the daemon; the server applies a batch
in data-path turns (Device.call), during which no packet is processed. The stall is
the longest such turn. CONTINUE_ON_ERROR and ROLLBACK_ON_ERROR batches run in chunks
of atomicity.CHUNK updates; a DATAPLANE_ATOMIC batch is one turn (it must appear
atomically to packets), so its stall grows with the batch: per update figures below.
Target: a batch of a few thousand stalls forwarding < 50 ms (non-atomic modes).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from google.protobuf import text_format  # noqa: E402
from p4.config.v1 import p4info_pb2  # noqa: E402
from p4.v1 import p4runtime_pb2  # noqa: E402

from bench._machine import describe  # noqa: E402
from emu.runtime.atomicity import CHUNK  # noqa: E402
from emu.runtime.client import P4RuntimeClient  # noqa: E402
from emu.runtime.devconfig import make_null_config  # noqa: E402
from emu.runtime.device import LocalDevice  # noqa: E402
from emu.runtime.server import P4RuntimeServer  # noqa: E402
from emu.switch.clock import PreciseClock  # noqa: E402
from emu.switch.daemon import _settle_gc  # noqa: E402

CP_P4INFO = Path(__file__).resolve().parent.parent / "tests/runtime/p4/cp.p4info.txtpb"
U = p4runtime_pb2.Update
WR = p4runtime_pb2.WriteRequest
MODES = {"CONTINUE_ON_ERROR": WR.CONTINUE_ON_ERROR, "ROLLBACK_ON_ERROR": WR.ROLLBACK_ON_ERROR,
         "DATAPLANE_ATOMIC": WR.DATAPLANE_ATOMIC}


def measure(sizes: list[int]) -> list[tuple[str, int, float, float, float, float]]:
    info = p4info_pb2.P4Info()
    text_format.Parse(CP_P4INFO.read_text(), info)
    fwd = next(t for t in info.tables if t.preamble.name == "MyIngress.fwd")
    fwd.size = max(sizes) + 1
    clock = PreciseClock(spin_ns=0)
    device = LocalDevice(1, clock, cpu_port=255)
    _settle_gc()  # the daemon's collector settings
    turns: list[float] = []
    plain_call = device.call

    def timed_call(fn: Any) -> Any:
        def run() -> Any:
            t0 = time.perf_counter()
            try:
                return fn()
            finally:
                turns.append(time.perf_counter() - t0)
        return plain_call(run)

    device.call = timed_call  # type: ignore[method-assign]
    server = P4RuntimeServer(device)
    path = f"/tmp/emu-bench-{uuid.uuid4().hex[:8]}.sock"
    server.start(f"unix:{path}")

    def loop() -> None:
        device.loop_thread = threading.get_ident()
        clock.run()

    th = threading.Thread(target=loop, daemon=True)
    th.start()
    out = []
    c = P4RuntimeClient(f"unix:{path}", 1, (0, 1), timeout_s=600)
    try:
        for n in sizes:
            for name, mode in MODES.items():
                c.set_pipeline(info, make_null_config())  # an empty table each time
                ups = [U(type=U.INSERT, entity=c.table_entry(
                    "MyIngress.fwd", {"hdr.ethernet.dstAddr": i + 1}, "MyIngress.drop"))
                    for i in range(n)]
                turns.clear()
                t0 = time.perf_counter()
                c.write(ups, atomicity=mode)
                total = time.perf_counter() - t0
                turns.sort()
                out.append((name, n, turns[len(turns) // 2] * 1e3, turns[-1] * 1e3,
                            sum(turns) / n * 1e6, total))
    finally:
        c.close()
        server.stop(0)
        clock.call_soon_threadsafe(clock.stop)
        th.join(5)
        clock.close()
        if os.path.exists(path):
            os.unlink(path)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,5000,100000",
                    help="batch sizes, comma-separated (default %(default)s)")
    args = ap.parse_args()
    sizes = [int(x) for x in args.sizes.split(",")]
    print(describe())
    print(f"chunk = {CHUNK} updates (CONTINUE_ON_ERROR, ROLLBACK_ON_ERROR)")
    print("stall: data-path turns of one batch (median, longest); us/update: their sum / n")
    print(f"{'atomicity':<20} {'updates':>8} {'stall p50 ms':>13} {'max ms':>8} "
          f"{'us/update':>10} {'write s':>8}")
    for name, n, p50_ms, worst_ms, per_us, total in measure(sizes):
        print(f"{name:<20} {n:>8} {p50_ms:>13.1f} {worst_ms:>8.1f} {per_us:>10.1f} "
              f"{total:>8.2f}")


if __name__ == "__main__":
    main()
