"""emu: packet-level emulator of AI-training RoCEv2 fabrics with P4 switches."""

__version__ = "0.1.0"
