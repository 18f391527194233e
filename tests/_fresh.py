"""Run a script in a fresh Python process: one in which JAX has not started,
so that ``XLA_FLAGS`` and the platform are still read (`test_sharding`,
`test_xla`)."""

import os
import subprocess
import sys


def run_fresh(
    script: str, xla_flags: str | None, drop: tuple[str, ...] = ()
) -> subprocess.CompletedProcess:
    """`script` under ``python -c`` on JAX's CPU platform, with ``XLA_FLAGS``
    set to `xla_flags` (None: unset) and the variables in `drop` removed from
    this process's environment; it must exit cleanly within 600 s."""
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", *drop)}
    env["JAX_PLATFORMS"] = "cpu"
    if xla_flags is not None:
        env["XLA_FLAGS"] = xla_flags
    run = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    return run
