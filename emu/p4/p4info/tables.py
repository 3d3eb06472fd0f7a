"""Tables, actions and action profiles/selectors."""

from __future__ import annotations

from p4.config.v1 import p4info_pb2

from emu.p4 import names
from emu.p4.frontend import ast as A
from emu.p4.frontend.types import BitType, BoolType, EnumType, NewType
from emu.p4.p4info_ids import P4IdPrefix

from .annotations import (
    _add_annotations,
    _add_doc,
    _const_int,
    _error,
    _field_ids,
    _fits,
    _has,
    _int_arg,
    _string_arg,
)
from .base import _GeneratorBase
from .records import _Profile, _Table
from .typespecs import _type_name, _type_width

DEFAULT_TABLE_SIZE = 1024
"""v1model's default table size (p4c's V1Model tableAttributes.defaultTableSize)."""

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
_PROFILE_ANNOTATIONS = frozenset({"max_group_size", "selector_size_semantics", "max_member_weight"})


class _TableEmitter(_GeneratorBase):
    def emit_table(self, t: _Table) -> None:
        msg = self.p4info.tables.add()
        self.preamble(msg, P4IdPrefix.TABLE, t.name, t.decl.annotations)
        key = t.decl.prop("key")
        elements = key.keys if key else []
        ids = _field_ids([(k, k.annotations) for k in elements])
        for k, fid in zip(elements, ids, strict=True):
            if k.match_kind == "selector":
                continue  # hashed by the selector, not matched by the control plane
            mf = msg.match_fields.add()
            mf.id = fid
            try:
                mf.name = names.key_field_name(k.expr, k.annotations)
            except ValueError as exc:
                raise _error(k.pos, str(exc)) from None
            _add_annotations(mf, k.annotations, keep=frozenset({"hidden"}))
            _add_doc(mf, k.annotations)
            kt = k.expr.checked_type
            mf.bitwidth = _type_width(kt)
            if k.match_kind in _MATCH_TYPES:
                mf.match_type = _MATCH_TYPES[k.match_kind]
            else:
                mf.other_match_type = k.match_kind
            self.types.convert(kt)
            tn = _type_name(kt)
            if tn:
                mf.type_name.name = tn
        for a, ref_annos in self.table_actions(t.decl):
            ref = msg.action_refs.add()
            ref.id = self.action_id(a, t.scope)
            _add_annotations(ref, ref_annos)
            table_only, default_only = _has(ref_annos, "tableonly"), _has(ref_annos, "defaultonly")
            if table_only and default_only:
                raise _error(t.decl.pos, f"Table '{t.name}' has an action reference ('{a.name}') which is "
                                         "annotated with both '@tableonly' and '@defaultonly'")
            if table_only:
                ref.scope = p4info_pb2.ActionRef.TABLE_ONLY
            elif default_only:
                ref.scope = p4info_pb2.ActionRef.DEFAULT_ONLY
        default, args, is_const = self.default_action(t.decl)
        if default is None and t.decl.prop("default_action") is None:
            default = self.noaction
        if default is not None:
            aid = self.action_id(default, t.scope)
            if is_const:
                msg.const_default_action_id = aid
            msg.initial_default_action.action_id = aid
            data_params = [p for p in default.params if p.direction == ""]
            pids = _field_ids([(p, p.annotations) for p in data_params])
            for p, pid, arg in zip(data_params, pids, args, strict=False):
                value = _const_int(arg.value)
                if value is None:
                    continue
                width = _type_width(p.type) if p.type is not None else 0
                arg_msg = msg.initial_default_action.arguments.add()
                arg_msg.param_id = pid
                arg_msg.value = (value & ((1 << width) - 1) if width else value).to_bytes(max(1, (width + 7) // 8), "big")
        for name, prof in self.profiles.items():
            if t.name in prof.tables:
                msg.implementation_id = self.id_of(P4IdPrefix.ACTION_PROFILE, name)
        for name, (pname, _i, table, *_rest) in self.direct.items():
            if table == t.name:
                prefix = P4IdPrefix.DIRECT_COUNTER if pname == "counters" else P4IdPrefix.DIRECT_METER
                msg.direct_resource_ids.append(self.id_of(prefix, name))
        size = t.decl.prop("size")
        value = (_const_int(size.value) if size else None) or DEFAULT_TABLE_SIZE
        msg.size = _fits(value, 64, size.pos if size else t.decl.pos, f"table {t.name}: size",
                         "size field")
        timeout = t.decl.prop("support_timeout")
        if timeout is not None and _const_int(timeout.value):
            msg.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL
        entries = t.decl.prop("entries")
        if entries is not None:
            msg.has_initial_entries = True
            if entries.is_const:
                msg.is_const_table = True

    def action_id(self, a: A.ActionDecl, scope: str) -> int:
        is_global = a in self.prog.actions.values()
        return self.id_of(P4IdPrefix.ACTION, names.qualify(None if is_global else scope, a.name, a.annotations))

    def emit_action(self, name: str, a: A.ActionDecl) -> None:
        msg = self.p4info.actions.add()
        self.preamble(msg, P4IdPrefix.ACTION, name, a.annotations)
        # p4c's RemoveActionParameters binds every parameter of an action that is only
        # called directly (no table lists it): P4Info shows it without parameters.
        data_params = [p for p in a.params if p.direction == ""] if id(a) in self.in_tables else []
        ids = _field_ids([(p, p.annotations) for p in data_params])
        for p, pid in zip(data_params, ids, strict=True):
            pm = msg.params.add()
            pm.id = pid
            pm.name = names.field_name(p.name, p.annotations)
            _add_annotations(pm, p.annotations)
            _add_doc(pm, p.annotations)
            pt = p.type
            if not isinstance(pt, BitType | BoolType | NewType | EnumType) or (
                isinstance(pt, EnumType) and pt.underlying is None
            ):
                raise _error(p.pos, f"Action parameter {p.name} has a type which is not bit<>, int<>, bool, "
                                    "type or serializable enum")
            pm.bitwidth = _type_width(pt)
            self.types.convert(pt)
            tn = _type_name(pt)
            if tn:
                pm.type_name.name = tn

    def emit_profile(self, name: str, p: _Profile) -> None:
        msg = self.p4info.action_profiles.add()
        self.preamble(msg, P4IdPrefix.ACTION_PROFILE, name, p.annotations, _PROFILE_ANNOTATIONS)
        msg.table_ids.extend(self.id_of(P4IdPrefix.TABLE, t) for t in p.tables)
        msg.with_selector = p.selector
        msg.size = _fits(p.size, 64, p.pos, f"action profile {name}: size", "size field")
        # Group settings mean something only with a selector: p4c leaves them out of a
        # plain action_profile (with a warning).
        if not p.selector:
            return
        max_group = _int_arg(p.annotations, "max_group_size")
        if max_group is not None:
            msg.max_group_size = _fits(max_group, 32, p.pos, f"{name}: @max_group_size")
        # The semantics only when annotated, as p4c: absent means sum of weights (the
        # P4Runtime default), so p4c leaves it out (SONiC PINS's wcmp_group_selector).
        semantics = _string_arg(p.annotations, "selector_size_semantics")
        kind = None if semantics is None else semantics.upper()
        if kind == "SUM_OF_MEMBERS":
            msg.sum_of_members.SetInParent()
            weight = _int_arg(p.annotations, "max_member_weight")
            if weight is not None:
                msg.sum_of_members.max_member_weight = _fits(
                    weight, 32, p.pos, f"{name}: @max_member_weight")
        elif kind == "SUM_OF_WEIGHTS":
            msg.sum_of_weights.SetInParent()
        elif kind is not None:
            raise _error(p.pos, f'{name}: @selector_size_semantics is "sum_of_weights" or '
                         f'"sum_of_members", got "{semantics}"')
