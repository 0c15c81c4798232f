"""Run code in a new Python interpreter: what a test process imported already cannot
hide what the code imports itself."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def printed_by(code: str, timeout: float = 120.0) -> str:
    """What ``code`` (dedented) prints when run by a new interpreter of this environment;
    an assertion error holding its standard error if it fails."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout
