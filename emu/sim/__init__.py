"""Virtual-time fabric: embedded P4 switches, in-memory links and simple hosts on one
VirtualClock, programmed by the fabric controller (see emu.sim.fabric.SimFabric)."""
