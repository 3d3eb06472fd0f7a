"""Experiments: `emu run` (plan -> fabric + host agents -> workload -> metrics -> results),
`emu calibrate`, `emu incast`, and `emu stop` (over emu.core.runstate). See README.md in
this package.

Imports: emu.net and every layer below it. Layer 10, beside emu.crosscheck (neither
imports the other) of the package layers that pyproject.toml's import-linter contracts
enforce; nothing above it."""
