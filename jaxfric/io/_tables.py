"""Checks shared by the identify and optimize configuration readers: the
sections of a configuration and dotted paths into a model or force."""

from collections.abc import Mapping, Sequence
from typing import Any

from .config import ConfigError


def check_sections(
    data: Mapping[str, Any], allowed: Sequence[str], required: Sequence[str]
) -> None:
    """Raise `ConfigError` for an unknown or a missing section."""
    for key in data:
        if key not in allowed:
            raise ConfigError(
                f"unknown section [{key}]; allowed sections: "
                f"{', '.join(f'[{s}]' for s in allowed)}."
            )
    for key in required:
        if key not in data:
            raise ConfigError(f"missing section [{key}].")


def resolve_path(obj, path: str):
    """``"friction.fc"`` -> ``obj.friction.fc`` (attribute chain)."""
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


__all__ = ["check_sections", "resolve_path"]
