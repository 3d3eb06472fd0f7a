"""RegisterEntry: written with MODIFY (every cell without an index) and read; PI
cannot write registers, this server can."""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from ..errors import invalid, not_found
from ..translate import decode_uint, encode_uint
from .common import Entity, EntityContext, U, index_in


def write(ctx: EntityContext, typ: int, r: p4runtime_pb2.RegisterEntry) -> None:
    if typ != U.MODIFY:
        raise invalid("register entries can only be MODIFYed")
    pipe = ctx.pipe
    info = pipe.index.registers.get(r.register_id)
    if info is None:
        raise not_found(f"register id {r.register_id} not in P4Info")
    arr = pipe.control.register(info.preamble.name)
    if r.data.WhichOneof("data") != "bitstring":
        raise invalid(f"{info.preamble.name}: register data must be a bitstring")
    value = decode_uint(r.data.bitstring, arr.width, info.preamble.name)
    if r.HasField("index"):
        arr.set(index_in(r.index.index, arr.size, info.preamble.name), value)
    else:
        for i in range(arr.size):
            arr.set(i, value)


def read(ctx: EntityContext, reg: p4runtime_pb2.RegisterEntry) -> list[Entity]:
    idx, control = ctx.pipe.index, ctx.pipe.control
    if reg.register_id and reg.register_id not in idx.registers:
        raise not_found(f"register id {reg.register_id} not in P4Info")
    out = []
    for info in ([idx.registers[reg.register_id]] if reg.register_id
                 else idx.registers.values()):
        rarr = control.register(info.preamble.name)
        cells = ([index_in(reg.index.index, rarr.size, info.preamble.name)]
                 if reg.HasField("index") else range(rarr.size))
        for i in cells:
            r = Entity()
            r.register_entry.register_id = info.preamble.id
            r.register_entry.index.index = i
            r.register_entry.data.bitstring = encode_uint(rarr.get(i))
            out.append(r)
    return out
