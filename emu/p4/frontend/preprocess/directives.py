"""Directives: #include, #define/#undef, conditionals, #error/#warning, #pragma once."""

from __future__ import annotations

import os
from pathlib import Path

from ..ast import Pos
from .base import PreprocessorBase
from .conditions import _CondExpr
from .model import Macro, PPToken

#: Directory holding our own core.p4 and v1model.p4.
INCLUDE_DIR = str(Path(__file__).resolve().parents[2] / "include")
# Architecture includes of other p4c back ends: named as unsupported, not as missing files.
_OTHER_ARCHITECTURES = frozenset({
    "psa.p4", "pna.p4", "ebpf_model.p4", "ubpf_model.p4", "xdp_model.p4", "tna.p4", "t2na.p4",
})


class DirectiveMixin(PreprocessorBase):
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
        elif name == "line" or d.kind == "num":
            # `#line N "FILE"` and its GNU linemarker form `# N "FILE" FLAGS`, which
            # preprocessed P4 (cpp, p4c --pp: p4c's pins_middleblock.p4) is full of.
            # Positions come from the source map, not from them.
            pass
        else:
            self.sink.error(d.pos, f"invalid preprocessing directive #{name}")
        return active

    def _may_read(self, path: str) -> bool:
        if self.include_roots is None:
            return True
        real = os.path.realpath(path)
        return any(real.startswith(r + os.sep)
                   for r in [*self.include_roots, os.path.realpath(INCLUDE_DIR)])

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
                if not self._may_read(path):
                    self.sink.error(rest[0].pos, f"include file '{target}' is outside the "
                                    "program's own files")
                    return
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
