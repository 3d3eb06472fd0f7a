"""The embedded v1model target: compiled program artefact, runtime support, the switch."""

from .program import CompiledProgram, compile_checked, compile_file, compile_source
from .switch import Digest, OutputPacket, V1ModelSwitch

__all__ = ["CompiledProgram", "Digest", "OutputPacket", "V1ModelSwitch", "compile_checked",
           "compile_file", "compile_source"]
