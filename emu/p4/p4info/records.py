"""What the generator collects before it emits: blocks, their locals, tables, action profiles."""

from __future__ import annotations

from dataclasses import dataclass, field

from emu.p4.frontend import ast as A
from emu.p4.frontend.types import HeaderType

# ------------------------------------------------------------------ the program walk


@dataclass
class _Block:
    """A parser or control instance: its control-plane path and declaration."""

    path: str
    decl: A.ParserDecl | A.ControlDecl


@dataclass(eq=False)
class _Local:
    """A local declaration of a (possibly inlined nested) block, with its naming scope."""

    scope: str
    decl: A.Decl
    owner: _Block


@dataclass
class _Table:
    name: str
    decl: A.TableDecl
    scope: str
    control: _Block


@dataclass
class _Profile:
    name: str
    inst: A.Instantiation | None
    pos: A.Pos
    annotations: list[A.Annotation]
    selector: bool
    size: int
    tables: list[str] = field(default_factory=list)


@dataclass
class _CtrlHeader:
    """A header annotated @controller_header (packet_in / packet_out metadata)."""

    name: str  # P4 type name: what p4c hashes for the id
    controller_name: str
    decl: A.HeaderDecl
    type: HeaderType
