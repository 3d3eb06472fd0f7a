"""`python -m emu.roce agent --iface IFACE --config FILE [--results FILE] [--status-file F]
[--progress-s S] [--start-on-stdin]`."""

from __future__ import annotations

import argparse
import sys

from emu.core.argtypes import non_negative


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m emu.roce", description="RoCEv2 host stack")
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("agent", help="run a host agent on an interface")
    a.add_argument("--iface", required=True)
    a.add_argument("--config", required=True, help="YAML or JSON agent configuration")
    a.add_argument("--results", help="JSON-lines results file (default: stdout)")
    a.add_argument("--status-file", help="file that reads ready/done/partial/error")
    a.add_argument("--linger-s", type=non_negative, default=0.3,
                   help="keep answering the peer this long after finishing")
    a.add_argument("--progress-s", type=non_negative, default=0.0, metavar="S",
                   help="print a JSON `progress` line (counters so far) on stdout every S "
                        "seconds (default 0: never)")
    a.add_argument("--pfc", metavar="JSON", default=None,
                   help='honour PFC PAUSE from the leaf: {"lossless": [3], '
                        '"dscp_priority": {"26": 3, "48": 7}} (default: no flow control)')
    a.add_argument("--start-on-stdin", action="store_true",
                   help="after READY, wait for a line `START <ns>` on stdin and count the "
                        "workload's time (flows' start_us, reported times) from the instant "
                        "time.monotonic_ns() reads ns: agents of one run share one epoch")
    args = ap.parse_args(argv)
    from emu.roce.agent import run

    return run(args.iface, args.config, args.results, args.status_file, args.linger_s,
               progress_s=args.progress_s, pfc=args.pfc,
               start_on_stdin=args.start_on_stdin)


if __name__ == "__main__":
    sys.exit(main())
