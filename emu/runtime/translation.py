"""@p4runtime_translation (P4Runtime spec, "Translation of port numbers" and user-defined
types): what this server does with a `type` whose P4Info entry has a translated_type.

The target keeps no translation table, so a translated value is the data-plane value
itself (identity): a value must fit the controller's width (P4Info's sdn_bitwidth,
checked when bytes are decoded) and the data plane's (checked when the entry is built).
What identity cannot serve is refused when the pipeline is set, with UNIMPLEMENTED:
string-translated types (`sdn_string`: names, not numbers) and translated fields of
packet-in/out headers (their layout on the wire would follow P4Info's widths, not the
data plane's).
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2

from .errors import unimplemented


def translated_types(p4info: p4info_pb2.P4Info) -> dict[str, p4info_pb2.P4NewTypeTranslation]:
    """Name -> translation of each P4Info new type that has one."""
    return {name: spec.translated_type for name, spec in p4info.type_info.new_types.items()
            if spec.HasField("translated_type")}


def check_translations(p4info: p4info_pb2.P4Info) -> None:
    """UNIMPLEMENTED for the translations identity cannot serve (see the module doc)."""
    types = translated_types(p4info)
    for name, tr in types.items():
        if tr.HasField("sdn_string"):
            raise unimplemented(f"type {name!r} is translated to strings ({tr.uri!r}); this "
                                "target has no translation table, only identity for numbers")
    for header in p4info.controller_packet_metadata:
        for md in header.metadata:
            if md.type_name.name in types:
                raise unimplemented(
                    f"{header.preamble.name} metadata {md.name!r} has the translated type "
                    f"{md.type_name.name!r}; packet-in/out of translated types is not supported")
