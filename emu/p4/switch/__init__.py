"""The switch daemon (`python -m emu.p4 switch`): see daemon.py."""
