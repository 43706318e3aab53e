"""`python -m harness` and the `harness` executable.

`harness --version` is answered here, before the command line (which imports every command
and takes seconds) is loaded; anything else goes to `harness.cli.main`.
"""

from __future__ import annotations

import sys

from harness.version import DISTRIBUTION, installed_version


def main() -> None:
    """Run the `harness` command line with this process's arguments."""
    if sys.argv[1:] == ["--version"]:
        print(f"{DISTRIBUTION} {installed_version()}")
        return
    # Imported here, not above, so that `--version` does not pay for it.
    from harness.cli import main as run_cli

    run_cli()


if __name__ == "__main__":
    main()
