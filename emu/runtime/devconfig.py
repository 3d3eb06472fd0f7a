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

A compiled program is generated Python, which loading it runs: the two compiled formats
are refused unless the device trusts its clients (the daemon's
`--trust-compiled-configs`), since any client that reaches the P4Runtime port could
otherwise run code in the switch (docs/security.md). `p4-source` is what the project's
own controller and daemon send.
A BMv2 JSON (an object with "header_types") is rejected with a message that says so.
Errors are INVALID_ARGUMENT (the P4Runtime code for a config the target cannot use).
"""

from __future__ import annotations

import base64
import importlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from emu.core.clock import Clock

from .errors import invalid, unimplemented
from .infoplane import NullDataplane
from .p4switch_adapter import P4SwitchDataplane
from .sourcebundle import BundleError, bundle_digest, written_bundle
from .translate import P4InfoIndex

__all__ = ["load_dataplane", "make_compiled_config", "make_null_config",
           "make_program_config", "make_source_config"]

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


def make_program_config(path: str, include_dirs: Sequence[str] = (),
                        defines: Mapping[str, str] | None = None) -> bytes:
    """The p4-source config of the P4 program at `path`: the files it reads
    (emu.p4.bundle). P4Error when it does not preprocess."""
    from emu.p4.bundle import source_bundle

    return json.dumps(source_bundle(path, include_dirs, defines)).encode()


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
                   priority_queues: int = 1, seed: int = 0,
                   trust_compiled: bool = False) -> Any:
    """Build (but do not start) the Dataplane a device config describes.

    `priority_queues` (per egress port) and `seed` (the random draws) apply to
    compiled programs; `trust_compiled` allows the formats that carry generated code.
    """
    cfg = parse(device_config)
    fmt = cfg.get("format")
    if fmt == "emu-null-v1":
        return NullDataplane(index, clock)
    if fmt == "p4-source":
        return _from_source(index, cfg, clock, priority_queues, seed)
    if fmt is not None and fmt not in ("emu-compiled-v1", _ARTEFACT):
        raise invalid(f"p4_device_config format {fmt!r} is not supported; this target "
                      f"takes p4-source, emu-null-v1, emu-compiled-v1 or the compiler's "
                      f"{_ARTEFACT} artefact (see emu.runtime.devconfig)")
    if not trust_compiled:
        raise invalid(
            f"p4_device_config format {fmt or _ARTEFACT!r} carries a compiled program, "
            "generated Python that loading it would run: this switch runs one only when "
            "started with --trust-compiled-configs (any client reaching its P4Runtime "
            "port could run code in it); send the P4 sources instead (p4-source: the "
            "<prog>.p4src.json python -m emu.p4 compile writes, or "
            "emu.runtime.devconfig.make_program_config)")
    if fmt == "emu-compiled-v1":
        try:
            blob = base64.b64decode(cfg["compiled"], validate=True)
        except (KeyError, TypeError, ValueError):
            raise invalid("emu-compiled-v1: 'compiled' must be base64") from None
        return _from_compiled(index, blob, clock, priority_queues, seed)
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
    _api()  # the compiler is there
    try:
        prog = _compile_bundle(cfg)
    except BundleError as exc:  # an entry that leaves the folder or cannot be written
        raise invalid(f"p4-source: {exc}") from None
    except Exception as exc:
        raise invalid(f"p4-source: compilation failed: {exc}") from None
    return P4SwitchDataplane(prog, index, clock, priority_queues=priority_queues, seed=seed)


def precompile(device_config: bytes) -> None:
    """Compile a p4-source config (make_program_config) as a switch loading it will, so
    that every switch finds it in the compile cache. The compiler's errors (P4Error)
    as it raises them."""
    _compile_bundle(json.loads(device_config))


def _compile_bundle(cfg: dict[str, Any]) -> Any:
    from emu.p4.target.compile_cache import compile_file_cached

    defines = {str(k): str(v) for k, v in cfg.get("defines", {}).items()}
    with written_bundle(cfg["files"]) as root:
        # Includes stay among the files sent (and the bundled v1model.p4): the server
        # runs as root, and a diagnostic quotes the lines it read. They are all the
        # program can read, so their digest keys the compile cache: a hit parses nothing.
        return compile_file_cached(os.path.join(root, cfg["main"]),
                                   [os.path.join(root, d) for d in cfg.get("include_dirs", [])],
                                   defines, include_roots=(root,),
                                   inputs_digest=bundle_digest(cfg["files"]))
