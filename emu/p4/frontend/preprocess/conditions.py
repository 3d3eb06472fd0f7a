"""Integer constant expressions of #if / #elif."""

from __future__ import annotations

import re

_COND_TOKEN = re.compile(
    r"\s*(?:(0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[uUlL]*|([A-Za-z_]\w*)|(&&|\|\||==|!=|<=|>=|<<|>>|[-+*/%<>!~&|^?:()]))"
)


class _CondExpr:
    """Integer constant expression evaluator for #if (C precedence)."""

    _BIN = [
        ["||"],
        ["&&"],
        ["|"],
        ["^"],
        ["&"],
        ["==", "!="],
        ["<", ">", "<=", ">="],
        ["<<", ">>"],
        ["+", "-"],
        ["*", "/", "%"],
    ]

    def __init__(self, text: str) -> None:
        self.toks: list[tuple[str, object]] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            m = _COND_TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ValueError(f"unexpected '{text[pos:].strip()[:10]}'")
            if m.group(1):
                self.toks.append(("num", int(m.group(1), 0) if not m.group(1).startswith("0") or len(m.group(1)) == 1 or m.group(1)[1] in "xXbB" else int(m.group(1), 8)))
            elif m.group(2):
                self.toks.append(("num", 0))  # unknown identifiers are 0, as in C
            else:
                self.toks.append(("op", m.group(3)))
            pos = m.end()
        self.i = 0

    def value(self) -> int:
        v = self._cond()
        if self.i != len(self.toks):
            raise ValueError(f"unexpected '{self.toks[self.i][1]}'")
        return v

    def _peek(self) -> object:
        return self.toks[self.i][1] if self.i < len(self.toks) and self.toks[self.i][0] == "op" else None

    def _cond(self) -> int:
        c = self._bin(0)
        if self._peek() == "?":
            self.i += 1
            a = self._cond()
            if self._peek() != ":":
                raise ValueError("expected ':'")
            self.i += 1
            b = self._cond()
            return a if c else b
        return c

    def _bin(self, level: int) -> int:
        if level == len(self._BIN):
            return self._unary()
        v = self._bin(level + 1)
        while self._peek() in self._BIN[level]:
            op = self.toks[self.i][1]
            self.i += 1
            r = self._bin(level + 1)
            v = _apply(str(op), v, r)
        return v

    def _unary(self) -> int:
        op = self._peek()
        if op in ("-", "+", "!", "~"):
            self.i += 1
            v = self._unary()
            return {"-": -v, "+": v, "!": int(not v), "~": ~v}[str(op)]
        if op == "(":
            self.i += 1
            v = self._cond()
            if self._peek() != ")":
                raise ValueError("expected ')'")
            self.i += 1
            return v
        kind, val = self.toks[self.i]
        if kind != "num":
            raise ValueError(f"unexpected '{val}'")
        self.i += 1
        return int(val)  # type: ignore[call-overload]


def _apply(op: str, a: int, b: int) -> int:
    if op == "||":
        return int(bool(a) or bool(b))
    if op == "&&":
        return int(bool(a) and bool(b))
    if op == "/":
        return int(a / b)
    if op == "%":
        return a - b * int(a / b)
    return {
        "|": a | b, "^": a ^ b, "&": a & b, "==": int(a == b), "!=": int(a != b),
        "<": int(a < b), ">": int(a > b), "<=": int(a <= b), ">=": int(a >= b),
        "<<": a << b, ">>": a >> b, "+": a + b, "-": a - b, "*": a * b,
    }[op]
