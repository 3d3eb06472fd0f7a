"""The switch daemon (`python -m emu.switch`): AF_PACKET ports, the compiled v1model
pipeline and its traffic manager, a P4Runtime server (emu.runtime) and an admin
socket, one process per switch. See daemon.py.

Imports: emu.runtime and the layers below it (emu.p4, emu.roce, emu.topo, emu.core).
Layer 5 of the package layers that pyproject.toml's import-linter contracts enforce;
nothing above it."""
