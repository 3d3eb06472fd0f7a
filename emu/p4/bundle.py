"""A P4 program as a `p4-source` bundle: the files it reads, for a switch to compile.

A bundle holds exactly the files the preprocessor read (the bundled core.p4 and
v1model.p4 aside: every switch has its own), named relative to the folder that holds
them all, so `#include "..."` and `-I` resolve on the switch as they did here. It is
the device config the embedded switch takes from any client (emu.runtime.devconfig):
the switch compiles it rather than running a compiled program, which is Python.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

FORMAT = "p4-source"
SUFFIX = ".p4src.json"


def source_bundle(path: str, include_dirs: Sequence[str] = (),
                  defines: Mapping[str, str] | None = None) -> dict[str, object]:
    """The p4-source config (a JSON-ready dict) of the program at `path`: main file,
    the files the preprocessor read, include folders and defines. P4Error when the
    program does not preprocess."""
    from emu.p4.frontend import INCLUDE_DIR, preprocess_file

    main = os.path.abspath(path)
    incs = [os.path.abspath(d) for d in include_dirs]
    pp = preprocess_file(main, tuple(incs), dict(defines or {}))
    builtin = os.path.abspath(INCLUDE_DIR) + os.sep
    read = [f for f in map(os.path.abspath, pp.files)
            if os.path.isfile(f) and not f.startswith(builtin)]
    root = os.path.commonpath([os.path.dirname(main), *incs,
                               *(os.path.dirname(f) for f in read)])
    files = {}
    for f in dict.fromkeys([main, *read]):
        with open(f, encoding="utf-8", errors="replace") as fh:
            files[os.path.relpath(f, root)] = fh.read()
    return {"format": FORMAT, "main": os.path.relpath(main, root), "files": files,
            "include_dirs": [os.path.relpath(d, root) for d in incs],
            "defines": dict(defines or {})}
