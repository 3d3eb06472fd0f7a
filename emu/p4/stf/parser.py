"""Parse STF text into commands.

The dialect is p4c's (tools/stf/stf_lexer.py, stf_parser.py, backends/bmv2/bmv2stf.py):
one command per line, `#` starts a comment, keywords are case-insensitive; packet data may
be split by whitespace; BMv2 CLI commands (mirroring_add, mc_*, register_*, counter_*,
meter_set_rates, pvs_*, set_queue_*) pass through with their CLI arguments.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable
from typing import Any

from emu.p4.stf.expect import ExpectPattern
from emu.p4.stf.model import (
    Add,
    CheckCounter,
    CounterRead,
    CounterReset,
    CounterWrite,
    Expect,
    McMgrpCreate,
    McMgrpDestroy,
    McNodeAssociate,
    McNodeCreate,
    McNodeDestroy,
    McNodeDissociate,
    MeterSetRates,
    MirroringAdd,
    MirroringDelete,
    NoPacket,
    Packet,
    PvsAdd,
    PvsClear,
    PvsRemove,
    RegisterRead,
    RegisterReset,
    RegisterWrite,
    RemoveAll,
    SetDefault,
    SetQueueDepth,
    SetQueueRate,
    StfCommand,
    StfError,
    Unknown,
    Wait,
)
from emu.p4.stf.values import parse_number

__all__ = ["parse_stf"]


class _Syntax(Exception):
    """Raised by command parsers; parse_stf adds the location."""


_NAME = re.compile(r"^[A-Za-z_$][\w$]*(\[\d+\])?(\.[A-Za-z_$][\w$]*(\[\d+\])?)*$")
_HEXDATA = re.compile(r"^[0-9a-fA-F]*$")
_PRIORITY = re.compile(r"^\[?(\d+)\]?$")
_ACTION = re.compile(r"([A-Za-z_$][\w$.\[\]]*)\s*\(")
_CHECK = re.compile(
    r"^(?P<name>\S+?)\s*\(\s*(?P<index>[^)\s]*)\s*\)\s*"
    r"(?:(?P<kind>packets|bytes)\s*(?P<op>==|!=|<=|>=|<|>)\s*(?P<value>\S+))?$",
    re.IGNORECASE,
)


def _name(text: str, what: str) -> str:
    if not _NAME.match(text):
        raise _Syntax(f"bad {what} name {text!r}")
    return text


def _int(text: str, what: str) -> int:
    try:
        return parse_number(text)
    except ValueError:
        raise _Syntax(f"bad {what} {text!r}") from None


def _port(text: str) -> int:
    if not (text.isascii() and text.isdigit()):  # "²".isdigit(), but int() refuses it
        raise _Syntax(f"bad port {text!r} (a decimal number)")
    return int(text)


def _words(rest: str, n_min: int, n_max: int, usage: str) -> list[str]:
    words = rest.split()
    if not n_min <= len(words) <= n_max:
        raise _Syntax(f"usage: {usage}")
    return words


def _first(rest: str) -> tuple[str, str]:
    """Split off the first whitespace-separated word."""
    parts = rest.split(None, 1)
    if not parts:
        return "", ""
    return parts[0], (parts[1] if len(parts) > 1 else "")


def _packet(rest: str) -> Packet:
    port, data = _first(rest)
    hexdata = "".join(data.split())
    if not port:
        raise _Syntax("usage: packet <port> [<hex data>]")
    # No data is a zero-length frame: bmv2stf.py splits the line itself and sends whatever
    # follows the port (gauntlet_enum_assign-bmv2.stf has a bare `packet 0`).
    if not _HEXDATA.match(hexdata):
        raise _Syntax("packet data must be hex digits")
    data_bytes = bytes.fromhex(hexdata[: len(hexdata) // 2 * 2])
    if len(hexdata) % 2:
        # bmv2stf.py converts digit pairs and a lone last digit to one byte of that value
        # (gauntlet_index_3-bmv2.stf ends its packets with `20 0`)
        data_bytes += bytes([int(hexdata[-1], 16)])
    return Packet(_port(port), data_bytes)


def _expect(rest: str) -> Expect:
    port, data = _first(rest)
    if not port:
        raise _Syntax("usage: expect <port> [<hex data>]")
    pattern = None
    if data.strip():
        try:
            pattern = ExpectPattern.parse(data)
        except ValueError as e:
            raise _Syntax(str(e)) from None
    return Expect(_port(port), pattern)


def _args(text: str) -> tuple[tuple[str, str], ...]:
    """`a:1, b : 0x2` -> (('a', '1'), ('b', '0x2')); empty -> ()."""
    out = []
    if not text.strip():
        return ()
    for part in text.split(","):
        name, sep, value = part.partition(":")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise _Syntax(f"action argument {part.strip()!r} is not name:value")
        out.append((_name(name, "parameter"), value))
    return tuple(out)


def _action_call(text: str) -> tuple[str, tuple[tuple[str, str], ...], str | None]:
    """`act(a:1) [= handle]` -> (name, args, handle)."""
    m = _ACTION.match(text.strip())
    if not m:
        raise _Syntax("expected an action call name(args)")
    rest = text.strip()[m.end():]
    close = rest.rfind(")")
    if close < 0:
        raise _Syntax("missing ')' after action arguments")
    handle = None
    tail = rest[close + 1:].strip()
    if tail:
        if not tail.startswith("="):
            raise _Syntax(f"unexpected {tail!r} after the action")
        handle = tail[1:].strip()
        if not re.match(r"^[A-Za-z_$][\w$]*$", handle):
            raise _Syntax(f"bad entry handle {handle!r}")
    return _name(m.group(1), "action"), _args(rest[:close]), handle


def _add(rest: str) -> Add:
    table, tail = _first(rest)
    if not table or not tail.strip():
        raise _Syntax("usage: add <table> [priority] <field:value>... <action>(<args>)")
    table = _name(table, "table")
    tail = tail.strip()
    priority = None
    first, after = _first(tail)
    m = _PRIORITY.match(first)
    if m:
        priority, tail = int(m.group(1)), after.strip()
    am = _ACTION.search(tail)
    if not am:
        raise _Syntax("add without an action call name(args)")
    keys_text = re.sub(r"\s*:\s*", ":", tail[: am.start()]).split()
    keys = []
    for word in keys_text:
        fname, sep, value = word.partition(":")
        if not sep or not fname or not value:
            raise _Syntax(f"key {word!r} is not field:value")
        keys.append((_name(fname, "key field"), value))
    if not keys:
        raise _Syntax("add without key fields")
    action, params, handle = _action_call(tail[am.start():])
    return Add(table, priority, tuple(keys), action, params, handle)


def _setdefault(rest: str) -> SetDefault:
    table, tail = _first(rest)
    if not table or not tail.strip():
        raise _Syntax("usage: setdefault <table> <action>(<args>)")
    action, params, handle = _action_call(tail)
    if handle is not None:
        raise _Syntax("setdefault takes no entry handle")
    return SetDefault(_name(table, "table"), action, params)


def _remove(rest: str) -> RemoveAll:
    if rest.strip().lower() != "all":
        raise _Syntax("only 'remove all' is supported")
    return RemoveAll()


def _check_counter(rest: str) -> CheckCounter:
    m = _CHECK.match(rest.strip())
    if not m:
        raise _Syntax("usage: check_counter <name>(<index>) [packets|bytes <op> <value>]")
    value = None if m.group("value") is None else _int(m.group("value"), "counter value")
    kind = m.group("kind").lower() if m.group("kind") else None
    return CheckCounter(_name(m.group("name"), "counter"), m.group("index"), kind,
                        m.group("op"), value)


def _none(cls: Callable[[], StfCommand]) -> Callable[[str], StfCommand]:
    def parse(rest: str) -> StfCommand:
        if rest.strip():
            raise _Syntax(f"unexpected arguments {rest.strip()!r}")
        return cls()
    return parse


def _mc_node_create(rest: str) -> McNodeCreate:
    w = _words(rest, 1, 10_000, "mc_node_create <rid> <port>...")
    return McNodeCreate(_int(w[0], "rid"), tuple(_int(p, "port") for p in w[1:]))


def _number(what: str) -> Callable[[str], int]:
    return lambda text: _int(text, what)


def _named_as(what: str) -> Callable[[str], str]:
    return lambda text: _name(text, what)


_NUMBER, _INDEX, _VALUE, _OBJECT = _number("number"), _number("index"), _number("value"), _named_as("object")


def _command(cls: Callable[..., StfCommand], usage: str, *read: Callable[[str], Any],
          optional: int = 0) -> Callable[[str], StfCommand]:
    """A command of whitespace-separated arguments, the i-th read by read[i]; the last
    `optional` ones may be left out (the command's defaults then apply)."""
    def parse(rest: str) -> StfCommand:
        words = _words(rest, len(read) - optional, len(read), usage)
        return cls(*(r(w) for r, w in zip(read, words, strict=False)))
    return parse


def _meter_set_rates(rest: str) -> MeterSetRates:
    # v1model meters are two-rate three-colour: the committed and the peak pair
    w = _words(rest, 4, 4, "meter_set_rates <meter> <index> <cir>:<cburst> <pir>:<pburst>")
    rates = []
    for pair in w[2:]:
        rate, sep, burst = pair.partition(":")
        try:
            r, b = float(rate), int(burst)
        except ValueError:
            raise _Syntax(f"bad rate:burst {pair!r}") from None
        if not sep or not (math.isfinite(r) and r >= 0 and b >= 0):
            raise _Syntax(f"bad rate:burst {pair!r} (a rate per us and a burst, both >= 0)")
        rates.append((r, b))
    return MeterSetRates(_name(w[0], "meter"), _int(w[1], "index"), tuple(rates))


_HANDLERS: dict[str, Callable[[str], StfCommand]] = {
    "packet": _packet,
    "expect": _expect,
    "no_packet": _none(NoPacket),
    "add": _add,
    "setdefault": _setdefault,
    "remove": _remove,
    "check_counter": _check_counter,
    "wait": _none(Wait),
    "mc_mgrp_create": _command(McMgrpCreate, "mc_mgrp_create <group>", _NUMBER),
    "mc_mgrp_destroy": _command(McMgrpDestroy, "mc_mgrp_destroy <group>", _NUMBER),
    "mc_node_create": _mc_node_create,
    "mc_node_associate": _command(McNodeAssociate, "mc_node_associate <group> <handle>", _NUMBER, _NUMBER),
    "mc_node_dissociate": _command(McNodeDissociate, "mc_node_dissociate <group> <handle>", _NUMBER, _NUMBER),
    "mc_node_destroy": _command(McNodeDestroy, "mc_node_destroy <handle>", _NUMBER),
    "mirroring_add": _command(MirroringAdd, "mirroring_add <session> <port>", _NUMBER, _NUMBER),
    "mirroring_delete": _command(MirroringDelete, "mirroring_delete <session>", _NUMBER),
    "register_read": _command(RegisterRead, "register_read <register> <index>", _OBJECT, _INDEX),
    "register_write": _command(RegisterWrite, "register_write <register> <index> <value>",
                               _named_as("register"), _INDEX, _VALUE),
    "register_reset": _command(RegisterReset, "register_reset <register>", _OBJECT),
    "counter_read": _command(CounterRead, "counter_read <counter> <index>", _OBJECT, _INDEX),
    "counter_write": _command(CounterWrite, "counter_write <counter> <index> <packets> <bytes>",
                              _named_as("counter"), _INDEX, _number("packets"), _number("bytes")),
    "counter_reset": _command(CounterReset, "counter_reset <counter>", _OBJECT),
    "meter_set_rates": _meter_set_rates,
    "pvs_add": _command(PvsAdd, "pvs_add <value_set> <value>", _named_as("value_set"), _VALUE),
    "pvs_remove": _command(PvsRemove, "pvs_remove <value_set> <value>", _named_as("value_set"), _VALUE),
    "pvs_clear": _command(PvsClear, "pvs_clear <value_set>", _OBJECT),
    "set_queue_depth": _command(SetQueueDepth, "set_queue_depth <packets> [<port>]", _VALUE, _number("port"),
                                optional=1),
    "set_queue_rate": _command(SetQueueRate, "set_queue_rate <pps> [<port>]", _VALUE, _number("port"),
                               optional=1),
}


def parse_stf(text: str, filename: str = "<stf>", *, strict: bool = True) -> list[StfCommand]:
    """Parse an STF file. Errors raise StfError naming filename:line.

    With strict=False, unknown commands become `Unknown` instead of errors (p4c's runner
    ignores them; being strict catches typos in our own tests).
    """
    commands: list[StfCommand] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split(None, 1)
        keyword = parts[0].lower()
        rest = parts[1] if len(parts) > 1 else ""
        handler = _HANDLERS.get(keyword)
        if handler is None:
            if strict:
                raise StfError(filename, lineno, f"unknown command {parts[0]!r}")
            commands.append(Unknown(parts[0], rest, line=lineno))
            continue
        try:
            cmd = handler(rest)
        except _Syntax as e:
            raise StfError(filename, lineno, f"{keyword}: {e}") from None
        commands.append(dataclasses.replace(cmd, line=lineno))
    return commands
