"""The switch's tables, made from the compiled program's table info; and the check that
a program's initial entries install (done at compile time, so that a bad entry is an
error at its P4 position instead of a switch that will not start)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from emu.p4.frontend import P4Error
from emu.p4.frontend.diagnostics import Diagnostic, SourceCache
from emu.p4.tables import (
    ActionCall,
    ActionProfile,
    ActionScope,
    ActionSpec,
    InitialEntry,
    KeyField,
    MatchKind,
    Table,
    TableError,
)

from .packet import _match_input


def make_table(t: Mapping[str, Any], action_profiles: Mapping[str, ActionProfile],
               clock: Callable[[], int]) -> Table:
    """The table `t` (one of ProgramInfo.tables) with its initial entries. A TableError
    about one of them carries its position in `t["entries"]` as `entry_index`."""
    keys = [KeyField(k["name"], MatchKind(k["match_kind"]), k["bitwidth"]) for k in t["keys"]]
    actions = [ActionSpec(a["name"], param_widths=tuple(w for _, w in a["params"]),
                          scope=ActionScope(a.get("scope", "TABLE_AND_DEFAULT")))
               for a in t["actions"]]
    da = t["default_action"]
    impl = action_profiles.get(t["implementation"]) if t.get("implementation") else None
    entries = t["entries"]
    bmv2_order = any("bmv2_priority" in e for e in entries)
    table = Table(t["name"], keys, size=max(t["size"], len(entries), 1), actions=actions,
                  default_action=ActionCall(da[0], tuple(da[1])),
                  const_default_action=t["const_default_action"],
                  is_const=t["is_const"] and not bmv2_order,
                  implementation=impl, largest_priority_wins=t["largest_priority_wins"],
                  priority_delta=t["priority_delta"], support_timeout=t["support_timeout"],
                  clock=clock, direct_counter=bool(t.get("direct_counter")),
                  direct_meter=bool(t.get("direct_meter")))
    if bmv2_order:
        # @priority annotations: the smaller number wins, entries without one rank by
        # position (as p4c's BMv2 back end numbers them).
        big = 1 << 30
        for i, e in enumerate(entries):
            bp = e.get("bmv2_priority", i + 1)
            try:
                table.insert([_match_input(m) for m in e["match"]],
                             ActionCall(e["action"][0], tuple(e["action"][1])),
                             priority=(big - bp) if table.needs_priority else 0)
            except TableError as exc:
                exc.entry_index = i
                raise
        table.is_const = t["is_const"]
    elif entries:
        table.add_initial_entries([InitialEntry([_match_input(m) for m in e["match"]],
                                                ActionCall(e["action"][0], tuple(e["action"][1])),
                                                e["priority"], e["is_const"]) for e in entries],
                                  const_entries=t["is_const"])
    return table


def check_initial_entries(tables: list[dict[str, Any]]) -> None:
    """Install each table's initial entries in a scratch table: an entry the switch would
    refuse (the same key twice, a priority past int32, a range emptied by truncation) is
    a P4Error at the entry. BMv2 refuses to load such a program too."""
    for t in tables:
        if not t["entries"] or t.get("implementation"):
            continue
        try:
            make_table(t, {}, lambda: 0)
        except TableError as exc:
            i = exc.entry_index
            where = t["entries"][i].get("pos") if i is not None else t.get("pos")
            file, line, col = where or ("<program>", 0, 0)
            what = f"entry {i + 1} of table {t['name']}" if i is not None else \
                f"the entries of table {t['name']}"
            why = exc.message.removeprefix(f"{t['name']}: ")
            raise P4Error([Diagnostic(file, line, col, "error", f"{what}: {why}",
                                      SourceCache().line(file, line) if line else "")]) \
                from None
