"""The two seams every part of the emulator shares: a clock with timers and a frame port.

Switches and hosts are written against `Clock` and `FramePort`, so the same code
runs on real interfaces in real time (`RealClock`, `AfPacketPort`) and in virtual
time on in-memory links (`VirtualClock`, `MemLink`).
"""

from emu.core.clock import Clock, RealClock, TimerHandle, VirtualClock
from emu.core.port import AfPacketPort, FramePort, MemLink, PortStats

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
