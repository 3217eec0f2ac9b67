"""`python -m gpushare <command>`: the same CLI as the `gpushare` command (`gpushare.cli`)."""

from gpushare.cli import console_main

if __name__ == "__main__":
    console_main()
