"""Runs a p4c-style STF test against the embedded v1model switch.

Follows p4c's backends/bmv2/bmv2stf.py: commands run in file order; table and action
names match exactly or by a unique suffix; key fields are named as in P4Info
(`hdr.h.$valid$` for isValid(), @name honoured) and match by name, suffix or bmv2stf's
`h.valid` spelling (see StfRunner.key_index); packets are processed to completion in
virtual time one after another; outputs are compared per port, in order, by
`emu.p4.stf.expect.check_outputs`. STF priorities pass through unchanged (larger wins
here as in BMv2 after bmv2stf's 10000 - prio); ternary entries without one get
decreasing priorities so that the entry added first wins.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from emu.core.clock import VirtualClock
from emu.p4.api import MAX_IDLE_EVENTS, P4Switch, PipelineBusy, resolve_name
from emu.p4.stf import model as M
from emu.p4.stf.expect import check_outputs
from emu.p4.stf.parser import parse_stf
from emu.p4.stf.values import parse_key, parse_number
from emu.p4.tables import Exact, Lpm, Optional, Range, Table, TableError, Ternary
from emu.p4.target.program import CompiledProgram, compile_file
from emu.p4.v1model.replication import ReplicationError
from emu.p4.v1model.stateful import MeterRates

_AUTO_PRIORITY_TOP = 1 << 20


@dataclass
class StfResult:
    ok: bool
    report: str = ""
    problems: list[str] = field(default_factory=list)
    outputs: dict[int, list[bytes]] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return self.ok


class StfRunner:
    def __init__(self, program: CompiledProgram) -> None:
        self.program = program
        self.sw = P4Switch(program, VirtualClock())
        self.key_info = {t["name"]: t["keys"] for t in program.info.tables}
        self.auto_prio: dict[str, int] = {}
        self.notes: list[str] = []
        self.failed_checks: list[str] = []

    def key_index(self, table: str, name: str) -> int:
        """Index of the key field `name` names, following bmv2stf.py's spellings.

        Keys are named as in P4Info (`hdr.h.$valid$`, @name honoured). STF files use that
        name, BMv2's JSON target (`h.$valid$`), a suffix of either, `h.valid` or the header
        alone for an isValid() key, and `x$0` for `x[0]`.
        """
        keys = self.key_info[table]
        name = re.sub(r"\$(\d+)", r"[\1]", name)
        spellings = [name, name + ".$valid$"]
        if name.endswith(".valid") or name == "valid":
            spellings.append(name[: -len("valid")] + "$valid$")
        # the P4Info names first, then the source text of the key expression
        for form in ("name", "text"):
            names = [k[form].replace(".isValid()", ".$valid$") for k in keys]
            for sp in spellings:
                if sp in names:
                    return names.index(sp)
            for sp in spellings:
                cands = [i for i, n in enumerate(names) if n.endswith("." + sp)]
                if len(cands) == 1:
                    return cands[0]
        raise KeyError(f"table {table}: no key field {name!r}")

    def field_match(self, key: dict[str, Any], text: str) -> Any:
        kind = key["match_kind"]
        w = key["bitwidth"]
        if kind == "range":
            if "->" in text:
                lo, hi = text.split("->", 1)
                return Range(parse_number(lo), parse_number(hi))
            v = parse_number(text)
            return Range(v, v)
        if kind == "optional":
            if "*" in text:
                return Optional(None)
            return Optional(parse_number(text) & ((1 << w) - 1))
        km = parse_key(text, "exact" if kind == "selector" else kind, w)
        if kind == "exact":
            return Exact(km.value)
        if kind == "lpm":
            return Lpm(km.value & km.mask, km.prefix_len or 0)
        return Ternary(km.value & km.mask, km.mask)

    def add(self, cmd: M.Add) -> None:
        sw = self.sw
        tname = resolve_name(cmd.table, sw.tables, "table")
        t: Table = sw.tables[tname]
        keys = [k for k in self.key_info[tname] if k["match_kind"] != "selector"]
        match: list[Any] = [None] * len(keys)
        for kname, val in cmd.keys:
            i = self.key_index(tname, kname)
            match[i] = self.field_match(self.key_info[tname][i], val)
        action = sw.action_name(t, cmd.action)
        params = self.action_params(action, cmd.params)
        prio = 0
        if t.needs_priority:
            if cmd.priority is not None:
                prio = cmd.priority + 1  # STF allows 0; ours start at 1 (order kept)
            else:
                prio = self.auto_prio.get(tname, _AUTO_PRIORITY_TOP)
                self.auto_prio[tname] = prio - 1
        from emu.p4.tables import ActionCall

        t.insert(match, ActionCall(action, params), priority=prio)

    def action_params(self, action: str, given: Sequence[tuple[str, str]]) -> tuple[int, ...]:
        spec = self.program.info.actions.get(action, [])
        by = dict(given)
        out = []
        for i, (pname, w) in enumerate(spec):
            if pname in by:
                v = by[pname]
            elif i < len(given):
                v = given[i][1]
            else:
                raise KeyError(f"action {action}: missing parameter {pname}")
            out.append(parse_number(v) & ((1 << w) - 1))
        return tuple(out)

    def run(self, commands: Sequence[M.StfCommand], filename: str = "<stf>") -> StfResult:
        """Run the commands; one the switch refuses (no such table, a duplicate entry, an
        index out of range...) raises StfError at its line, as a syntax error does."""
        outputs: dict[int, list[bytes]] = {}
        self.sw.on_output(lambda p: outputs.setdefault(p.port, []).append(p.data))
        for cmd in commands:
            self.command_at(cmd, filename)
        expected, named = M.expectations(commands)
        res = check_outputs(expected, outputs, named)
        problems = list(res.problems) + self.failed_checks
        return StfResult(not problems, res.report + ("\n" + "\n".join(self.failed_checks) if self.failed_checks else ""),
                         problems, outputs)

    def command_at(self, cmd: M.StfCommand, filename: str) -> None:
        """`command`, with the switch's refusal as an StfError at the command's line."""
        try:
            self.command(cmd)
        except (LookupError, ValueError, TableError, ReplicationError, PipelineBusy) as exc:
            # KeyError's str() is its argument's repr; the message is the argument
            text = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
            raise M.StfError(filename, cmd.line, str(text)) from None

    def command(self, cmd: M.StfCommand) -> None:
        sw = self.sw
        if isinstance(cmd, M.Packet):
            sw.inject(cmd.port, cmd.data)
            sw.run_until_idle(MAX_IDLE_EVENTS)
        elif isinstance(cmd, M.Expect | M.NoPacket | M.Unknown):
            pass
        elif isinstance(cmd, M.Add):
            self.add(cmd)
        elif isinstance(cmd, M.SetDefault):
            t = sw.table(cmd.table)
            action = sw.action_name(t, cmd.action)
            sw.table_set_default(t.name, action, self.action_params(action, cmd.params))
        elif isinstance(cmd, M.RemoveAll):
            sw.table_clear()
        elif isinstance(cmd, M.Wait):
            sw.run_until_idle(MAX_IDLE_EVENTS)
        elif isinstance(cmd, M.McMgrpCreate):
            sw.mc_mgrp_create(cmd.group)
        elif isinstance(cmd, M.McNodeCreate):
            sw.mc_node_create(cmd.rid, cmd.ports)
        elif isinstance(cmd, M.McNodeAssociate):
            sw.mc_node_associate(cmd.group, cmd.handle)
        elif isinstance(cmd, M.McNodeDissociate):
            sw.sw.pre.mc_node_dissociate(cmd.group, cmd.handle)
        elif isinstance(cmd, M.McNodeDestroy):
            sw.sw.pre.mc_node_destroy(cmd.handle)
        elif isinstance(cmd, M.McMgrpDestroy):
            sw.sw.pre.mc_mgrp_destroy(cmd.group)
        elif isinstance(cmd, M.MirroringAdd):
            sw.mirroring_add(cmd.session, cmd.port)
        elif isinstance(cmd, M.MirroringDelete):
            sw.sw.pre.mirroring_delete(cmd.session)
        elif isinstance(cmd, M.RegisterWrite):
            sw.register_write(cmd.register, cmd.index, cmd.value)
        elif isinstance(cmd, M.RegisterRead):
            self.notes.append(f"{cmd.register}[{cmd.index}] = {sw.register_read(cmd.register, cmd.index)}")
        elif isinstance(cmd, M.RegisterReset):
            sw.register_reset(cmd.register)
        elif isinstance(cmd, M.CounterRead):
            self.notes.append(f"{cmd.counter}[{cmd.index}] = {sw.counter_read(cmd.counter, cmd.index)}")
        elif isinstance(cmd, M.CounterWrite):
            sw.counter_write(cmd.counter, cmd.index, cmd.packets, cmd.bytes)
        elif isinstance(cmd, M.CounterReset):
            sw.counter_reset(cmd.counter)
        elif isinstance(cmd, M.MeterSetRates):
            self.meter_set_rates(cmd)
        elif isinstance(cmd, M.PvsAdd | M.PvsRemove | M.PvsClear):
            self.value_set_command(cmd)
        elif isinstance(cmd, M.SetQueueDepth):
            sw.set_queue_depth(cmd.depth_pkts, cmd.port)
        elif isinstance(cmd, M.SetQueueRate):
            sw.set_queue_rate(cmd.port, rate_pps=cmd.rate_pps)
        elif isinstance(cmd, M.CheckCounter):
            self.check_counter(cmd)

    def meter_set_rates(self, cmd: M.MeterSetRates) -> None:
        """Indirect meters by index; for a direct meter the index is the entry handle, as
        in BMv2's CLI."""
        sw = self.sw.sw
        name = resolve_name(cmd.meter, list(sw.meters) + list(sw.direct_meters), "meter")
        if name in sw.meters:
            self.sw.meter_set_rates(name, cmd.index, cmd.rates)
            return
        (cir, cbs), (pir, pbs) = cmd.rates
        rates = MeterRates(cir, cbs, pir, pbs)
        for t in self.program.info.tables:
            if t.get("direct_meter") != name:
                continue
            for e in sw.tables[t["name"]].entries():
                if e.handle == cmd.index:
                    e.meter_config = rates
                    e.meter_state = None  # rebuilt (buckets full) on the next hit
                    return
        raise KeyError(f"direct_meter {name}: no entry with handle {cmd.index}")

    def value_set_command(self, cmd: M.PvsAdd | M.PvsRemove | M.PvsClear) -> None:
        vs = self.sw.sw.value_sets[resolve_name(cmd.value_set, self.sw.sw.value_sets, "value_set")]
        if isinstance(cmd, M.PvsClear):
            vs.clear()
            return
        # One concatenated value for a struct-typed set: split it, first field on top.
        fields = []
        rest = cmd.value
        for w in reversed(vs.widths):
            fields.append(rest & ((1 << w) - 1))
            rest >>= w
        values = tuple(reversed(fields))
        if isinstance(cmd, M.PvsAdd):
            vs.add(values)
            return
        full = tuple((v, (1 << w) - 1) for v, w in zip(values, vs.widths, strict=True))
        if full not in vs.entries:
            raise KeyError(f"value_set {vs.name}: {cmd.value:#x} is not a member")
        vs.entries.remove(full)

    def check_counter(self, cmd: M.CheckCounter) -> None:
        self.sw.run_until_idle(MAX_IDLE_EVENTS)
        idx = int(cmd.index) if cmd.index.isdecimal() else 0
        packets, nbytes = self.sw.counter_read(cmd.counter, idx)
        if cmd.kind is None or cmd.value is None or cmd.op is None:
            return
        have = packets if cmd.kind == "packets" else nbytes
        ok = {"==": have == cmd.value, "!=": have != cmd.value, "<": have < cmd.value,
              "<=": have <= cmd.value, ">": have > cmd.value, ">=": have >= cmd.value}[cmd.op]
        if not ok:
            self.failed_checks.append(
                f"check_counter {cmd.counter}({cmd.index}): {cmd.kind} {have} {cmd.op} {cmd.value} fails")


def run_stf(p4_path: str | Path, stf_path: str | Path, include_dirs: Sequence[str] = (),
            defines: Mapping[str, str] | None = None) -> StfResult:
    """Compile `p4_path`, run the STF test in `stf_path`; `ok` when every expectation holds."""
    program = compile_file(str(p4_path), include_dirs, defines)
    text = Path(stf_path).read_text()
    return StfRunner(program).run(parse_stf(text, str(stf_path), strict=False), str(stf_path))


__all__ = ["StfResult", "StfRunner", "run_stf"]
