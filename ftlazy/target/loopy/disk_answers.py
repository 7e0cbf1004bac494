# SPDX-License-Identifier: MIT
"""Small answers of device probes cached on disk: one JSON object per
probe, key to answer, in :func:`~.probe.probe_cache_dir` (the barrier
probe's builds, the division probe's verdicts)."""

from __future__ import annotations

import json
import os
from typing import Any

__all__ = ["read_answer", "write_answer"]


def _path(file_name: str) -> Any:
    from ftlazy.target.loopy.probe import probe_cache_dir
    return probe_cache_dir() / file_name


def read_answer(file_name: str, key: str) -> Any:
    """The answer stored under *key* in *file_name*, or None (no file, an
    unreadable one, no such key)."""
    try:
        return json.loads(_path(file_name).read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None


def write_answer(file_name: str, key: str, value: Any) -> None:
    """Store *value* under *key* in *file_name*, replacing the file whole
    (a reader never sees half of it); an unwritable cache only costs the
    probe again."""
    path = _path(file_name)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            known = json.loads(path.read_text())
        except (OSError, ValueError):
            known = {}
        if not isinstance(known, dict):
            known = {}
        known[key] = value
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(known, indent=1, sort_keys=True))
        os.replace(tmp, path)
    except OSError:
        pass
