"""emu: packet-level emulator of AI-training RoCEv2 fabrics with P4 switches."""

__version__ = "0.1.0"

# emu.core goes first: it installs the finder of the compiled per-packet modules
# (emu.core.accel), which must precede the import of any of them, whichever emu
# module a program imports first.
import emu.core  # noqa: E402, F401
