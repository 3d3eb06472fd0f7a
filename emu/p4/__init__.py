"""The embedded v1model P4 target: the compiler (front end -> checks -> code generation),
the v1model library (tables, externs, traffic manager), STF tests, and a program's
sources bundled for a switch to compile (bundle.py).

Imports: emu.topo and emu.core; it may build P4Info with p4.config.v1 messages, as p4c
does, but imports nothing of p4.v1, grpc or emu.runtime. Layer 3, beside emu.roce
(neither imports the other) of the package layers that pyproject.toml's import-linter
contracts enforce; nothing above it."""


def __getattr__(name: str):  # lazy: importing emu.p4 stays cheap
    if name in ("compile_file", "CompiledProgram", "compile_source"):
        from emu.p4.target import program

        return getattr(program, name)
    raise AttributeError(name)
