"""The embedded v1model P4 target: front end, runtime library, STF tests."""


def __getattr__(name: str):  # lazy: importing emu.p4 stays cheap
    if name in ("compile_file", "CompiledProgram", "compile_source"):
        from emu.p4.target import program

        return getattr(program, name)
    raise AttributeError(name)
