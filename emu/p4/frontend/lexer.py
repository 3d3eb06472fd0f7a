"""Post-lexer that makes the P4_16 grammar LALR(1) (the "lexer hack").

It works on the whole token list of a preprocessed program at once:

1. ``@name`` plus an optional bracketed body becomes ANNOTATION (+ ANNO_BODY);
   annotation bodies are unparsed token soup in P4_16.
2. Names declared by header/struct/header_union/enum/extern/parser/control/
   package/typedef/type become TYPE_IDENT from their declaration on; generic
   type parameters (``extern E<T>``, ``T f<T>(...)``) become TYPE_IDENT inside
   the declaration that introduces them.  A parameter/variable/instance that
   reuses a type's name (``packet_out p`` after ``parser p``) shadows the type
   until the enclosing top-level declaration ends.
3. A ``<`` that opens a type-argument list (after a type name, after bit/int/
   varbit/tuple/list/value_set, or a generic call ``f<T>(``) becomes TLT.
4. Two adjacent ``>`` outside a type-argument list become SHR.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lark import Token

_TYPE_DECL_KW = {"HEADER", "HEADER_UNION", "STRUCT", "PARSER", "CONTROL", "PACKAGE"}
_TLT_AFTER = {"TYPE_IDENT", "BIT", "INT", "VARBIT", "TUPLE", "LIST", "VALUE_SET"}
# Tokens after which "NAME <" starts a generic *declaration* rather than a call.
_DECL_PREV = {"IDENT", "TYPE_IDENT", "VOID", "GT", "BOOL", "STRING_KW", "ERROR", "EXTERN", "BIT", "INT"}
# Tokens that may appear inside a type-argument list.
_TYPEARG_TOKS = {
    "TYPE_IDENT", "BIT", "INT", "VARBIT", "BOOL", "STRING_KW", "ERROR", "VOID", "TUPLE", "LIST",
    "DONTCARE", "INTEGER", "COMMA", "LT", "GT", "DOT", "MATCH_KIND", "LSQB", "RSQB",
}
# Tokens that may begin the type in `typedef T N;` / `type T N;`.
_TYPE_START = {
    "IDENT", "TYPE_IDENT", "BIT", "INT", "VARBIT", "BOOL", "STRING_KW", "ERROR", "TUPLE", "LIST",
    "DOT", "MATCH_KIND", "HEADER", "HEADER_UNION", "STRUCT", "ENUM",
}
# How a token changes the ( / [ nesting depth.
_NESTING = {"LPAR": 1, "LSQB": 1, "RPAR": -1, "RSQB": -1}


def _closing(toks: list[Token], start: int) -> int:
    """Index of the token that closes the ( or [ at toks[start]; len(toks) if none does."""
    depth = 0
    for j in range(start, len(toks)):
        depth += _NESTING.get(toks[j].type, 0)
        if depth == 0:
            return j
    return len(toks)


class P4PostLex:
    # lark keys its table cache on the grammar text only: change p4.lark along with this.
    always_accept = ("AT", "STRAY")

    def __init__(self) -> None:
        self.text = ""
        self.tokens: list[Token] = []

    def process(self, stream: Iterator[Token]) -> Iterator[Token]:
        toks = list(stream)
        toks = self._annotations(toks)
        self.tokens = self._classify(toks)
        yield from self.tokens

    def token_before(self, tok: Token) -> Token | None:
        """The token the parser saw just before ``tok`` (for diagnostics)."""
        prev = None
        for t in self.tokens:
            if t.start_pos is not None and tok.start_pos is not None and t.start_pos >= tok.start_pos:
                return prev
            prev = t
        return prev

    # -------------------------------------------------------------- annotations
    def _annotations(self, toks: list[Token]) -> list[Token]:
        out: list[Token] = []
        i, n = 0, len(toks)
        while i < n:
            t = toks[i]
            if t.type != "AT" or i + 1 >= n:
                out.append(t)
                i += 1
                continue
            name = toks[i + 1]
            out.append(Token.new_borrow_pos("ANNOTATION", str(name), t))
            i += 2
            if i < n and toks[i].type in ("LPAR", "LSQB") and toks[i].line == name.line:
                open_t = toks[i]
                close = ")" if open_t.type == "LPAR" else "]"
                j = _closing(toks, i)
                if j >= n:
                    out.append(toks[i])
                    i += 1
                    continue
                body = self.text[open_t.end_pos : toks[j].start_pos]  # type: ignore[index]
                out.append(Token.new_borrow_pos("ANNO_BODY", open_t.value + body + close, open_t))
                i = j + 1
        return out

    # -------------------------------------------------------------- type names
    def _classify(self, toks: list[Token]) -> list[Token]:
        return self._merge_shr(_TypeNames(toks).run())

    @staticmethod
    def _declares_value(prev: Token | None, nxt: Token | None) -> bool:
        """Is a name between ``prev`` and ``nxt`` the name of a parameter/variable/instance?"""
        if prev is None or nxt is None:
            return False
        if nxt.type in ("COMMA", "RPAR", "SEMICOLON"):
            return prev.type in ("TYPE_IDENT", "GT", "BOOL", "ERROR", "STRING_KW", "BIT", "INT", "RSQB", "RPAR")
        if nxt.type == "EQUAL":
            return prev.type in ("TYPE_IDENT", "GT", "BOOL", "ERROR", "STRING_KW", "BIT", "INT", "RSQB")
        return False

    @staticmethod
    def _merge_shr(toks: list[Token]) -> list[Token]:
        """Merge adjacent '>' '>' into SHR unless they close type-argument lists."""
        out: list[Token] = []
        depth: list[str] = []
        for t in toks:
            if t.type == "TLT":
                depth.append("T")
            elif t.type == "LPAR":
                depth.append("P")
            elif t.type == "RPAR":
                while depth and depth[-1] != "P":
                    depth.pop()
                if depth:
                    depth.pop()
            elif t.type == "GT":
                if depth and depth[-1] == "T":
                    depth.pop()
                elif out and out[-1].type == "GT" and out[-1].end_pos == t.start_pos:
                    prev = out.pop()
                    out.append(Token.new_borrow_pos("SHR", ">>", prev))
                    continue
            out.append(t)
        return out

    @staticmethod
    def _enum_name(out: list[Token], nxt: Token | None) -> bool:
        # enum bit<8> NAME {  : the name is followed by '{' and preceded by 'enum <type>'.
        if nxt is None or nxt.type != "LBRACE":
            return False
        for k in range(len(out) - 1, max(len(out) - 8, -1), -1):
            if out[k].type == "ENUM":
                return True
            if out[k].type in ("SEMICOLON", "RBRACE", "LBRACE"):
                return False
        return False

    @staticmethod
    def _in_typedef(out: list[Token]) -> bool:
        for k in range(len(out) - 1, -1, -1):
            ty = out[k].type
            if ty in ("TYPEDEF", "TYPE"):
                # `type` is also a legal variable or field name (`hdr.icmp6.type = X;`):
                # only a keyword followed by a type starts a declaration.
                starts_type = k + 1 < len(out) and out[k + 1].type in _TYPE_START
                return starts_type and (k == 0 or out[k - 1].type != "DOT")
            if ty in ("SEMICOLON", "RBRACE", "LBRACE"):
                return False
        return False

    @staticmethod
    def _generic_call(toks: list[Token], i: int, is_type: Any) -> bool:
        """Is toks[i] ('<') the start of 'type-args > (' in a call?"""
        depth = 0
        k = i
        n = len(toks)
        while k < n:
            t = toks[k]
            if t.type == "LT":
                depth += 1
            elif t.type == "GT":
                depth -= 1
                if depth == 0:
                    return k + 1 < n and toks[k + 1].type == "LPAR"
            elif t.type == "IDENT":
                if not is_type(str(t)):
                    return False
            elif t.type == "LPAR":
                # bit<(W)> widths: skip the parenthesised expression.
                d2 = 0
                while k < n:
                    if toks[k].type == "LPAR":
                        d2 += 1
                    elif toks[k].type == "RPAR":
                        d2 -= 1
                        if d2 == 0:
                            break
                    k += 1
            elif t.type not in _TYPEARG_TOKS:
                return False
            k += 1
        return False


class _TypeNames:
    """One pass over the tokens that marks type names (TYPE_IDENT) and the '<' that opens
    type arguments (TLT); see the module docstring (steps 2 and 3)."""

    def __init__(self, toks: list[Token]) -> None:
        self.toks = toks
        self.n = len(toks)
        self.types: set[str] = set()
        # (end index, names) regions in which generic type parameters are types.
        self.regions: list[tuple[int, set[str]]] = []
        self.tlt_at: set[int] = set()  # '<' positions known to open type parameter lists
        self.out: list[Token] = []
        self.angle: list[str] = []  # stack of "T" (type args) / "P" (parens inside them)
        # Value names (parameters, variables, instances) that reuse a type's name, e.g.
        # `packet_out p` after `parser p(...)`: they shadow the type until the enclosing
        # top-level declaration ends.
        self.shadow: set[str] = set()
        self.depth = 0

    def run(self) -> list[Token]:
        out = self.out
        for i, t in enumerate(self.toks):
            ty = t.type
            self._track_depth(ty)
            if ty == "IDENT":
                out.append(self._ident(i, t))
            elif ty == "LT":
                out.append(self._less_than(i, t))
            elif ty == "GT":
                # '>' '>' that is not closing type arguments becomes SHR in _merge_shr.
                if self.angle and self.angle[-1] == "T":
                    self.angle.pop()
                out.append(t)
            else:
                self._track_parens(ty)
                out.append(t)
        # A statement may start with a type name only to call a member of it
        # (direct invocation "P.apply(...)"); the grammar's statements start with
        # an identifier there, and the checker resolves the name as a type.
        for k in range(1, len(out) - 1):
            if (
                out[k].type == "TYPE_IDENT"
                and out[k + 1].type == "DOT"
                and out[k - 1].type in ("SEMICOLON", "LBRACE", "RBRACE")
            ):
                out[k] = Token.new_borrow_pos("IDENT", str(out[k]), out[k])
        return out

    def _track_depth(self, ty: str) -> None:
        if ty in ("LBRACE", "LPAR"):
            self.depth += 1
        elif ty in ("RBRACE", "RPAR"):
            self.depth -= 1
            if self.depth == 0 and ty == "RBRACE":
                self.shadow.clear()
        elif ty == "SEMICOLON" and self.depth == 0:
            self.shadow.clear()

    def _track_parens(self, ty: str) -> None:
        angle = self.angle
        if ty == "LPAR" and angle:
            angle.append("P")
        elif ty == "RPAR" and angle:
            while angle and angle[-1] != "P":
                angle.pop()
            if angle:
                angle.pop()

    def _is_type_name(self, name: str) -> bool:
        return name in self.types or any(name in r[1] for r in self.regions)

    def _ident(self, i: int, t: Token) -> Token:
        out, toks, n = self.out, self.toks, self.n
        prev = out[-1] if out else None
        name = str(t)
        after_member = (
            prev is not None and prev.type == "DOT" and len(out) > 1
            and out[-2].type in ("IDENT", "TYPE_IDENT", "RPAR", "RSQB", "ERROR", "THIS", "APPLY")
        )
        while self.regions and self.regions[-1][0] < i:
            self.regions.pop()
        is_type = not after_member and self._is_type_name(name)
        nxt = toks[i + 1] if i + 1 < n else None
        if is_type and P4PostLex._declares_value(prev, nxt):
            self.shadow.add(name)
        if name in self.shadow:
            is_type = False
        if self._declares_type(prev, nxt):
            self.types.add(name)
            is_type = True
        # Generic declarations: NAME < T, U > (   -> T, U are types in the declaration.
        if nxt is not None and nxt.type == "LT" and (is_type or (prev is not None and prev.type in _DECL_PREV)):
            self._generic_declaration(i, prev)
        return Token.new_borrow_pos("TYPE_IDENT", name, t) if is_type else t

    def _declares_type(self, prev: Token | None, nxt: Token | None) -> bool:
        """Whether the name between ``prev`` and ``nxt`` is introduced as a type."""
        if prev is not None and prev.type in _TYPE_DECL_KW:
            return True
        if prev is not None and prev.type == "EXTERN" and nxt is not None and nxt.type in ("LBRACE", "LT"):
            return True
        if prev is not None and prev.type == "ENUM" or P4PostLex._enum_name(self.out, nxt):
            return True
        return nxt is not None and nxt.type == "SEMICOLON" and P4PostLex._in_typedef(self.out)

    def _generic_declaration(self, i: int, prev: Token | None) -> None:
        toks, n = self.toks, self.n
        gp = self._generic_params(i + 1)
        if gp is None or not (
            (prev is not None and prev.type in _TYPE_DECL_KW | {"EXTERN"})
            or (gp[1] + 1 < n and toks[gp[1] + 1].type == "LPAR" and prev is not None and prev.type in _DECL_PREV)
        ):
            return
        names = {nm for nm in gp[0] if nm not in self.types}
        self.tlt_at.add(i + 1)
        if names:
            self.regions.append((self._region_end(i + 1), names))
            # The return type before the name may be one of them (T f<T>()).
            if prev is not None and str(prev) in names and prev.type == "IDENT":
                self.out[-1] = Token.new_borrow_pos("TYPE_IDENT", str(prev), prev)

    def _less_than(self, i: int, t: Token) -> Token:
        out, angle = self.out, self.angle
        prev = out[-1] if out else None
        if (prev is not None and prev.type in _TLT_AFTER) or i in self.tlt_at:
            angle.append("T")
            return Token.new_borrow_pos("TLT", "<", t)
        if prev is not None and prev.type in ("IDENT", "APPLY") and P4PostLex._generic_call(
            self.toks, i, self._is_type_name
        ):
            angle.append("T")
            return Token.new_borrow_pos("TLT", "<", t)
        if angle and angle[-1] == "T" and prev is not None and prev.type == "TLT":
            angle.append("T")
        return t

    def _region_end(self, start: int) -> int:
        toks, n = self.toks, self.n
        depth = 0
        k = start
        while k < n:
            v = toks[k].type
            depth += _NESTING.get(v, 0)
            if v == "LBRACE":
                depth += 1
            elif v == "RBRACE":
                depth -= 1
                if depth <= 0:
                    return k
            elif v == "SEMICOLON" and depth == 0:
                return k
            k += 1
        return n

    def _generic_params(self, i: int) -> tuple[list[str], int] | None:
        """If toks[i] is '<' opening 'IDENT (, IDENT)* >', return the names and index of '>'."""
        toks, n = self.toks, self.n
        names: list[str] = []
        k = i + 1
        while k < n:
            t = toks[k]
            if t.type not in ("IDENT", "TYPE_IDENT"):
                return None
            names.append(str(t))
            k += 1
            if k < n and toks[k].type == "COMMA":
                k += 1
                continue
            if k < n and toks[k].type == "GT":
                return names, k
            return None
        return None
