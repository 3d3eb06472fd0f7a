"""`python -m emu.p4`: see emu/p4/cli.py."""

import sys

if sys.argv[1:2] == ["switch"]:
    # Before the slow imports: the daemon must notice a launcher that exits meanwhile.
    from emu.p4.switch import early

    if not early.arm(sys.argv[2:]):
        sys.exit(1)

from emu.p4.cli import main  # noqa: E402

sys.exit(main())
