"""The P4Info generator: collect, assign ids, emit each entity kind, reject duplicate names."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from p4.config.v1 import p4info_pb2

from emu.p4.frontend import ast as A
from emu.p4.p4info_ids import P4IdError, P4IdPrefix

from .annotations import _add_annotations, _add_doc, _error, _fits
from .collect import _Collector
from .externs import _COUNTER_UNITS, _METER_UNITS, _ExternEmitter
from .tables import _TableEmitter

# @platform_property keys, as P4Info's PkgInfo.PlatformProperties names them.
_PLATFORM_PROPERTIES = frozenset(f.name for f in p4info_pb2.PlatformProperties.DESCRIPTOR.fields)


class _Generator(_Collector, _TableEmitter, _ExternEmitter):
    # ---- generation
    def run(self) -> p4info_pb2.P4Info:
        self.collect(self.top_blocks())
        try:
            self.ids_by_prefix = self.ids.assign()
        except P4IdError as exc:
            raise _error(A.NOPOS, str(exc)) from None
        self.aliases = self.ids.aliases()
        self.emit()
        self.check_duplicates()
        return self.p4info

    def emit(self) -> None:
        info = self.p4info
        if self.prog.main is not None:  # p4c: no main, no pkg_info (with a warning)
            info.pkg_info.arch = "v1model"
            self.pkg_info(self.prog.main)
        for t in self.tables:
            self.emit_table(t)
        for name, a in self.actions:
            self.emit_action(name, a)
        for name, p in self.profiles.items():
            self.emit_profile(name, p)
        for name, inst in self.externs:
            self.emit_extern(name, inst)
        for name, (pname, _inst, table, unit, _pos, annos) in self.direct.items():
            if pname == "counters":
                dc = info.direct_counters.add()
                self.preamble(dc, P4IdPrefix.DIRECT_COUNTER, name, annos)
                dc.spec.unit = _COUNTER_UNITS.get(unit, p4info_pb2.CounterSpec.UNSPECIFIED)
                dc.direct_table_id = self.id_of(P4IdPrefix.TABLE, table)
            else:
                dm = info.direct_meters.add()
                self.preamble(dm, P4IdPrefix.DIRECT_METER, name, annos)
                dm.spec.unit = _METER_UNITS.get(unit, p4info_pb2.MeterSpec.UNSPECIFIED)
                dm.direct_table_id = self.id_of(P4IdPrefix.TABLE, table)
        for h in self.controller_headers():
            self.emit_controller_header(h)
        for name, vs in self.value_sets:
            self.emit_value_set(name, vs)
        for name, digest_type in self.digests.items():
            d = info.digests.add()
            self.preamble(d, P4IdPrefix.DIGEST, name, [])
            self.types.convert(digest_type, d.type_spec)
        # p4c writes type_info (empty when no type needs it) once any table, action
        # parameter, controller header field, extern instance or extern function call
        # has been converted, and leaves it out of a program with none of them.
        if (self.touches_type_info or info.tables or any(a.params for a in info.actions)
                or any(h.metadata for h in info.controller_packet_metadata)):
            info.type_info.SetInParent()

    def pkg_info(self, main: A.Instantiation) -> None:
        pkg = self.p4info.pkg_info
        for a in main.annotations:
            if a.name == "pkginfo":
                for key, value in a.kv.items():
                    if key in ("name", "version", "organization", "contact", "url", "arch") and isinstance(value, str):
                        setattr(pkg, key, value)
                continue
            if a.name != "platform_property":
                continue
            for key, value in a.kv.items():
                if key not in _PLATFORM_PROPERTIES:
                    continue  # p4c warns and goes on
                if not isinstance(value, int) or isinstance(value, bool):
                    raise _error(a.pos, f"Value for '{key}' key in @platform_property annotation "
                                        "is not an integer")
                # p4c wraps a value past int32 unannounced
                setattr(pkg.platform_properties, key, _fits(
                    value, 32, a.pos, f"Value for '{key}' key in @platform_property annotation"))
        _add_annotations(pkg, main.annotations, frozenset({"pkginfo", "platform_property"}))
        _add_doc(pkg, main.annotations)

    def check_duplicates(self) -> None:
        groups: Iterable[tuple[str, Any]] = [
            ("table", self.p4info.tables), ("action", self.p4info.actions),
            ("action profile", self.p4info.action_profiles), ("counter", self.p4info.counters),
            ("direct counter", self.p4info.direct_counters), ("meter", self.p4info.meters),
            ("direct meter", self.p4info.direct_meters), ("register", self.p4info.registers),
            ("digest", self.p4info.digests), ("value set", self.p4info.value_sets),
            ("controller packet metadata", self.p4info.controller_packet_metadata),
        ]
        for kind, items in groups:
            seen: set[str] = set()
            for item in items:
                if item.preamble.name in seen:
                    raise _error(A.NOPOS, f"Name '{item.preamble.name}' is used for multiple {kind} objects "
                                          "in the P4Info message")
                seen.add(item.preamble.name)
