"""State shared by the P4Info generator's parts: the program, the message, ids."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from p4.config.v1 import p4info_pb2

from emu.p4.frontend import ast as A
from emu.p4.frontend.check import CheckedProgram
from emu.p4.frontend.types import Type
from emu.p4.p4info_ids import IdAllocator, P4IdError, P4IdPrefix

from .annotations import _add_annotations, _add_doc, _error, _int_arg
from .records import _Profile, _Table
from .typespecs import _TypeSpecs


class _GeneratorBase:
    """The program, the message under construction, ids; what collect() gathers."""

    def __init__(self, prog: CheckedProgram) -> None:
        self.prog = prog
        self.p4info = p4info_pb2.P4Info()
        self.types = _TypeSpecs(self.p4info.type_info, prog.errors)
        self.ids = IdAllocator()
        self.noaction = prog.actions.get("NoAction")

    def id_of(self, prefix: P4IdPrefix, name: str) -> int:
        return self.ids_by_prefix[int(prefix)][name]

    def symbol(self, prefix: P4IdPrefix, name: str, annotations: Sequence[A.Annotation]) -> None:
        try:
            self.ids.add(prefix, name, _int_arg(annotations, "id"))
        except P4IdError as exc:  # an @id out of 32 bits, of another type's prefix, or twice
            at = A.find_annotation(list(annotations), "id")
            raise _error(at.pos if at is not None else A.NOPOS, str(exc)) from None

    # ---- emission
    def preamble(self, msg: Any, prefix: P4IdPrefix, name: str, annotations: Sequence[A.Annotation],
                 skip: frozenset[str] = frozenset()) -> None:
        msg.preamble.id = self.id_of(prefix, name)
        msg.preamble.name = name
        msg.preamble.alias = self.aliases[name]
        _add_annotations(msg.preamble, annotations, skip)
        _add_doc(msg.preamble, annotations)

    # Filled by run(): ids by P4IdPrefix then name, and the alias of every name.
    ids_by_prefix: dict[int, dict[str, int]]
    aliases: dict[str, str]
    # Filled by _Collector.collect().
    tables: list[_Table]
    actions: list[tuple[str, A.ActionDecl]]
    externs: list[tuple[str, A.Instantiation]]
    value_sets: list[tuple[str, A.ValueSetDecl]]
    digests: dict[str, Type]
    touches_type_info: bool  # p4c would have written type_info (see generator.py)
    in_tables: set[int]  # id() of every action a table lists
    profiles: dict[str, _Profile]
    # direct counter/meter name -> (table property, instance, table, unit, position, annotations)
    direct: dict[str, tuple[str, A.Instantiation | None, str, str, A.Pos, list[A.Annotation]]]

    # ---- implemented by _Collector; declared here so that the emitters' calls are type-checked
    def table_actions(self, t: A.TableDecl) -> list[tuple[A.ActionDecl, list[A.Annotation]]]:
        raise NotImplementedError

    @staticmethod
    def default_action(t: A.TableDecl) -> tuple[A.ActionDecl | None, list[A.Argument], bool]:
        raise NotImplementedError
