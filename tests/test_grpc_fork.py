"""gRPC's fork handlers are off in emu processes and what they start: emu forks only
to exec, and with the handlers on, a run that started switches while its threads
polled them over gRPC aborted now and then ("epoll_wait error: Bad file descriptor",
grpc/grpc#43055; seen once in CI on `emu run`)."""

from __future__ import annotations

import os
import subprocess
import sys


def _env_without_the_setting() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("GRPC_ENABLE_FORK_SUPPORT", None)
    return env


def test_importing_emu_turns_grpc_fork_support_off_before_grpc_loads() -> None:
    code = ("import emu.targets.proc, grpc, os, subprocess\n"
            "print(os.environ['GRPC_ENABLE_FORK_SUPPORT'])\n"
            "print(subprocess.run(['sh', '-c', 'echo $GRPC_ENABLE_FORK_SUPPORT'],"
            " capture_output=True, text=True).stdout.strip())\n")
    out = subprocess.run([sys.executable, "-c", code], env=_env_without_the_setting(),
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "0"]  # in the process, and inherited by what it starts


def test_a_users_own_setting_is_kept() -> None:
    env = _env_without_the_setting() | {"GRPC_ENABLE_FORK_SUPPORT": "1"}
    out = subprocess.run([sys.executable, "-c", "import emu, os; print(os.environ['GRPC_ENABLE_FORK_SUPPORT'])"],
                         env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert out == "1"
