"""The installed version of patience-prover, for answers that must name it."""

from __future__ import annotations

import functools
from importlib import metadata


@functools.cache  # a lookup scans sys.path; every submission key asks
def version() -> str:
    """Return the installed package's version, or ``"unknown"`` from a bare tree."""
    try:
        return metadata.version("patience-prover")
    except metadata.PackageNotFoundError:
        return "unknown"
