"""Macro expansion: invocations spanning lines, arguments, # and ##, hide sets."""

from __future__ import annotations

import re

from .base import PreprocessorBase
from .model import Macro, PPToken


class MacroMixin(PreprocessorBase):
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
