"""An STF file's table set-up as writes for both sides of a crosscheck.

Its table commands (`add`, `setdefault`, `remove all`) and replication commands
(`mc_*`, `mirroring_*`) run, in file order, on an in-process switch through the STF
runner (emu.p4.stf), so that names, values and priorities mean what they mean in
`emu stf`; the tables and the replication engine are then read back as P4Runtime
entries, default actions, multicast groups and clone sessions, which both sides get.
The packets stay apart: all of it is in place before the first packet, wherever the
file sets it up. Other set-up (meter rates, registers, counters, value sets, queues)
is not carried over; `Programming.notes` says which commands were left out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from emu.control import CloneSession, MulticastGroup, TableEntry
from emu.p4 import tables as T
from emu.p4.stf import model as M
from emu.p4.stf.parser import parse_stf
from emu.p4.stf.runner import StfRunner
from emu.p4.target.program import compile_file
from emu.p4.v1model.replication import Replica

from .programming import DefaultAction, Programming

# The set-up that becomes writes: table entries, default actions, the replication engine.
_CARRIED = (M.Add, M.SetDefault, M.RemoveAll, M.McMgrpCreate, M.McMgrpDestroy, M.McNodeCreate,
            M.McNodeAssociate, M.McNodeDissociate, M.McNodeDestroy, M.MirroringAdd,
            M.MirroringDelete)
# Commands with no set-up in them (packets, expectations, checks, waits).
_NOT_SETUP = (M.Packet, M.Expect, M.NoPacket, M.Wait, M.CheckCounter, M.RegisterRead,
              M.CounterRead, M.Unknown)


def stf_programming(stf: Path, program: Path, include_dirs: Sequence[Path],
                    ports: list[int]) -> Programming:
    """The table entries, default actions, multicast groups and clone sessions `stf`
    sets up for `program`, for a switch with `ports`. A command the switch refuses is a
    ValueError at its line."""
    try:
        commands = parse_stf(stf.read_text(), str(stf))
    except M.StfError as exc:
        raise ValueError(str(exc)) from None
    runner = StfRunner(compile_file(str(program), [str(d) for d in include_dirs]))
    # the program's own initial entries (`entries = {...}`) are in place on both sides
    initial = _entry_ids(runner)
    defaults: set[str] = set()
    left_out: Counter[str] = Counter()
    for cmd in commands:
        if isinstance(cmd, _CARRIED):
            try:
                runner.command_at(cmd, str(stf))
            except M.StfError as exc:
                raise ValueError(str(exc)) from None
            if isinstance(cmd, M.SetDefault):  # (`remove all` keeps defaults, as in emu.p4 stf)
                defaults.add(runner.sw.table(cmd.table).name)
        elif not isinstance(cmd, _NOT_SETUP):
            left_out[type(cmd).__name__] += 1
    setup = Programming.entries_only(ports)
    pre = runner.sw.sw.pre
    setup.replication += [MulticastGroup(g, _pairs(copies))
                          for g, copies in sorted(pre.multicast_groups().items())]
    setup.replication += [CloneSession(c.session_id, _pairs(c.replicas), c.class_of_service,
                                       c.packet_length_bytes)
                          for _, c in sorted(pre.clone_sessions().items())]
    for info in runner.program.info.tables:
        table = runner.sw.tables[info["name"]]
        keys = [k for k in info["keys"] if k["match_kind"] != "selector"]
        for e in table.entries():
            if (table.name, e.handle, e.match) not in initial and e.action is not None:
                setup.entries.append(TableEntry(
                    table.name, _match(keys, e.match), str(e.action.action),
                    _params(runner, e.action), e.priority or None))
        if table.name in defaults:
            action = table.default_entry.action
            assert action is not None
            setup.defaults.append(DefaultAction(table.name, str(action.action),
                                                _params(runner, action)))
    gone = len(initial - _entry_ids(runner))
    if gone:
        left_out["removal of the program's initial entries"] += gone
    if left_out:
        setup.notes.append(f"{stf.name}: set-up left out (crosscheck carries table entries, "
                           f"default actions, multicast groups and clone sessions): " +
                           ", ".join(f"{n} x{c}" for n, c in sorted(left_out.items())))
    return setup


def _pairs(replicas: Sequence[Replica]) -> tuple[tuple[int, int], ...]:
    """The engine's replicas as the control API's (egress port, instance) pairs."""
    return tuple((r.egress_port, r.instance) for r in replicas)


def _entry_ids(runner: StfRunner) -> set[tuple[str, int, Any]]:
    return {(t.name, e.handle, e.match) for t in runner.sw.tables.values() for e in t.entries()}


def _params(runner: StfRunner, action: T.ActionCall) -> dict[str, int]:
    # the program's tables are built with action specs: actions are named, not numbered
    names = [name for name, _width in runner.program.info.actions.get(str(action.action), [])]
    return dict(zip(names, action.params, strict=True))


def _match(keys: Sequence[dict[str, Any]], match: Sequence[Any]) -> dict[str, Any]:
    """A table's match as the control API takes it, wildcards omitted (P4Runtime)."""
    out: dict[str, Any] = {}
    for key, m in zip(keys, match, strict=True):
        top = (1 << key["bitwidth"]) - 1
        if isinstance(m, T.Exact):
            out[key["name"]] = m.value
        elif not (isinstance(m, T.Lpm) and m.prefix_len == 0
                  or isinstance(m, T.Ternary) and m.mask == 0
                  or isinstance(m, T.Range) and (m.low, m.high) == (0, top)
                  or isinstance(m, T.Optional) and m.value is None):
            out[key["name"]] = m
    return out
