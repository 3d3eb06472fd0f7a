"""`python -m emu.switch ...`: the switch daemon (see commands.py and daemon.py)."""

import sys

# Before the slow imports: the daemon must notice a launcher that exits meanwhile.
from emu.switch import early

if not early.arm(sys.argv[1:]):
    sys.exit(1)

from emu.switch.commands import main  # noqa: E402

sys.exit(main())
