"""P4Info (p4.config.v1.P4Info) for a checked v1model program, as p4c writes it.

``generate_p4info(prog)`` mirrors what ``p4c --target bmv2 --arch v1model
--p4runtime-files X.p4info.txtpb`` produces (p4c 1.2.4.x with P4Runtime 1.4+
fields such as ``initial_default_action``; checked field by field against
p4c's own sample outputs, see tests/p4/p4info/p4c_compare.py):

* Objects are listed in the order p4c visits the program: the blocks in
  V1Switch's parameter order, and within a block its locals in declaration
  order, with nested control instances inlined where they are declared (p4c
  inlines them before it writes P4Info). Top-level actions a control uses
  (NoAction) come before its own, as p4c copies them to the control's start.
* p4c's front end drops tables that are never applied, actions that no table,
  default action, entry or apply block uses, and control instances never
  applied; extern instances are kept even when unused. ``@hidden`` objects are
  left out.
* A table without ``default_action`` gets ``NoAction`` as its (non-const)
  default, added to its action list as ``@defaultonly`` when missing, as p4c's
  front end does.
* Ids come from :mod:`emu.p4.p4info_ids`; names from :mod:`emu.p4.names`.
* Key fields are named by ``names.key_field_name`` (``hdr.ipv4.dstAddr``,
  ``hdr.ipv4.$valid$``); match-field, parameter and packet-metadata ids are
  1-based positions unless an ``@id`` says otherwise.

``p4info_to_text`` renders the text format with the header comment p4c
writes; ``write_p4info`` picks text, binary or JSON from the file extension.

One module per entity kind: tables.py (tables, actions, action profiles), externs.py
(counters, meters, registers, controller headers, value sets), typespecs.py (type_info),
annotations.py (annotations, field ids); collect.py gathers what is listed, generator.py
runs the steps.
"""

from __future__ import annotations

from pathlib import Path

from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

from emu.p4.frontend.check import CheckedProgram

from .generator import _Generator
from .tables import DEFAULT_TABLE_SIZE

__all__ = [
    "DEFAULT_TABLE_SIZE",
    "TEXT_HEADER",
    "format_for_path",
    "generate_p4info",
    "p4info_to_bytes",
    "p4info_to_text",
    "write_p4info",
]

TEXT_HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"
"""The comment lines p4c puts before a text-format P4Info."""


# ------------------------------------------------------------------ public API


def generate_p4info(prog: CheckedProgram) -> p4info_pb2.P4Info:
    """The P4Info p4c would write for ``prog`` (a checked V1Switch program).

    Raises :class:`~emu.p4.frontend.P4Error` for what p4c's P4Runtime back end
    rejects (an anonymous table implementation without @name, clashing @id, ...).
    """
    return _Generator(prog).run()


def p4info_to_text(p4info: p4info_pb2.P4Info, header: bool = True) -> str:
    """Text format, as p4c writes ``.p4info.txtpb`` (with its two comment lines)."""
    body = text_format.MessageToString(p4info)
    return (TEXT_HEADER + body) if header else body


def p4info_to_bytes(p4info: p4info_pb2.P4Info, fmt: str) -> bytes:
    """Serialize as "text", "binary" or "json"."""
    if fmt == "text":
        return p4info_to_text(p4info).encode()
    if fmt == "binary":
        return p4info.SerializeToString(deterministic=True)
    if fmt == "json":
        return (json_format.MessageToJson(p4info, indent=2) + "\n").encode()
    raise ValueError(f"unknown P4Info format {fmt!r} (text, binary, json)")


def format_for_path(path: str | Path) -> str:
    """p4c's choice of format by extension: .bin binary, .json JSON, anything else text."""
    suffix = Path(path).suffix.lower()
    if suffix == ".bin":
        return "binary"
    if suffix == ".json":
        return "json"
    return "text"


def write_p4info(p4info: p4info_pb2.P4Info, path: str | Path) -> Path:
    """Write ``p4info`` to ``path`` in the format its extension names; returns the path."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(p4info_to_bytes(p4info, format_for_path(out)))
    return out
