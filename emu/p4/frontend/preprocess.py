"""C-style preprocessor for P4 sources, with a source map.

P4 programs rely on the C preprocessor (#include <core.p4>, #define, #ifdef,
V1MODEL_VERSION).  p4c runs cpp and then reads #line markers; we instead keep
a :class:`SourceMap` from every output (line, column) back to the original
file:line:col, so diagnostics name what the user wrote, including tokens that
came out of a macro expansion (mapped to the macro invocation) or out of a
macro argument (mapped to where the argument was written).

Supported: #include <..> / "..", #pragma once, #define (object-like and
function-like, # and ##, no recursive self-expansion), #undef, #if / #elif
with integer constant expressions and defined(X), #ifdef, #ifndef, #else,
#endif, #error, #warning, backslash line continuations, comments.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .ast import Pos
from .diagnostics import DiagnosticSink, P4Error

#: Directory holding our own core.p4 and v1model.p4.
INCLUDE_DIR = str(Path(__file__).resolve().parent.parent / "include")
# Architecture includes of other p4c back ends: named as unsupported, not as missing files.
_OTHER_ARCHITECTURES = frozenset({
    "psa.p4", "pna.p4", "ebpf_model.p4", "ubpf_model.p4", "xdp_model.p4", "tna.p4", "t2na.p4",
})

_TOKEN_RE = re.compile(
    r'(?P<ws>[ \t\f\r\v]+)|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|(?P<num>[0-9][A-Za-z0-9_]*)'
    r'|(?P<str>"(?:\\.|[^"\\])*"?)|(?P<paste>##)|(?P<punct>.)'
)


@dataclass(frozen=True)
class PPToken:
    text: str
    kind: str  # "ws" | "id" | "num" | "str" | "paste" | "punct"
    pos: Pos
    hide: frozenset[str] = frozenset()


@dataclass
class Macro:
    name: str
    body: list[PPToken]
    params: list[str] | None = None  # None: object-like
    variadic: bool = False
    pos: Pos | None = None


@dataclass
class SourceMap:
    """Output line (1-based) -> sorted anchors (out_col, Pos) of its tokens."""

    lines: list[list[tuple[int, Pos]]] = field(default_factory=list)

    def lookup(self, line: int, col: int) -> Pos:
        if line < 1 or line > len(self.lines) or not self.lines[line - 1]:
            # Past the end (EOF errors): use the last mapped position.
            for anchors in reversed(self.lines[: max(line, 0)] or self.lines):
                if anchors:
                    c, p = anchors[-1]
                    return Pos(p.file, p.line, p.col + 1)
            return Pos("<input>", line, col)
        anchors = self.lines[line - 1]
        i = bisect.bisect_right(anchors, col, key=lambda a: a[0]) - 1
        if i < 0:
            i = 0
        out_col, p = anchors[i]
        return Pos(p.file, p.line, p.col + max(col - out_col, 0))


@dataclass
class Preprocessed:
    text: str
    source_map: SourceMap
    files: list[str]
    macros: dict[str, Macro]


class Preprocessor:
    def __init__(
        self,
        include_dirs: tuple[str, ...] | list[str] = (),
        defines: dict[str, str] | None = None,
        sink: DiagnosticSink | None = None,
    ) -> None:
        self.include_dirs = [str(d) for d in include_dirs]
        self.sink = sink or DiagnosticSink()
        self.macros: dict[str, Macro] = {}
        self.once: set[str] = set()
        self.files: list[str] = []
        self.out_lines: list[str] = []
        self.map = SourceMap()
        self.depth = 0
        for name, value in (defines or {}).items():
            pos = Pos("<command-line>", 1, 1)
            self.macros[name] = Macro(name, self._tokenize(str(value), pos), None, pos=pos)

    # ------------------------------------------------------------ public
    def run_file(self, path: str) -> Preprocessed:
        text = self._read(path, Pos("<command-line>", 1, 1))
        return self.run_text(text, path)

    def run_text(self, text: str, filename: str) -> Preprocessed:
        self.sink.sources.add(filename, text)
        self._process(text, filename)
        self.sink.raise_if_errors()
        return Preprocessed("\n".join(self.out_lines) + "\n", self.map, self.files, self.macros)

    # ------------------------------------------------------------ reading
    def _read(self, path: str, at: Pos) -> str:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            raise self.sink.fail(at, f"cannot open '{path}': {e.strerror}") from None
        self.sink.sources.add(path, text)
        return text

    @staticmethod
    def _logical_lines(text: str, filename: str) -> list[tuple[str, list[tuple[int, int, int]]]]:
        """Strip comments (keeping columns) and join continuation lines.

        Returns (logical line text, segments) where each segment is
        (logical column start, physical line, physical column start).
        """
        out: list[str] = []
        i, n = 0, len(text)
        in_block = False
        # Replace comment characters by spaces so that columns do not move.
        while i < n:
            c = text[i]
            if in_block:
                if c == "*" and text.startswith("*/", i):
                    out.append("  ")
                    i += 2
                    in_block = False
                    continue
                out.append("\n" if c == "\n" else " ")
                i += 1
                continue
            if c == '"':
                j = i + 1
                while j < n and text[j] != '"' and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                j = min(j + 1, n)
                out.append(text[i:j])
                i = j
                continue
            if c == "/" and text.startswith("//", i):
                j = text.find("\n", i)
                j = n if j < 0 else j
                # A backslash at the end of a // comment would continue it in C; ignore that.
                out.append(" " * (j - i))
                i = j
                continue
            if c == "/" and text.startswith("/*", i):
                out.append("  ")
                i += 2
                in_block = True
                continue
            out.append(c)
            i += 1
        physical = "".join(out).split("\n")
        result: list[tuple[str, list[tuple[int, int, int]]]] = []
        buf: list[str] = []
        segs: list[tuple[int, int, int]] = []
        length = 0
        for lineno, line in enumerate(physical, 1):
            line = line.rstrip("\r")
            cont = line.endswith("\\")
            part = line[:-1] if cont else line
            segs.append((length, lineno, 1))
            buf.append(part)
            length += len(part)
            if not cont:
                result.append(("".join(buf), segs))
                # Keep one output line per physical line so that line counts stay close.
                for _ in range(len(buf) - 1):
                    result.append(("", [(0, lineno, 1)]))
                buf, segs, length = [], [], 0
        if buf:
            result.append(("".join(buf), segs))
        return result

    def _tokenize(self, text: str, pos: Pos, segs: list[tuple[int, int, int]] | None = None) -> list[PPToken]:
        toks: list[PPToken] = []
        starts = [s[0] for s in segs] if segs else []
        for m in _TOKEN_RE.finditer(text):
            kind = m.lastgroup or "punct"
            col = m.start()
            if segs:
                k = bisect.bisect_right(starts, col) - 1
                s0, pl, pc = segs[k]
                p = Pos(pos.file, pl, pc + col - s0)
            else:
                p = Pos(pos.file, pos.line, pos.col + col)
            toks.append(PPToken(m.group(), kind, p))
        return toks

    # ------------------------------------------------------------ main loop
    def _process(self, text: str, filename: str) -> None:
        self.depth += 1
        if self.depth > 100:
            raise self.sink.fail(Pos(filename, 1, 1), "#include nested too deeply")
        if filename not in self.files:
            self.files.append(filename)
        # Each entry: [this branch active, some branch already taken, enclosing active, pos]
        conds: list[list] = []
        active = True
        # Text lines held back because a function-like macro's argument list continues
        # on the next line (C allows invocations to span lines).
        pending: list[PPToken] = []
        for text_line, segs in self._logical_lines(text, filename):
            toks = self._tokenize(text_line, Pos(filename, segs[0][1], 1), segs)
            nonws = [t for t in toks if t.kind != "ws"]
            if nonws and nonws[0].text == "#" and not pending:
                active = self._directive(nonws, conds, active, filename)
                self._emit([])
                continue
            if not active:
                self._emit([])
                continue
            if pending:
                toks = pending + [PPToken(" ", "ws", toks[0].pos if toks else pending[-1].pos)] + toks
                pending = []
            if self._open_invocation(toks):
                pending = toks
                self._emit([])
                continue
            self._emit(self._expand(toks))
        if pending:
            self._emit(self._expand(pending))
        if conds:
            self.sink.error(conds[-1][3], "unterminated conditional directive")
        self.depth -= 1

    def _open_invocation(self, toks: list[PPToken]) -> bool:
        """Does a function-like macro invocation's '(' stay unclosed at the end of ``toks``?"""
        depth = 0
        inside = False
        prev_macro = False
        for t in toks:
            if t.kind == "ws":
                continue
            if inside:
                if t.text == "(":
                    depth += 1
                elif t.text == ")":
                    depth -= 1
                    if depth == 0:
                        inside = False
            elif prev_macro and t.text == "(":
                inside, depth = True, 1
            m = self.macros.get(t.text) if t.kind == "id" else None
            prev_macro = m is not None and m.params is not None and not inside
        return inside

    def _emit(self, toks: list[PPToken]) -> None:
        parts: list[str] = []
        anchors: list[tuple[int, Pos]] = []
        col = 1
        for t in toks:
            if t.kind != "ws":
                anchors.append((col, t.pos))
            parts.append(t.text)
            col += len(t.text)
        self.out_lines.append("".join(parts))
        self.map.lines.append(anchors)

    # ------------------------------------------------------------ directives
    def _directive(self, toks: list[PPToken], conds: list[list], active: bool, filename: str) -> bool:
        if len(toks) == 1:
            return active  # null directive
        d = toks[1]
        name = d.text
        rest = toks[2:]
        if name in ("if", "ifdef", "ifndef"):
            if not active:
                conds.append([False, True, False, d.pos])
                return False
            if name == "if":
                val = self._eval_if(rest, d.pos)
            else:
                if not rest or rest[0].kind != "id":
                    self.sink.error(d.pos, f"#{name} expects a macro name")
                    val = False
                else:
                    val = (rest[0].text in self.macros) == (name == "ifdef")
            conds.append([val, val, True, d.pos])
            return val
        if name in ("elif", "else", "endif"):
            if not conds:
                self.sink.error(d.pos, f"#{name} without #if")
                return active
            top = conds[-1]
            if name == "endif":
                conds.pop()
                return top[2]
            if not top[2] or top[1]:
                top[0] = False
                return False
            val = True if name == "else" else self._eval_if(rest, d.pos)
            top[0] = val
            top[1] = val
            return val
        if not active:
            return False
        if name == "include":
            self._include(rest, d.pos, filename)
        elif name == "define":
            self._define(toks[2:], d.pos)
        elif name == "undef":
            if rest:
                self.macros.pop(rest[0].text, None)
        elif name == "pragma":
            if rest and rest[0].text == "once":
                self.once.add(os.path.realpath(filename))
            # Other pragmas are for other compilers; P4 uses @pragma annotations instead.
        elif name == "error":
            msg = " ".join(t.text for t in rest)
            self.sink.error(d.pos, f"#error {msg}".rstrip())
        elif name == "warning":
            self.sink.warning(d.pos, "#warning " + " ".join(t.text for t in rest))
        elif name == "line":
            pass  # positions come from the source map, not from #line
        else:
            self.sink.error(d.pos, f"invalid preprocessing directive #{name}")
        return active

    def _include(self, rest: list[PPToken], at: Pos, filename: str) -> None:
        if rest and rest[0].kind == "id":
            rest = [t for t in self._expand(rest) if t.kind != "ws"]
        if not rest:
            self.sink.error(at, "#include expects \"FILENAME\" or <FILENAME>")
            return
        if rest[0].kind == "str":
            target = rest[0].text[1:-1]
            dirs = [os.path.dirname(filename) or "."] + self.include_dirs + [INCLUDE_DIR]
        elif rest[0].text == "<":
            target = "".join(t.text for t in rest[1:]).split(">")[0]
            dirs = self.include_dirs + [INCLUDE_DIR]
        else:
            self.sink.error(rest[0].pos, "#include expects \"FILENAME\" or <FILENAME>")
            return
        for d in dirs:
            cand = os.path.join(d, target)
            if os.path.isfile(cand):
                path = os.path.normpath(cand)
                if os.path.realpath(path) in self.once:
                    return
                text = self._read(path, rest[0].pos)
                self._process(text, path)
                return
        if os.path.basename(target) in _OTHER_ARCHITECTURES:
            # Another target's architecture (p4c's PSA, PNA, eBPF, uBPF, ... samples).
            self.sink.error(rest[0].pos, f"architecture file '{target}' "
                            "(not supported by the embedded v1model target)")
            return
        self.sink.error(rest[0].pos, f"cannot find include file '{target}'")

    def _define(self, toks: list[PPToken], at: Pos) -> None:
        # toks here still lack whitespace; re-derive "(" adjacency from columns.
        if not toks or toks[0].kind != "id":
            self.sink.error(at, "macro names must be identifiers")
            return
        name_tok = toks[0]
        body = toks[1:]
        params: list[str] | None = None
        variadic = False
        if (
            body
            and body[0].text == "("
            and body[0].pos.line == name_tok.pos.line
            and body[0].pos.col == name_tok.pos.col + len(name_tok.text)
        ):
            params = []
            i = 1
            while i < len(body) and body[i].text != ")":
                t = body[i]
                if t.kind == "id":
                    params.append(t.text)
                elif t.text == "." and i + 2 < len(body) and body[i + 1].text == ".":
                    variadic = True
                    params.append("__VA_ARGS__")
                    i += 2
                elif t.text != ",":
                    self.sink.error(t.pos, f"unexpected '{t.text}' in macro parameter list")
                    return
                i += 1
            body = body[i + 1 :]
        # Keep single spaces between body tokens that were separated in the source.
        spaced: list[PPToken] = []
        for t in body:
            if spaced:
                prev = spaced[-1]
                if not (prev.pos.line == t.pos.line and prev.pos.col + len(prev.text) == t.pos.col):
                    spaced.append(PPToken(" ", "ws", t.pos))
            spaced.append(t)
        self.macros[name_tok.text] = Macro(name_tok.text, spaced, params, variadic, name_tok.pos)

    # ------------------------------------------------------------ expansion
    def _expand(self, toks: list[PPToken]) -> list[PPToken]:
        toks = list(toks)
        out: list[PPToken] = []
        i = 0
        while i < len(toks):
            t = toks[i]
            m = self.macros.get(t.text) if t.kind == "id" else None
            if m is None or t.text in t.hide:
                out.append(t)
                i += 1
                continue
            if m.params is None:
                repl = self._subst(m, {}, t)
                toks[i : i + 1] = repl
                continue
            # Function-like: only an invocation when followed by "(".
            j = i + 1
            while j < len(toks) and toks[j].kind == "ws":
                j += 1
            if j >= len(toks) or toks[j].text != "(":
                out.append(t)
                i += 1
                continue
            args, end = self._collect_args(toks, j, t)
            if args is None:
                out.append(t)
                i += 1
                continue
            if len(args) == 1 and not args[0] and not m.params:
                args = []
            if len(args) != len(m.params) and not m.variadic:
                self.sink.error(
                    t.pos,
                    f"macro '{m.name}' expects {len(m.params)} arguments, got {len(args)}",
                )
                out.append(t)
                i += 1
                continue
            if m.variadic:
                fixed = len(m.params) - 1
                va: list[PPToken] = []
                for k, a in enumerate(args[fixed:]):
                    if k:
                        va.append(PPToken(",", "punct", t.pos))
                    va.extend(a)
                args = args[:fixed] + [va]
            repl = self._subst(m, dict(zip(m.params, args, strict=False)), t)
            toks[i : end + 1] = repl
        return out

    def _collect_args(
        self, toks: list[PPToken], j: int, at: PPToken
    ) -> tuple[list[list[PPToken]] | None, int]:
        depth = 0
        args: list[list[PPToken]] = [[]]
        k = j
        while k < len(toks):
            t = toks[k]
            if t.text == "(":
                depth += 1
                if depth == 1:
                    k += 1
                    continue
            elif t.text == ")":
                depth -= 1
                if depth == 0:
                    return [self._strip(a) for a in args], k
            elif t.text == "," and depth == 1:
                args.append([])
                k += 1
                continue
            args[-1].append(t)
            k += 1
        self.sink.error(at.pos, f"unterminated argument list invoking macro '{at.text}'")
        return None, k

    @staticmethod
    def _strip(a: list[PPToken]) -> list[PPToken]:
        while a and a[0].kind == "ws":
            a = a[1:]
        while a and a[-1].kind == "ws":
            a = a[:-1]
        return a

    def _subst(self, m: Macro, args: dict[str, list[PPToken]], at: PPToken) -> list[PPToken]:
        hide = at.hide | {m.name}
        body = m.body
        res: list[PPToken] = []
        expanded: dict[str, list[PPToken]] = {}
        i = 0
        while i < len(body):
            t = body[i]
            if t.text == "#" and m.params is not None and i + 1 < len(body):
                nxt = body[i + 1]
                if nxt.kind == "ws" and i + 2 < len(body):
                    nxt = body[i + 2]
                    i += 1
                if nxt.text in args:
                    s = "".join(x.text for x in args[nxt.text]).replace("\\", "\\\\").replace('"', '\\"')
                    res.append(PPToken(f'"{s}"', "str", at.pos, hide))
                    i += 2
                    continue
            if t.kind == "id" and t.text in args:
                # Operands of ## are not macro-expanded first.
                nb = self._neighbour(body, i, 1)
                pb = self._neighbour(body, i, -1)
                if (nb and nb.kind == "paste") or (pb and pb.kind == "paste"):
                    res.extend(args[t.text])
                else:
                    if t.text not in expanded:
                        expanded[t.text] = self._expand(args[t.text])
                    res.extend(expanded[t.text])
                i += 1
                continue
            res.append(PPToken(t.text, t.kind, at.pos, hide))
            i += 1
        # Token pasting.
        out: list[PPToken] = []
        i = 0
        while i < len(res):
            t = res[i]
            if t.kind == "paste":
                while out and out[-1].kind == "ws":
                    out.pop()
                j = i + 1
                while j < len(res) and res[j].kind == "ws":
                    j += 1
                left = out.pop() if out else PPToken("", "ws", at.pos)
                right = res[j] if j < len(res) else PPToken("", "ws", at.pos)
                text = left.text + right.text
                kind = "id" if re.fullmatch(r"[A-Za-z_]\w*", text) else ("num" if text[:1].isdigit() else "punct")
                out.append(PPToken(text, kind, left.pos, hide))
                i = j + 1
                continue
            out.append(PPToken(t.text, t.kind, t.pos, t.hide | hide))
            i += 1
        return out

    @staticmethod
    def _neighbour(body: list[PPToken], i: int, step: int) -> PPToken | None:
        j = i + step
        while 0 <= j < len(body) and body[j].kind == "ws":
            j += step
        return body[j] if 0 <= j < len(body) else None

    # ------------------------------------------------------------ #if
    def _eval_if(self, toks: list[PPToken], at: Pos) -> bool:
        resolved: list[PPToken] = []
        i = 0
        toks = [t for t in toks if t.kind != "ws"]
        while i < len(toks):
            t = toks[i]
            if t.text == "defined":
                if i + 1 < len(toks) and toks[i + 1].text == "(" and i + 3 < len(toks):
                    name, i = toks[i + 2].text, i + 4
                elif i + 1 < len(toks):
                    name, i = toks[i + 1].text, i + 2
                else:
                    self.sink.error(t.pos, "'defined' without a macro name")
                    return False
                resolved.append(PPToken(" ", "ws", t.pos))
                resolved.append(PPToken("1" if name in self.macros else "0", "num", t.pos))
                resolved.append(PPToken(" ", "ws", t.pos))
                continue
            if resolved and not (
                resolved[-1].pos.line == t.pos.line
                and resolved[-1].pos.col + len(resolved[-1].text) == t.pos.col
            ):
                resolved.append(PPToken(" ", "ws", t.pos))
            resolved.append(t)
            i += 1
        expanded = self._expand(resolved)
        text = "".join(t.text for t in expanded)
        try:
            return _CondExpr(text).value() != 0
        except (ValueError, ZeroDivisionError, IndexError) as e:
            self.sink.error(at, f"invalid #if expression '{text.strip()}': {e}")
            return False


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


def preprocess_file(
    path: str,
    include_dirs: tuple[str, ...] | list[str] = (),
    defines: dict[str, str] | None = None,
    sink: DiagnosticSink | None = None,
) -> Preprocessed:
    return Preprocessor(include_dirs, defines, sink).run_file(path)


def preprocess_text(
    text: str,
    filename: str,
    include_dirs: tuple[str, ...] | list[str] = (),
    defines: dict[str, str] | None = None,
    sink: DiagnosticSink | None = None,
) -> Preprocessed:
    return Preprocessor(include_dirs, defines, sink).run_text(text, filename)


__all__ = ["Preprocessor", "Preprocessed", "SourceMap", "preprocess_file", "preprocess_text", "P4Error", "INCLUDE_DIR"]
