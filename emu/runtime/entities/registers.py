"""RegisterEntry: written with MODIFY (every cell without an index) and read; PI
cannot write registers, this server can."""

from __future__ import annotations

from typing import Any

from p4.v1 import p4runtime_pb2

from ..errors import invalid
from ..translate import decode_uint, encode_uint
from .common import Entity, EntityContext, array_to_modify, cells_of, read_cells


def write(ctx: EntityContext, typ: int, r: p4runtime_pb2.RegisterEntry) -> None:
    pipe = ctx.pipe
    info, arr = array_to_modify(typ, "register", pipe.index.registers, r.register_id,
                                pipe.control.registers)
    if r.data.WhichOneof("data") != "bitstring":
        raise invalid(f"{info.preamble.name}: register data must be a bitstring")
    value = decode_uint(r.data.bitstring, arr.width, info.preamble.name)
    for i in cells_of(r, arr, info.preamble.name):
        arr.set(i, value)


def read(ctx: EntityContext, reg: p4runtime_pb2.RegisterEntry) -> list[Entity]:
    def fill(entry: p4runtime_pb2.RegisterEntry, rarr: Any, i: int) -> None:
        entry.data.bitstring = encode_uint(rarr.get(i))

    return read_cells("register", ctx.pipe.index.registers, reg.register_id,
                      ctx.pipe.control.registers, reg, fill)
