"""All-pairs reachability: one ping per ordered host pair, all in flight at once.

One shell per source host starts its pings in the background and prints one line
per destination, so a fabric of N hosts costs N processes to launch from Python
(plus the pings), and the whole check takes about one ping timeout per round.
Pairs that fail are retried (a freshly programmed software switch may drop the
very first packets while it warms up).
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Iterable, Mapping
from typing import Any

Pair = tuple[str, str]


def _probe_script(targets: Iterable[tuple[str, str]], timeout_s: int) -> str:
    lines = []
    for name, ip in targets:
        ping = f"ping -n -q -c 1 -W {timeout_s} {shlex.quote(ip)} >/dev/null 2>&1"
        lines.append(f"( {ping} && echo ok {name} || echo fail {name} ) &")
    lines.append("wait")
    return "\n".join(lines) + "\n"


def probe_round(hosts: Mapping[str, Any], pairs: list[Pair], timeout_s: int = 1) -> list[Pair]:
    """Ping each (src, dst) once, in parallel; returns the pairs that got no reply.

    `hosts`: name -> RoceHost (anything with `.popen` and `.model.ip`)."""
    by_src: dict[str, list[str]] = {}
    for src, dst in pairs:
        by_src.setdefault(src, []).append(dst)
    procs: dict[str, subprocess.Popen[str]] = {}
    for src, dsts in by_src.items():
        targets = [(d, str(hosts[d].model.ip)) for d in dsts]
        procs[src] = hosts[src].popen(["sh", "-c", _probe_script(targets, timeout_s)],
                                      text=True)
    failed: list[Pair] = []
    for src, proc in procs.items():
        try:
            out, _err = proc.communicate(timeout=timeout_s + 10)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _err = proc.communicate()
        ok = {line.split()[1] for line in out.splitlines() if line.startswith("ok ")}
        failed.extend((src, d) for d in by_src[src] if d not in ok)
    return sorted(failed)


def check_reachability(hosts: Mapping[str, Any], pairs: list[Pair] | None = None,
                       timeout_s: int = 1, attempts: int = 3) -> list[Pair]:
    """Every ordered pair of distinct hosts (or `pairs`); returns those still failing
    after `attempts` rounds (only failures are retried)."""
    todo = pairs if pairs is not None else [(a, b) for a in hosts for b in hosts if a != b]
    for _ in range(max(1, attempts)):
        if not todo:
            break
        todo = probe_round(hosts, todo, timeout_s)
    return todo
