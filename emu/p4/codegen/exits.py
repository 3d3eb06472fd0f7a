"""Which bodies can run `exit`: the copy-out of out/inout arguments must survive it."""

from __future__ import annotations

from typing import Any

from emu.p4.frontend import ast as A

from .astwalk import _walk


class ExitAnalysis:
    """Whether `exit` can run inside a body, memoised for one compilation.

    One instance per Lowerer (the compilation context): the memo holds nodes of the
    program being lowered only, so lowering never depends on what was compiled before.
    """

    def __init__(self) -> None:
        # id(body) -> (body, result); the body is kept so that an id is never reused
        self._memo: dict[int, tuple[Any, bool]] = {}

    def may_exit(self, body: Any) -> bool:
        """Whether `exit` can run inside `body` (through calls and table actions)."""
        key = id(body)
        hit = self._memo.get(key)
        if hit is not None and hit[0] is body:
            return hit[1]
        self._memo[key] = (body, False)  # a recursive call through `body` says no
        r = False
        for n in _walk(body):
            if isinstance(n, A.Exit):
                r = True
            elif isinstance(n, A.Call):
                r = self._call_may_exit(n.target)
            if r:
                break
        self._memo[key] = (body, r)
        return r

    def _call_may_exit(self, t: Any) -> bool:
        if isinstance(t, A.ActionDecl | A.FunctionDecl | A.ControlDecl):
            return self.may_exit(t.body)
        if isinstance(t, A.TableDecl):
            ap = t.prop("actions")
            return any(self.may_exit(ar.decl.body) for ar in (ap.actions if ap else [])
                       if ar.decl is not None)
        return False
