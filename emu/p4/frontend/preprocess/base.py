"""The preprocessor's state and main loop: files to logical lines to tokens to output lines."""

from __future__ import annotations

import bisect
import os

from ..ast import Pos
from ..diagnostics import DiagnosticSink
from .model import _TOKEN_RE, Macro, PPToken, Preprocessed, SourceMap


class PreprocessorBase:
    """State of one run (macros, output, source map) and its main loop."""

    def __init__(
        self,
        include_dirs: tuple[str, ...] | list[str] = (),
        defines: dict[str, str] | None = None,
        sink: DiagnosticSink | None = None,
        include_roots: tuple[str, ...] | list[str] | None = None,
    ) -> None:
        self.include_dirs = [str(d) for d in include_dirs]
        # When set, the only folders (with the bundled INCLUDE_DIR) an #include may read
        # from: a program sent by a P4Runtime client must not read the server's files.
        self.include_roots = (None if include_roots is None else
                              [os.path.realpath(r) for r in include_roots])
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

    def _logical_lines(self, text: str, filename: str) -> list[tuple[str, list[tuple[int, int, int]]]]:
        """Strip comments (keeping columns) and join continuation lines; a block comment
        the file does not close is an error at its start, as cpp makes it for p4c (the
        rest of the file would silently vanish).

        Returns (logical line text, segments) where each segment is
        (logical column start, physical line, physical column start).
        """
        out: list[str] = []
        i, n = 0, len(text)
        in_block = False
        block_start = 0
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
                # A P4 string runs to its closing quote, also across lines (p4c's lexer;
                # p4c keeps comments through cpp with -C): `//` and `/*` in it are text,
                # as in the multi-line @entry_restriction strings of SONiC PINS's P4.
                j = i + 1
                while j < n and text[j] != '"':
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
                block_start = i
                i += 2
                in_block = True
                continue
            out.append(c)
            i += 1
        if in_block:
            row = text.count("\n", 0, block_start) + 1
            self.sink.error(Pos(filename, row, block_start - text.rfind("\n", 0, block_start)),
                            "unterminated comment")
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

    # ---- implemented by the mixins (see Preprocessor in __init__); declared here so that
    # ---- the calls into them are type-checked.
    def _directive(self, toks: list[PPToken], conds: list[list], active: bool, filename: str) -> bool:
        raise NotImplementedError

    def _open_invocation(self, toks: list[PPToken]) -> bool:
        raise NotImplementedError

    def _expand(self, toks: list[PPToken]) -> list[PPToken]:
        raise NotImplementedError
