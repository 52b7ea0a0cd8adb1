"""On-disk cache (SQLite, WAL): summaries, embeddings and perturbations by content key.

Every write is its own committed transaction, so a killed run leaves only whole entries and
two processes can share one cache.
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

BUSY_TIMEOUT_S = 60.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    PRIMARY KEY (namespace, key)
)
"""


def content_key(*parts: str) -> str:
    """sha256 over the parts, unambiguously joined."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


class Cache:
    """A namespaced key-value store; `Cache(None)` keeps everything in memory."""

    def __init__(self, directory: str | Path | None) -> None:
        if directory is None:
            path = ":memory:"
        else:
            Path(directory).mkdir(parents=True, exist_ok=True)
            path = str(Path(directory) / "cache.sqlite")
        self._db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        self._setup()

    def _setup(self) -> None:
        """WAL mode and the table. Switching to WAL while other processes open the same new
        file can fail at once with "database is locked" (SQLite skips the busy handler there to
        avoid a deadlock), so that step is retried until the busy timeout."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        delay = 0.01
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA busy_timeout=60000")  # BUSY_TIMEOUT_S
                self._db.execute(_SCHEMA)
                self._db.commit()
                return
            except sqlite3.OperationalError as exc:
                locked = "locked" in str(exc) or "busy" in str(exc)
                if not locked or time.monotonic() + delay > deadline:
                    raise
                self._db.rollback()
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def get_many(self, namespace: str, keys: Iterable[str]) -> dict[str, bytes]:
        """The stored values of those keys that are present."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, bytes] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, value FROM entries WHERE namespace = ? AND key IN ({marks})",
                [namespace, *chunk],
            )
            found.update({k: bytes(v) for k, v in rows})
        return found

    def put_many(self, namespace: str, items: Mapping[str, bytes]) -> None:
        """Store values in one transaction (all or nothing)."""
        with self._db:
            self._db.executemany(
                "INSERT OR REPLACE INTO entries (namespace, key, value) VALUES (?, ?, ?)",
                [(namespace, k, v) for k, v in items.items()],
            )

    def count(self, namespace: str) -> int:
        return self._db.execute(
            "SELECT COUNT(*) FROM entries WHERE namespace = ?", (namespace,)
        ).fetchone()[0]

    def close(self) -> None:
        self._db.close()
