"""Signal handling of long commands (emu.core.signals), in processes of their own: a
signal that gets past the handlers under test must not reach pytest."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.timeout(60)

IGNORED_STAYS_IGNORED = """
import os, signal, sys
from emu.core import signals
sig = signal.Signals[sys.argv[1]]
signal.signal(sig, signal.SIG_IGN)  # as `nohup` (SIGHUP) or a background job (SIGINT) leave it
old = signals.{call}
os.kill(os.getpid(), sig)
print("still running")
"""


@pytest.mark.parametrize("call, sig", [("arm()", "SIGHUP"), ("arm()", "SIGTERM"),
                                       ("stop_requests().__enter__()", "SIGHUP"),
                                       ("stop_requests().__enter__()", "SIGINT")])
def test_a_signal_the_parent_ignores_stays_ignored(call: str, sig: str) -> None:
    """`nohup emu run ...` ignores SIGHUP so that the run outlives its terminal; arming
    the unwinding handlers replaced that, and closing the terminal ended the run."""
    p = subprocess.run([sys.executable, "-c", IGNORED_STAYS_IGNORED.replace("{call}", call),
                        sig], capture_output=True, text=True, timeout=30)
    assert (p.returncode, p.stdout.strip()) == (0, "still running"), p.stderr[-1500:]


STOP_REQUESTS = """
import os, signal, sys
from emu.core import signals
signal.signal(signal.SIGINT, signal.default_int_handler)
with signals.stop_requests() as stop:
    assert not stop.requested
    os.kill(os.getpid(), signal.Signals[sys.argv[1]])
    print("recorded", stop.describe(), flush=True)
    try:
        os.kill(os.getpid(), signal.Signals[sys.argv[2]])
    except KeyboardInterrupt as exc:
        print("second raised", type(exc).__name__, exc, flush=True)
print("restored", signal.getsignal(signal.SIGINT) is signal.default_int_handler,
      signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
"""


@pytest.mark.parametrize("first, second, said", [
    ("SIGINT", "SIGINT", ["recorded Ctrl-C", "second raised KeyboardInterrupt"]),
    ("SIGTERM", "SIGINT", ["recorded signal SIGTERM", "second raised KeyboardInterrupt"]),
    ("SIGHUP", "SIGTERM", ["recorded signal SIGHUP",
                           "second raised Interrupted signal SIGTERM"]),
])
def test_the_first_stop_signal_is_recorded_and_the_second_raises(first: str, second: str,
                                                                  said: list[str]) -> None:
    p = subprocess.run([sys.executable, "-c", STOP_REQUESTS, first, second],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr[-1500:]
    lines = [ln.rstrip() for ln in p.stdout.splitlines()]
    assert lines == [*said, "restored True True"], p.stdout


NESTED = """
import os, signal, sys
from emu.core import signals
sig = signal.Signals[sys.argv[1]]
with signals.{outer}() as outer:
    with signals.stop_requests() as inner:
        os.kill(os.getpid(), sig)
    print("inner", inner.describe(), "outer", outer.describe() or "-", flush=True)
    try:
        os.kill(os.getpid(), sig)
        print("outer recorded again", outer.describe())
    except KeyboardInterrupt as exc:
        print("outer raised", type(exc).__name__)
"""


@pytest.mark.parametrize("outer, sig, said", [
    ("stop_requests", "SIGTERM", ["inner signal SIGTERM outer signal SIGTERM",
                                  "outer raised Interrupted"]),
    ("stop_requests", "SIGINT", ["inner Ctrl-C outer Ctrl-C", "outer raised KeyboardInterrupt"]),
    ("unwinding_on_termination", "SIGHUP", ["inner signal SIGHUP outer signal SIGHUP",
                                            "outer raised Interrupted"]),
])
def test_a_signal_an_inner_block_recorded_is_the_outer_blocks_too(outer: str, sig: str,
                                                                 said: list[str]) -> None:
    """A workload run from the Mininet CLI records a SIGTERM in its own loop and ends;
    the CLI around it must learn of it, or the run goes on after `kill`."""
    p = subprocess.run([sys.executable, "-c", NESTED.replace("{outer}", outer), sig],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr[-1500:]
    assert p.stdout.splitlines() == said, p.stdout
