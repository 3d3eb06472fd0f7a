"""Switch targets behind one interface: the embedded Python switch and BMv2.

`get_target(name)` returns a `SwitchTarget`; everything above (Mininet nodes,
experiments) is written against `emu.targets.base` only.

Imports: emu.sim and every layer below it. Layer 8 of the package layers that
pyproject.toml's import-linter contracts enforce; nothing above it.
"""

from emu.targets import base
from emu.targets.base import *  # noqa: F403 - the interface, as base.__all__ lists it
from emu.targets.base import SwitchTarget

__all__ = ["TARGET_NAMES", "available_targets", "get_target", "require_target"]
__all__ += base.__all__

TARGET_NAMES = ("embedded", "bmv2")


def get_target(name: str) -> SwitchTarget:
    """The target called `name` ("embedded" or "bmv2")."""
    if name == "embedded":
        from emu.targets.embedded import EmbeddedTarget

        return EmbeddedTarget()
    if name == "bmv2":
        from emu.targets.bmv2 import Bmv2Target

        return Bmv2Target()
    raise ValueError(f"unknown switch target {name!r} (choose embedded or bmv2)")


def available_targets() -> list[str]:
    """Names of the targets whose tools are installed here."""
    return [n for n in TARGET_NAMES if not get_target(n).missing()]


def require_target(name: str) -> SwitchTarget:
    """`get_target(name)`, raising TargetUnavailable (one line: what is missing and how to
    get it) when its tools are not installed. Front ends print the message and exit 1."""
    target = get_target(name)
    target.check_available()
    return target
