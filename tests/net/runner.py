"""A run for tests to kill or stop: brings up TOPO with the `sleep` stand-in target.

    python tests/net/runner.py TOPO RUN_DIR [--ready-delay S] [--target embedded] [--lock-wait S]
                               [--no-reaper]

Prints UP once the network is up, then waits for a signal. With a long
--ready-delay it stays mid-setup (switches launched, waiting for readiness).
--target embedded runs real switch daemons (tests/switch/p4/ecmp_ecn.p4, unprogrammed).
--no-reaper: a killed runner leaves its mess for `emu stop` (the tests of emu stop).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from emu.net import EmuNet  # noqa: E402
from emu.targets import SwitchTarget, get_target  # noqa: E402
from emu.topo import load_topology  # noqa: E402
from tests.net.standin import PIPELINE, SleepTarget  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("topo")
    ap.add_argument("run_dir")
    ap.add_argument("--ready-delay", type=float, default=0.0)
    ap.add_argument("--target", default="standin")
    ap.add_argument("--lock-wait", type=float, default=0.0)
    ap.add_argument("--no-reaper", action="store_true")
    args = ap.parse_args()
    if args.target == "standin":
        target: SwitchTarget = SleepTarget(ready_delay_s=args.ready_delay)
        pipeline = PIPELINE
    else:
        target = get_target(args.target)
        pipeline = target.compile(REPO / "tests" / "switch" / "p4" / "ecmp_ecn.p4",
                                  Path(args.run_dir) / "build")
    try:
        with EmuNet(load_topology(args.topo), target, args.run_dir, pipeline=pipeline,
                    lock_wait_s=args.lock_wait, reaper=not args.no_reaper):
            print("UP", flush=True)
            while True:
                time.sleep(1)
    except KeyboardInterrupt:
        print("INTERRUPTED", flush=True)
        return 130


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
