"""P4_16 parser: preprocess, lex (with :mod:`.lexer`), parse with lark LALR(1) over
``p4.lark``, and build the AST (:mod:`.build`).  Syntax errors become gcc-style
diagnostics naming the original file, line and column.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from . import ast as A
from .build import SyntaxIssue, ToAst, decode_annotation_body, parse_int_literal
from .diagnostics import DiagnosticSink, P4Error
from .lexer import P4PostLex
from .preprocess import Preprocessed, preprocess_text

_GRAMMAR = Path(__file__).with_name("p4.lark")


@functools.lru_cache(maxsize=1)
def _lark() -> tuple[Lark, P4PostLex]:
    post = P4PostLex()
    parser = Lark(
        _GRAMMAR.read_text(),
        parser="lalr",
        lexer="basic",
        postlex=post,  # type: ignore[arg-type]
        propagate_positions=True,
        maybe_placeholders=False,
        start=["start", "structured_body"],
        cache=True,  # the LALR tables take ~0.4 s to build; lark caches them in the temp dir
    )
    return parser, post


_TOKEN_NAMES = {
    "SEMICOLON": "';'", "LPAR": "'('", "RPAR": "')'", "LBRACE": "'{'", "RBRACE": "'}'",
    "LSQB": "'['", "RSQB": "']'", "COMMA": "','", "COLON": "':'", "EQUAL": "'='", "DOT": "'.'",
    "IDENT": "identifier", "TYPE_IDENT": "type name", "INTEGER": "integer", "STRING": "string",
    "TLT": "'<'", "LT": "'<'", "GT": "'>'", "$END": "end of input", "QMARK": "'?'",
}


def _describe(term: str) -> str:
    if term in _TOKEN_NAMES:
        return _TOKEN_NAMES[term]
    if term.isupper() and term.isidentifier() and len(term) > 1 and not term.startswith("__"):
        return f"'{term.lower()}'" if term.lower() in _KEYWORDS else term.lower()
    return term


_KEYWORDS = {
    "abstract", "action", "actions", "apply", "bit", "bool", "const", "control", "default", "else",
    "entries", "enum", "error", "exit", "extern", "false", "header", "header_union", "if", "in",
    "inout", "int", "key", "match_kind", "out", "package", "parser", "priority", "return", "select",
    "state", "struct", "switch", "table", "transition", "true", "tuple", "typedef", "type",
    "value_set", "varbit", "void", "this", "list", "for", "break", "continue",
}


def _simplify_expected(expected: set[str]) -> str:
    if {"INTEGER", "IDENT", "LPAR"} <= expected and "SEMICOLON" not in expected:
        return "an expression"
    names = sorted({_describe(e) for e in expected if not e.startswith("__")})
    kws = [n for n in names if n.startswith("'") and n.strip("'") in _KEYWORDS]
    if len(names) > 8:
        # Long lists are noise; name the structural tokens and summarise the rest.
        core = [n for n in names if n not in kws and n not in ("ANNOTATION".lower(),)]
        core = [n for n in core if n in ("';'", "')'", "'}'", "']'", "','", "':'", "'='", "identifier", "type name", "'{'", "'('")]
        if not core:
            core = names[:6]
        return ", ".join(core) + (" or a declaration/keyword" if kws else ", ...")
    return ", ".join(names)


# How deep the syntax tree may nest (an expression of 900 chained operators fits): the
# later stages walk it recursively, a few Python frames a level.
MAX_NESTING = 1000


def allow_recursion(depth: int) -> None:
    """Let the recursive stages walk a tree `depth` levels deep (never lowers the limit)."""
    need = 12 * depth + 2000
    if sys.getrecursionlimit() < need:
        sys.setrecursionlimit(need)


def _deeper_than(tree: Tree, limit: int) -> Tree | None:
    """The first node more than `limit` levels down (iteratively: the tree may be deep)."""
    stack: list[tuple[Tree, int]] = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return node
        stack.extend((c, depth + 1) for c in node.children if isinstance(c, Tree))
    return None


def parse_preprocessed(pp: Preprocessed, sink: DiagnosticSink | None = None) -> A.Program:
    sink = sink or DiagnosticSink()
    parser, post = _lark()
    tree = _parse(parser, post, pp, sink, pp.text, "start")

    def parse_body(tok: Token) -> Tree:
        """A structured annotation's body (`tok` is `[...]`), padded to its place in the
        text so that positions in it map through the source map as the program's do."""
        text = "\n" * ((tok.line or 1) - 1) + " " * (tok.column or 1) + str(tok)[1:-1]
        return _parse(parser, post, pp, sink, text, "structured_body")

    deep = _deeper_than(tree, MAX_NESTING)
    if deep is not None:
        pos = pp.source_map.lookup(deep.meta.line, deep.meta.column)
        raise sink.fail(pos, f"the program nests more than {MAX_NESTING} levels deep here")
    allow_recursion(MAX_NESTING)
    try:
        prog = ToAst(pp.source_map, sink, parse_body).transform(tree)
    except SyntaxIssue as e:
        raise sink.fail(e.pos, e.message) from None
    except Exception as e:  # lark wraps transformer errors
        inner = getattr(e, "orig_exc", None)
        if isinstance(inner, SyntaxIssue):
            raise sink.fail(inner.pos, inner.message) from None
        if isinstance(inner, P4Error):
            raise inner from None
        raise
    assert isinstance(prog, A.Program)
    prog.files = list(pp.files)
    return prog


def _parse(parser: Lark, post: P4PostLex, pp: Preprocessed, sink: DiagnosticSink, text: str,
           start: str) -> Tree:
    """`text` parsed from `start`; a syntax error is a diagnostic at its place."""
    post.text = text
    try:
        return parser.parse(text, start=start)
    except UnexpectedInput as e:
        pos = pp.source_map.lookup(e.line if e.line > 0 else len(pp.source_map.lines), e.column if e.column > 0 else 1)
        if isinstance(e, UnexpectedToken):
            tok = e.token
            what = "end of input" if tok.type == "$END" else f"'{tok}'"
            msg = f"syntax error: unexpected {what}; expected {_simplify_expected(set(e.expected))}"
            if tok.type == "STRAY":
                msg = f"syntax error: unexpected character '{tok}'"
            prev = post.token_before(tok)
            if tok.type == "IDENT" and prev is not None and prev.type == "IDENT":
                # "foo_t x;" where foo_t was never declared: say so rather than "unexpected 'x'".
                pos = pp.source_map.lookup(prev.line or 0, prev.column or 0)
                msg = f"unknown type '{prev}'"
        elif isinstance(e, UnexpectedCharacters):
            msg = f"syntax error: unexpected character '{text[e.pos_in_stream or 0]}'"
        elif isinstance(e, UnexpectedEOF):
            msg = "syntax error: unexpected end of input"
        else:
            msg = "syntax error"
        raise sink.fail(pos, msg) from None


def parse_source(
    text: str,
    filename: str = "<input>",
    include_dirs: tuple[str, ...] | list[str] = (),
    defines: dict[str, str] | None = None,
    sink: DiagnosticSink | None = None,
) -> A.Program:
    """Preprocess and parse ``text`` (as if read from ``filename``) into an AST."""
    sink = sink or DiagnosticSink()
    pp = preprocess_text(text, filename, include_dirs, defines, sink)
    return parse_preprocessed(pp, sink)


__all__ = ["parse_source", "parse_preprocessed", "parse_int_literal", "decode_annotation_body", "P4Error"]
