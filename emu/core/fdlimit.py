"""The process's open-file limit, raised within what the system allows.

A virtual run that captures every switch port holds two pcap files per port open for the
whole run: 1,280 on a k=8 fat tree, past the soft limit of 1,024 many systems start a
process with. The soft limit is the process's own and may be raised up to the hard
limit without privileges (as Mininet does for the runs it starts)."""

from __future__ import annotations

import resource

HEADROOM = 512
"""Files a process opens beside the ones it holds for a run: modules it still imports,
results, sockets, pipes."""


def ensure_open_files(needed: int) -> int:
    """Raise the soft RLIMIT_NOFILE to at least `needed` (never above the hard limit,
    never lowered); the soft limit in force afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return soft
    target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):  # a platform that refuses: keep what there is
            return soft
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
