"""A compile cache of optimized blocks, shared by every run of the same user.

An entry is keyed by the content of everything the optimization depends on (the
canonical block, the rules' egglog text, the hardware, the limits, the extractor and
eqsat's version), so a changed rule or hardware field is a miss, never a stale hit.
Entries are JSON (never unpickled: a cache directory is not trusted code), written to a
temporary file and renamed into place, so concurrent processes see an entry whole or
not at all; an unreadable entry is a miss. The directory is kept under a size bound by
dropping the least recently used entries.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
FORMAT = 1  # bump when the entry layout changes


def default_cache_dir() -> Path:
    """$EQSAT_CACHE_DIR, else the XDG cache directory: $XDG_CACHE_HOME/eqsat/compile
    (~/.cache/eqsat/compile)."""
    explicit = os.environ.get("EQSAT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "eqsat" / "compile"


def content_key(*parts: str) -> str:
    h = hashlib.sha256(f"eqsat-compile-cache/{FORMAT}".encode())
    for part in parts:
        data = part.encode()
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()


@dataclass
class CompileCache:
    directory: Path
    max_bytes: int = DEFAULT_MAX_BYTES
    hits: int = 0
    misses: int = 0

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            self.misses += 1
            return None
        if not isinstance(entry, dict) or entry.get("key") != key:
            self.misses += 1
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used: kept longest
        self.hits += 1
        return entry

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Store an entry (best effort: a cache that cannot be written is no cache)."""
        path = self._path(key)
        text = json.dumps({**entry, "key": key}, separators=(",", ":"))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError:
            return
        self.trim()

    def trim(self) -> None:
        """Drop the least recently used entries until the directory fits max_bytes."""
        try:
            entries = [
                (st.st_mtime, st.st_size, p)
                for p in self.directory.glob("*/*.json")
                if (st := _stat(p)) is not None
            ]
        except OSError:
            return
        total = sum(size for _, size, _ in entries)
        for _, size, p in sorted(entries):
            if total <= self.max_bytes:
                break
            with contextlib.suppress(OSError):
                p.unlink()
                total -= size


def _stat(p: Path):
    try:
        return p.stat()
    except OSError:
        return None
