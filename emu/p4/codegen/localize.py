"""Struct fields as Python locals inside the generated packet paths (run_ingress,
run_egress): `meta.f` becomes `_m_f`, `sm.f` becomes `_s_f`.

A local costs one cheap opcode per access where an instance attribute costs an attribute
load or store; the struct object itself still exists (the switch, clones, multicast
copies and the other pipeline half read it), so every field the function assigns and
someone may read later is stored back into it before each `return`. A struct the
function uses as a whole anywhere (passed to a call, copied, reassigned) or through
another name (`ps.meta`) is left alone, as is every field that is not a scalar.

This works on the finished source lines of one function, like `alias_headers`: the
lowering passes stay unaware of it."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

# String literals first (an action name may contain "meta."), then the struct name.
_TOKEN = r"'[^']*'|\"[^\"]*\"|(?<![\w.])({var})\b(?:\s*\.\s*(\w+))?"
_AUG = re.compile(r"\s*(?:[-+*/%&|^@]|<<|>>|//|\*\*)?=(?!=)")
_RETURN = re.compile(r"^(\s*)(?:if .*:\s*)?return\b")


@dataclass
class StructLocals:
    """How to localise one struct variable of a function."""

    var: str  # the Python name of the struct in the function ("meta", "sm")
    prefix: str  # locals are named f"{prefix}{field}"
    defaults: Mapping[str, str]  # scalar field -> Python literal of its fresh value
    others: Collection[str]  # its other fields (aggregates, error, varbit): attributes
    fresh: bool  # the function creates the struct (fields start at their defaults)
    writeback: Collection[str] | None  # assigned fields stored back; None: all of them


def _scan(lines: list[str], var: str, defaults: Mapping[str, str], others: Collection[str],
          start: int) -> tuple[set[str], set[str]] | None:
    """(fields read, fields written) through `var.<field>` in lines[start:], or None when
    `var` is used any other way there."""
    pat = re.compile(_TOKEN.format(var=re.escape(var)))
    reads: set[str] = set()
    writes: set[str] = set()
    for ln in lines[start:]:
        if "ps." + var in ln or re.search(r"^\s*def\b|\blambda\b|\bglobal\b|\bnonlocal\b", ln):
            return None
        for m in pat.finditer(ln):
            if m.group(1) is None:
                continue  # a string literal
            name = m.group(2)
            if name is None and re.fullmatch(rf"\s*return {re.escape(var)}\s*", ln):
                continue  # handed to the caller after the write-back
            if name in others:
                continue  # a field that stays an attribute (not a scalar)
            if name is None or name not in defaults:
                return None  # the struct as a whole, or a method (copy, set...)
            stmt = ln[ln.rfind("; ", 0, m.start()) + 1: m.start()]
            if (re.fullmatch(r"\s*(?:[\w.]+\s*,\s*)*", stmt)
                    and re.match(r"\s*,[^=]*=(?!=)", ln[m.end():])):
                return None  # a target of a tuple assignment: not worth following
            a = _AUG.match(ln, m.end())
            if a is None:
                reads.add(name)
            else:
                writes.add(name)
                if a.group(0).strip() != "=":
                    reads.add(name)
    return reads, writes


def _straight_writes(lines: list[str], var: str, start: int) -> set[str]:
    """Fields assigned by the function's leading straight-line statements (before the
    first compound statement or return): they need no initial value."""
    body_ind = None
    out: set[str] = set()
    pat = re.compile(rf"(?<![\w.]){re.escape(var)}\.(\w+)\s*=(?!=)")
    for ln in lines[start:]:
        ind = len(ln) - len(ln.lstrip())
        if body_ind is None:
            body_ind = ind
        s = ln.strip()
        if ind != body_ind or s.endswith(":") or s.startswith(("if ", "while ", "for ", "try", "with ", "return", "raise")):
            break
        for st in s.split("; "):
            m = pat.match(st.strip())
            if m and not re.search(rf"(?<![\w.]){re.escape(var)}\b", st[m.end():]):
                out.add(m.group(1))
    return out


def localize(lines: list[str], spec: StructLocals) -> list[str]:
    """The lines of one generated function (its `def` first) with `spec.var`'s scalar
    fields in locals; unchanged when that is not safe (see the module doc)."""
    var = spec.var
    define = re.compile(rf"^\s*(?:.*;\s*)?{re.escape(var)} = ")
    at = next((i for i, ln in enumerate(lines) if define.match(ln)), None)
    if at is None:
        return lines
    scanned = _scan(lines, var, spec.defaults, spec.others, at + 1)
    if scanned is None:
        return lines
    reads, writes = scanned
    used = reads | writes
    straight = _straight_writes(lines, var, at + 1)
    if not spec.fresh:
        # Loading a field into a local costs more than the accesses it saves when the
        # object does not hold it yet (the load falls back to the class default):
        # only fields the function sets first thing become locals.
        used &= straight
    if not used:
        return lines
    back = sorted((writes if spec.writeback is None else writes & set(spec.writeback)) & used)
    init = sorted(((reads & used) | set(back)) - straight)
    pat = re.compile(_TOKEN.format(var=re.escape(var)))

    def repl(m: re.Match[str]) -> str:
        if m.group(1) is not None and m.group(2) in used:
            return spec.prefix + m.group(2)
        return m.group(0)

    head = lines[at]
    ind = head[: len(head) - len(head.lstrip())]
    out = lines[: at + 1]
    if init:
        names = ", ".join(spec.prefix + f for f in init)
        if spec.fresh:
            vals = ", ".join(spec.defaults[f] for f in init)
        else:
            vals = ", ".join(f"{var}.{f}" for f in init)
        # one tuple unpack: a single opcode per field
        out.append(f"{ind}{names}{',' if len(init) == 1 else ''} = {vals}{',' if len(init) == 1 else ''}")
    # Stored back before each return: after one at the function's top level (run
    # unconditionally), only what was assigned since.
    base = None
    pending: set[str] = set(back)
    wpat = re.compile(rf"(?<![\w.]){re.escape(var)}\.(\w+)\s*(?:[-+*/%&|^@]|<<|>>|//|\*\*)?=(?!=)")
    for ln in lines[at + 1:]:
        ind = ln[: len(ln) - len(ln.lstrip())]
        base = ind if base is None else base
        r = _RETURN.match(ln)
        if r is not None and pending:
            out.append(ind + "; ".join(f"{var}.{f} = {spec.prefix}{f}" for f in sorted(pending)))
            if ind == base:
                pending = set()
        pending.update(f for f in wpat.findall(ln) if f in back)
        out.append(pat.sub(repl, ln))
    return out
