"""The device config (`ForwardingPipelineConfig.p4_device_config`) of the embedded target.

BMv2 takes its JSON there; we take a UTF-8 JSON object with a `format` key:

- `{"format": "emu-compiled-v1", "compiled": "<base64 of CompiledProgram.to_bytes()>"}`
  -- the output of our compiler (`emu.p4.compile_file`). `make_compiled_config()` builds it.
- `{"format": "p4-source", "main": "fabric.p4", "files": {"fabric.p4": "...",
  "include/headers.p4": "..."}, "include_dirs": ["include"], "defines": {"X": "1"}}`
  -- P4 sources compiled by the switch on SetForwardingPipelineConfig (VERIFY
  compiles too, so a bad program is rejected before COMMIT). `make_source_config()`.
- `{"format": "emu-null-v1"}` -- control plane only: every object the P4Info
  names exists, every packet is dropped. For control-plane tests.

The compiler's artefact (`python -m emu.p4 compile` -> `<prog>.emu.json`, format
`emu-p4-compiled`) is taken unwrapped too: it, and JSON without a `format`, go to
`CompiledProgram.from_bytes` as is. Any other `format` is rejected by name.
A BMv2 JSON (an object with "header_types") is rejected with a message that says so.
Errors are INVALID_ARGUMENT (the P4Runtime code for a config the target cannot use).
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from emu.core.clock import Clock

from .errors import invalid, unimplemented
from .infoplane import NullDataplane
from .p4switch_adapter import P4SwitchDataplane
from .translate import P4InfoIndex

__all__ = ["load_dataplane", "make_compiled_config", "make_source_config",
           "make_null_config"]

# The compiler's artefact names itself so (emu.p4.target.program.FORMAT; a test holds the
# two equal): spelled here so the compiler is imported only when a program is loaded.
_ARTEFACT = "emu-p4-compiled"


def make_compiled_config(compiled_bytes: bytes) -> bytes:
    return json.dumps({"format": "emu-compiled-v1",
                       "compiled": base64.b64encode(compiled_bytes).decode()}).encode()


def make_source_config(main: str, files: Mapping[str, str], *,
                       include_dirs: Sequence[str] = (),
                       defines: Mapping[str, str] | None = None) -> bytes:
    return json.dumps({"format": "p4-source", "main": main, "files": dict(files),
                       "include_dirs": list(include_dirs),
                       "defines": dict(defines or {})}).encode()


def make_null_config() -> bytes:
    return b'{"format": "emu-null-v1"}'


def parse(device_config: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(device_config.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):  # nested past the parser
        raise invalid("p4_device_config is not a JSON object (see emu.runtime.devconfig)"
                      ) from None
    if not isinstance(obj, dict):
        raise invalid("p4_device_config must be a JSON object")
    if "header_types" in obj and "format" not in obj:
        raise invalid("p4_device_config looks like a BMv2 JSON; this target runs "
                      "emu-compiled-v1 or p4-source configs")
    return obj


def load_dataplane(index: P4InfoIndex, device_config: bytes, clock: Clock, *,
                   priority_queues: int = 1, seed: int = 0) -> Any:
    """Build (but do not start) the Dataplane a device config describes.

    `priority_queues` (per egress port) and `seed` (the random draws) apply to
    compiled programs.
    """
    cfg = parse(device_config)
    fmt = cfg.get("format")
    if fmt == "emu-null-v1":
        return NullDataplane(index, clock)
    if fmt == "emu-compiled-v1":
        try:
            blob = base64.b64decode(cfg["compiled"], validate=True)
        except (KeyError, TypeError, ValueError):
            raise invalid("emu-compiled-v1: 'compiled' must be base64") from None
        return _from_compiled(index, blob, clock, priority_queues, seed)
    if fmt == "p4-source":
        return _from_source(index, cfg, clock, priority_queues, seed)
    if fmt is not None and fmt != _ARTEFACT:
        raise invalid(f"p4_device_config format {fmt!r} is not supported; this target "
                      f"takes emu-compiled-v1, p4-source, emu-null-v1 or the compiler's "
                      f"{_ARTEFACT} artefact (see emu.runtime.devconfig)")
    # The compiler's artefact as written (`<prog>.emu.json`), which users pass
    # straight to SetForwardingPipelineConfig.
    return _from_compiled(index, device_config, clock, priority_queues, seed)


def _api() -> Any:
    try:
        return importlib.import_module("emu.p4.api")
    except ImportError as exc:
        raise unimplemented(f"this build has no P4 compiler/switch yet ({exc})") from None


def _from_compiled(index: P4InfoIndex, blob: bytes, clock: Clock, priority_queues: int,
                   seed: int) -> Any:
    api = _api()
    try:
        prog = api.CompiledProgram.from_bytes(blob)
    except Exception as exc:
        raise invalid(f"emu-compiled-v1: cannot load the compiled program: {exc}") from None
    return P4SwitchDataplane(prog, index, clock, priority_queues=priority_queues, seed=seed)


def _from_source(index: P4InfoIndex, cfg: dict[str, Any], clock: Clock,
                 priority_queues: int, seed: int) -> Any:
    files = cfg.get("files")
    main = cfg.get("main")
    if not isinstance(files, dict) or not isinstance(main, str) or main not in files:
        raise invalid("p4-source: needs 'files' (path -> text) and 'main' among them")
    include_dirs = cfg.get("include_dirs", [])
    if not isinstance(include_dirs, list) or not all(isinstance(d, str) for d in include_dirs):
        raise invalid("p4-source: 'include_dirs' must be a list of paths")
    if not isinstance(cfg.get("defines", {}), dict):
        raise invalid("p4-source: 'defines' must be an object (name -> value)")
    api = _api()
    with tempfile.TemporaryDirectory(prefix="emu-p4src-") as tmp:
        root = os.path.realpath(tmp)
        for rel, text in files.items():
            path = os.path.realpath(os.path.join(root, str(rel)))
            if not path.startswith(root + os.sep) or not isinstance(text, str):
                raise invalid(f"p4-source: bad file entry {rel!r}")
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w") as f:
                    f.write(text)
            except (OSError, ValueError) as exc:  # a NUL in the name, a file and a folder
                raise invalid(f"p4-source: bad file entry {rel!r}: {exc}") from None
        incs = [os.path.join(root, d) for d in include_dirs]
        defines = {str(k): str(v) for k, v in cfg.get("defines", {}).items()}
        try:
            # Includes stay among the files sent (and the bundled v1model.p4): the
            # server runs as root, and a diagnostic quotes the lines it read.
            prog = api.compile_file(os.path.join(root, main), incs, defines,
                                    include_roots=(root,))
        except Exception as exc:
            raise invalid(f"p4-source: compilation failed: {exc}") from None
    return P4SwitchDataplane(prog, index, clock, priority_queues=priority_queues, seed=seed)
