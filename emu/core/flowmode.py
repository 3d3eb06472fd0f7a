"""Flow-control modes of a run (`emu run --flow-control`, `make run FC=`).

NONE: lossy Ethernet (tail drop; the transport recovers). PFC: IEEE 802.1Qbb priority
flow control (emu.core.pfc). CREDIT: credit-based link-level flow control (its own
module; a run that asks for it before it exists is refused with one line).
"""

from __future__ import annotations

from enum import Enum

__all__ = ["FlowControlMode", "WATCHDOG_MODES"]


class FlowControlMode(str, Enum):
    NONE = "none"
    PFC = "pfc"
    CREDIT = "credit"

    @property
    def lossless(self) -> bool:
        """Whether the data class is lossless (its packets are held, never dropped)."""
        return self is not FlowControlMode.NONE


# The PFC watchdog's action (emu.core.pfc.WatchdogSettings), or off.
WATCHDOG_MODES = ("off", "forward", "drop", "alert")
