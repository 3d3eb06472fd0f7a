"""Flow-control modes of a run (`emu run --flow-control`, `make run FC=`).

NONE: lossy Ethernet (tail drop; the transport recovers). PFC: IEEE 802.1Qbb priority
flow control (emu.core.pfc). CREDIT: credit-based link-level flow control
(emu.core.credit, docs/credit.md).
"""

from __future__ import annotations

from enum import Enum
from typing import Literal, get_args

__all__ = ["FlowControlMode", "WATCHDOG_MODES", "WatchdogAction", "WatchdogMode"]


class FlowControlMode(str, Enum):
    NONE = "none"
    PFC = "pfc"
    CREDIT = "credit"

    @property
    def lossless(self) -> bool:
        """Whether the data class is lossless (its packets are held, never dropped)."""
        return self is not FlowControlMode.NONE


# What the PFC watchdog does to a queue paused too long (emu.core.pfc.WatchdogSettings).
WatchdogAction = Literal["forward", "drop", "alert"]
# A run's watchdog setting: an action, or off.
WatchdogMode = Literal["off", WatchdogAction]
WATCHDOG_MODES: tuple[str, ...] = get_args(WatchdogMode)
