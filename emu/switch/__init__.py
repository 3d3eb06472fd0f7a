"""The switch daemon (`python -m emu.switch`): AF_PACKET ports, the compiled v1model
pipeline and its traffic manager, a P4Runtime server (emu.runtime) and an admin
socket, one process per switch. See daemon.py."""
