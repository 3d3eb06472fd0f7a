"""emu: packet-level emulator of AI-training RoCEv2 fabrics with P4 switches."""

__version__ = "0.1.0"

import os as _os

# Before anything imports grpc: emu forks only to exec (switches, agents, tools), which
# gRPC always supports, and its fork handlers race its poller threads when a process
# with live channels starts a child: the parent or the child then aborts with "epoll_wait
# error: Bad file descriptor" (grpc/grpc#43055). Disabled unless the user says otherwise.
_os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

# emu.core goes first: it installs the finder of the compiled per-packet modules
# (emu.core.accel), which must precede the import of any of them, whichever emu
# module a program imports first.
import emu.core  # noqa: E402, F401
