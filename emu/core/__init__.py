"""The two seams every part of the emulator shares: a clock with timers and a frame port.

Switches and hosts are written against `Clock` and `FramePort`, so the same code
runs on real interfaces in real time (`RealClock`, `AfPacketPort`) and in virtual
time on in-memory links (`VirtualClock`, `MemLink`).

Beside them, what every layer above needs from one place: `units` (time dilation),
`wire` (EtherTypes, the RoCEv2 port, DSCPs, BTH opcodes), `netns` and `runstate` (the
run record and lock that `emu stop` works from), `reaper` (removes what the record lists
once its runner is killed), `cachedir` (files kept between runs),
`accel` (the mypyc build of the per-packet modules, used when it matches the sources),
`argtypes` (option types that refuse NaN and out-of-range values in one line),
`fdlimit` (the open-file limit raised for runs that hold many files).

Imports: nothing else of emu. Layer 1 (bottom) of the package layers that
pyproject.toml's import-linter contracts enforce; nothing above it.
"""

from emu.core.accel import install

# First: the compiled build of the per-packet modules (clock and port among them) is
# only used if its finder is in place before any of them is imported.
install()

from emu.core.clock import Clock, RealClock, TimerHandle, VirtualClock  # noqa: E402
from emu.core.port import AfPacketPort, FramePort, MemLink, PortStats  # noqa: E402

__all__ = [
    "AfPacketPort",
    "Clock",
    "FramePort",
    "MemLink",
    "PortStats",
    "RealClock",
    "TimerHandle",
    "VirtualClock",
]
