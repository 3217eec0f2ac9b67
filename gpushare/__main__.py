"""`python -m gpushare <command>`: the same CLI as the `gpushare` command (`gpushare.cli`)."""

import sys

from gpushare.cli import main

if __name__ == "__main__":
    sys.exit(main())
