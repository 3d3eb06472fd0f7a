"""Integer literals and annotation bodies, decoded from their source text."""

from __future__ import annotations

import re
from typing import Any

_INT_RE = re.compile(r"^(?:(\d+)([ws]))?(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*)$")


def parse_int_literal(text: str) -> tuple[int, int | None, bool]:
    """'8w5' -> (5, 8, False); '0x1F' -> (31, None, False); '4s3' -> (3, 4, True)."""
    m = _INT_RE.match(text)
    if not m:
        raise ValueError(f"invalid integer literal '{text}'")
    width = int(m.group(1)) if m.group(1) else None
    signed = m.group(2) == "s"
    body = m.group(3).replace("_", "")
    if body[:2].lower() in ("0x", "0b", "0o"):
        value = int(body, 0)
    elif body[:2].lower() == "0d":
        value = int(body[2:], 10)
    else:
        value = int(body, 10)
    return value, width, signed


def unescape_string(raw: str) -> str:
    """A string literal's text (a log_msg format) with its escapes decoded, as BMv2
    reads them from its JSON. Python's unicode_escape reads bytes as Latin-1, so any
    other character (`◕‿◕`) goes in as an escape of its own and comes out whole."""
    return raw.encode("latin-1", "backslashreplace").decode("unicode_escape")


_ANNO_ITEM = re.compile(r'\s*(?:"((?:\\.|[^"\\])*)"|([-+]?[0-9][0-9A-Za-z_]*)|([A-Za-z_.][\w.]*)|(=)|(,)|(\S))')


def decode_annotation_body(body: str) -> tuple[list[Any], dict[str, Any]]:
    """Decode simple comma-separated literal lists and key=value pairs."""
    args: list[Any] = []
    kv: dict[str, Any] = {}
    items: list[Any] = []
    pos = 0
    pending_key: str | None = None
    for m in _ANNO_ITEM.finditer(body):
        if m.end() == pos:
            break
        pos = m.end()
        if m.group(1) is not None:
            v: Any = m.group(1)  # as written, escapes and all (p4c's @name keeps `\t`)
        elif m.group(2) is not None:
            try:
                v = parse_int_literal(m.group(2).lstrip("+-"))[0] * (-1 if m.group(2).startswith("-") else 1)
            except ValueError:
                v = m.group(2)
        elif m.group(3) is not None:
            v = m.group(3)
        elif m.group(4):
            if items:
                pending_key = str(items.pop())
            continue
        elif m.group(5):
            continue
        else:
            return [body.strip()] if body.strip() else [], {}
        if pending_key is not None:
            kv[pending_key] = v
            pending_key = None
        else:
            items.append(v)
    args.extend(items)
    return args, kv
