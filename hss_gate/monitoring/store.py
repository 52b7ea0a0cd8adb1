"""The production sample store: live (document, summary) pairs and the monitor's run history.

The samples come from files (hss_gate/monitoring/sample_files.py: JSON Lines or CSV, validated row
by row;
`ingest_file` adds them here); the records are hss_gate/monitoring/records.py's, importable from
here
too. :meth:`SampleStore.recent` and :meth:`SampleStore.runs` return newest first. Re-ingesting a
``sample_id`` already in the store counts as a duplicate and never overwrites.

The store is SQLAlchemy Core (sync) with bound parameters only: SQLite by default
(``sqlite:///.hss/samples.sqlite``), PostgreSQL via ``postgresql+psycopg://user@host:port/db``.
Timestamps are stored and returned as timezone-aware UTC.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from pydantic_core import PydanticSerializationError
from sqlalchemy.engine import Engine, make_url

from hss_gate.common.errors import InputError, StoreError
from hss_gate.common.redact import masked_url
from hss_gate.monitoring.records import (
    DEFAULT_CATEGORY,
    REQUIRED_FIELDS,
    SAMPLE_FIELDS,
    IngestOutcome,
    MonitorRun,
    RowError,
    Sample,
    as_utc,
)
from hss_gate.monitoring.sample_files import SummaryRecord, from_summaries, read_samples

__all__ = [
    "DEFAULT_CATEGORY",
    "MONITOR_RUNS",
    "REFERENCES",
    "REQUIRED_FIELDS",
    "SAMPLES",
    "SAMPLE_FIELDS",
    "IngestOutcome",
    "MonitorRun",
    "RowError",
    "Sample",
    "SampleStore",
    "SummaryRecord",
    "from_summaries",
    "ingest_file",
    "masked_url",
    "migrate",
    "read_samples",
]

CONNECT_TIMEOUT_S = 10.0
SHOWN_ERRORS = 5  # bad rows quoted in the InputError of ingest_file
_BATCH = 500

_METADATA = sa.MetaData()
_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # SQLite autoincrements INTEGER only

SAMPLES = sa.Table(
    "samples",
    _METADATA,
    sa.Column("seq", _ID, primary_key=True, autoincrement=True),  # insertion order
    sa.Column("sample_id", sa.String(), nullable=False, unique=True),
    sa.Column("document", sa.Text(), nullable=False),
    sa.Column("summary", sa.Text(), nullable=False),
    sa.Column("model_id", sa.String(), nullable=False),
    sa.Column("timestamp", sa.DateTime(timezone=True), nullable=False),
    sa.Column("category", sa.String(), nullable=False),
    sa.Column("ingested_at", sa.DateTime(timezone=True), nullable=False),
    sa.Index("ix_samples_timestamp", "timestamp", "seq"),
    sa.Index("ix_samples_model_timestamp", "model_id", "timestamp", "seq"),
)

MONITOR_RUNS = sa.Table(
    "monitor_runs",
    _METADATA,
    sa.Column("seq", _ID, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.String(), nullable=False, unique=True),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("model", sa.String(), nullable=False),
    sa.Column("n_samples", sa.Integer(), nullable=False),
    sa.Column("mean_hss", sa.Float(), nullable=True),
    sa.Column("ci_low", sa.Float(), nullable=True),
    sa.Column("ci_high", sa.Float(), nullable=True),
    sa.Column("drift", sa.Boolean(), nullable=False),
    sa.Column("drifted_columns", sa.JSON(), nullable=False),
    sa.Column("decision", sa.String(), nullable=False),
    sa.Column("details", sa.JSON(), nullable=False),
    sa.Index("ix_monitor_runs_started", "started_at", "seq"),
)


# One reference window per model id: pinned (`hss monitor --set-reference`: a time range) or
# the model's first `monitor.reference_window` samples (or first `monitor.reference_days`);
# `values` holds the window signals of its samples (monitor.WINDOW_COLUMNS) as scored by the
# checker `checker` (rescored when the checker, the samples or the columns change).
REFERENCES = sa.Table(
    "reference_windows",
    _METADATA,
    sa.Column("model_id", sa.String(), primary_key=True),
    sa.Column("pinned", sa.Boolean(), nullable=False),
    sa.Column("since", sa.DateTime(timezone=True), nullable=True),
    sa.Column("until", sa.DateTime(timezone=True), nullable=True),
    sa.Column("sample_ids", sa.JSON(), nullable=True),
    sa.Column("checker", sa.String(), nullable=True),
    sa.Column("values", sa.JSON(), nullable=True),
    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
)


def migrate(engine: Engine) -> list[str]:
    """Upgrade a store in place, nothing lost: create missing tables, then add missing columns
    (nullable ones only: every column added after the first release must be nullable).
    Returns what was added ("table" or "table.column")."""
    added: list[str] = []
    inspector = sa.inspect(engine)
    existing = set(inspector.get_table_names())
    added += [t.name for t in _METADATA.sorted_tables if t.name not in existing]
    _METADATA.create_all(engine)
    with engine.begin() as conn:
        # alembic (Prefect's own migration tool) builds the ALTER TABLE: no SQL from strings
        from alembic.migration import MigrationContext
        from alembic.operations import Operations

        operations = Operations(MigrationContext.configure(conn))
        for table in _METADATA.sorted_tables:
            if table.name not in existing:
                continue
            have = {c["name"] for c in inspector.get_columns(table.name)}
            for column in table.columns:
                if column.name in have:
                    continue
                if not column.nullable:
                    raise StoreError(f"cannot add the required column {table.name}.{column.name}")
                operations.add_column(table.name, sa.Column(column.name, column.type))
                added.append(f"{table.name}.{column.name}")
    return added


def _reason(exc: BaseException, password: str | None) -> str:
    """One line from a driver error, without SQLAlchemy's trailer or the password."""
    text = str(getattr(exc, "orig", None) or exc)
    text = re.sub(r"\(Background on this error at:[^)]*\)", "", text)
    text = " ".join(text.split())
    if password and len(password) >= 4:  # masking 1-3 characters would garble the text
        text = text.replace(password, "***")
    return text[:300] or type(exc).__name__


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class SampleStore:
    """Production samples and monitor runs in a SQL database (SQLite or PostgreSQL).

    Creates the ``samples``, ``monitor_runs`` and ``reference_windows`` tables when absent (and,
    for SQLite, the database file's directory) and upgrades an older store in place
    (:func:`migrate`). Every database failure raises :class:`StoreError` with the
    password masked. Usable as a context manager.
    """

    def __init__(self, url: str, *, connect_timeout: float = CONNECT_TIMEOUT_S) -> None:
        self.url = masked_url(url)
        try:
            parsed = make_url(url)
        except (sa.exc.ArgumentError, ValueError) as exc:
            raise StoreError(
                f"invalid sample store URL {self.url!r} "
                "(expected e.g. sqlite:///path/samples.sqlite or postgresql+psycopg://user@host/db)"
            ) from exc
        self._password = parsed.password
        self._engine = self._create_engine(parsed, connect_timeout)
        try:
            self.migrated = migrate(self._engine)
        except sa.exc.SQLAlchemyError as exc:
            self._engine.dispose()
            raise StoreError(f"cannot open the sample store {self.url}: {self._why(exc)}") from exc

    def _create_engine(self, parsed: sa.URL, connect_timeout: float) -> Engine:
        connect_args: dict[str, Any] = {}
        backend = parsed.get_backend_name()
        if backend == "sqlite":
            database = parsed.database or ""
            if database and database != ":memory:" and not database.startswith("file:"):
                try:
                    Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise StoreError(
                        f"cannot create the directory of {self.url}: {exc.strerror}"
                    ) from exc
            connect_args["timeout"] = connect_timeout  # waiting for a lock
        elif (
            backend == "postgresql"
            and parsed.get_driver_name() in ("psycopg", "psycopg2")
            and "connect_timeout" not in parsed.query
        ):
            connect_args["connect_timeout"] = max(2, math.ceil(connect_timeout))  # libpq minimum
        try:
            return sa.create_engine(parsed, connect_args=connect_args, pool_pre_ping=True)
        except (ImportError, sa.exc.NoSuchModuleError, sa.exc.ArgumentError) as exc:
            hint = " (use the psycopg driver: postgresql+psycopg://...)" * (backend == "postgresql")
            raise StoreError(
                f"cannot use the sample store {self.url}: {self._why(exc)}{hint}"
            ) from exc

    def _why(self, exc: BaseException) -> str:
        return _reason(exc, self._password)

    def __enter__(self) -> SampleStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the database connections."""
        self._engine.dispose()

    def ingest(self, samples: Iterable[Sample]) -> IngestOutcome:
        """Add samples in one transaction (all or nothing); stored sample_ids are kept as-is."""
        batch = list(samples)
        if not batch:
            return IngestOutcome(added=0, duplicates=0)
        now = datetime.now(UTC)
        rows: list[dict[str, Any]] = []
        duplicates = 0
        try:
            with self._engine.begin() as conn:
                known: set[str] = set()
                ids = list(dict.fromkeys(s.sample_id for s in batch))
                for chunk in _chunks(ids, _BATCH):
                    query = sa.select(SAMPLES.c.sample_id).where(SAMPLES.c.sample_id.in_(chunk))
                    known.update(conn.execute(query).scalars())
                for sample in batch:
                    if sample.sample_id in known:
                        duplicates += 1
                        continue
                    known.add(sample.sample_id)
                    rows.append({**sample.model_dump(), "ingested_at": now})
                for chunk in _chunks(rows, _BATCH):
                    conn.execute(sa.insert(SAMPLES), list(chunk))
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(
                f"{self.url}: ingest failed, nothing was written: {self._why(exc)}"
            ) from exc
        return IngestOutcome(added=len(rows), duplicates=duplicates)

    def recent(self, n: int, model_id: str | None = None) -> list[Sample]:
        """The n newest samples by timestamp (ties: the later ingested first), newest first."""
        if n < 0:
            raise InputError(f"the number of recent samples must be >= 0, got {n}")
        query = sa.select(*(SAMPLES.c[name] for name in SAMPLE_FIELDS))
        if model_id is not None:
            query = query.where(SAMPLES.c.model_id == model_id)
        query = query.order_by(SAMPLES.c.timestamp.desc(), SAMPLES.c.seq.desc()).limit(n)
        return self._samples(query, "samples")

    def _rows(self, query: sa.Select, what: str) -> Sequence[sa.RowMapping]:
        """Every row of a query; a database failure is a StoreError "cannot read `what`"."""
        try:
            with self._engine.connect() as conn:
                return conn.execute(query).mappings().all()
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(f"{self.url}: cannot read {what}: {self._why(exc)}") from exc

    def _samples(self, query: sa.Select, what: str) -> list[Sample]:
        return [Sample.model_validate(dict(row)) for row in self._rows(query, what)]

    def first(self, n: int, model_id: str) -> list[Sample]:
        """The n oldest samples of a model id by timestamp (ties: ingest order), oldest first."""
        query = (
            sa.select(*(SAMPLES.c[name] for name in SAMPLE_FIELDS))
            .where(SAMPLES.c.model_id == model_id)
            .order_by(SAMPLES.c.timestamp, SAMPLES.c.seq)
            .limit(max(n, 0))
        )
        return self._samples(query, "samples")

    def between(self, model_id: str, since: datetime, until: datetime) -> list[Sample]:
        """A model id's samples with since <= timestamp < until, oldest first."""
        query = (
            sa.select(*(SAMPLES.c[name] for name in SAMPLE_FIELDS))
            .where(
                SAMPLES.c.model_id == model_id,
                SAMPLES.c.timestamp >= as_utc(since),
                SAMPLES.c.timestamp < as_utc(until),
            )
            .order_by(SAMPLES.c.timestamp, SAMPLES.c.seq)
        )
        return self._samples(query, "samples")

    def after(self, model_id: str, since: datetime, n: int) -> list[Sample]:
        """At most n samples of a model id with timestamp > since (the newest of them), newest
        first (ties: the later ingested first)."""
        if n < 0:
            raise InputError(f"the number of samples must be >= 0, got {n}")
        query = (
            sa.select(*(SAMPLES.c[name] for name in SAMPLE_FIELDS))
            .where(SAMPLES.c.model_id == model_id, SAMPLES.c.timestamp > as_utc(since))
            .order_by(SAMPLES.c.timestamp.desc(), SAMPLES.c.seq.desc())
            .limit(n)
        )
        return self._samples(query, "samples")

    def model_ids(self) -> list[str]:
        """Every model id in the store, by the time it first served (oldest first)."""
        first = sa.func.min(SAMPLES.c.timestamp)
        query = (
            sa.select(SAMPLES.c.model_id, first.label("first"))
            .group_by(SAMPLES.c.model_id)
            .order_by(first, SAMPLES.c.model_id)
        )
        try:
            with self._engine.connect() as conn:
                return [row[0] for row in conn.execute(query)]
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(f"{self.url}: cannot read model ids: {self._why(exc)}") from exc

    def reference(self, model_id: str) -> dict[str, Any] | None:
        """The stored reference window of a model id (pinned range, scores), or None."""
        query = sa.select(REFERENCES).where(REFERENCES.c.model_id == model_id)
        rows = self._rows(query, "reference windows")  # model_id is the key: one row or none
        if not rows:
            return None
        out = dict(rows[0])
        for key in ("since", "until", "updated_at"):
            if out[key] is not None:
                out[key] = as_utc(out[key])
        return out

    def save_reference(
        self,
        model_id: str,
        *,
        pinned: bool,
        since: datetime | None = None,
        until: datetime | None = None,
        sample_ids: Sequence[str] | None = None,
        checker: str | None = None,
        values: Mapping[str, Sequence[float]] | None = None,
    ) -> None:
        """Store (replace) a model id's reference window: its range if pinned, and the served
        signals of its samples with the checker that scored them."""
        row = {
            "model_id": model_id,
            "pinned": pinned,
            "since": None if since is None else as_utc(since),
            "until": None if until is None else as_utc(until),
            "sample_ids": None if sample_ids is None else list(sample_ids),
            "checker": checker,
            "values": None if values is None else {k: list(v) for k, v in values.items()},
            "updated_at": datetime.now(UTC),
        }
        try:
            with self._engine.begin() as conn:
                conn.execute(sa.delete(REFERENCES).where(REFERENCES.c.model_id == model_id))
                conn.execute(sa.insert(REFERENCES), row)
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(
                f"{self.url}: cannot store the reference window of {model_id!r}: {self._why(exc)}"
            ) from exc

    def count(self) -> int:
        """How many samples the store holds."""
        try:
            with self._engine.connect() as conn:
                return int(conn.execute(sa.select(sa.func.count()).select_from(SAMPLES)).scalar())
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(f"{self.url}: cannot count samples: {self._why(exc)}") from exc

    def record_run(self, run: MonitorRun | Mapping[str, Any]) -> None:
        """Append a monitor run (or its fields, validated here) to the history; a run_id can be
        recorded once."""
        if not isinstance(run, MonitorRun):
            run = MonitorRun.model_validate(run)
        try:
            row = run.model_dump(mode="json", exclude={"started_at"})
        except PydanticSerializationError as exc:
            raise StoreError(f"monitor run {run.run_id!r}: details are not JSON: {exc}") from exc
        row["started_at"] = run.started_at
        row["mean_hss"], row["ci_low"], row["ci_high"] = run.mean_hss, run.ci_low, run.ci_high
        try:
            with self._engine.begin() as conn:
                conn.execute(sa.insert(MONITOR_RUNS), row)
        except sa.exc.IntegrityError as exc:
            raise StoreError(
                f"{self.url}: monitor run {run.run_id!r} is already recorded ({self._why(exc)})"
            ) from exc
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(
                f"{self.url}: cannot record the monitor run: {self._why(exc)}"
            ) from exc

    def mark_run_failed(self, run_id: str, reasons: list[str], kind: str = "full") -> None:
        """Turn a recorded run's verdict into "error" (its reports could not be written)."""
        update = (
            sa.update(MONITOR_RUNS)
            .where(MONITOR_RUNS.c.run_id == run_id)
            .values(decision="error", details={"kind": kind, "reasons": list(reasons)})
        )
        try:
            with self._engine.begin() as conn:
                if conn.execute(update).rowcount != 1:
                    raise StoreError(f"{self.url}: monitor run {run_id!r} is not recorded")
        except sa.exc.SQLAlchemyError as exc:
            raise StoreError(
                f"{self.url}: cannot mark monitor run {run_id!r} failed: {self._why(exc)}"
            ) from exc

    def runs(self, limit: int = 100) -> list[MonitorRun]:
        """The latest monitor runs, newest first (by started_at, then recording order)."""
        if limit < 0:
            raise InputError(f"the number of runs must be >= 0, got {limit}")
        columns = [MONITOR_RUNS.c[name] for name in MonitorRun.model_fields]
        query = (
            sa.select(*columns)
            .order_by(MONITOR_RUNS.c.started_at.desc(), MONITOR_RUNS.c.seq.desc())
            .limit(limit)
        )
        rows = self._rows(query, "monitor runs")
        return [MonitorRun.model_validate(dict(row)) for row in rows]


def ingest_file(
    path: str | Path, url: str, *, skip_bad: bool = False, summaries: SummaryRecord | None = None
) -> tuple[IngestOutcome, list[RowError]]:
    """Validate a sample file and add its rows to the store at ``url``.

    With bad rows and ``skip_bad=False`` nothing is ingested and :class:`InputError` names the
    count and the first few ``file:line: message``. With ``skip_bad=True`` the valid rows are
    ingested and every bad row is returned for the caller to report.
    """
    samples, errors = read_samples(path, summaries)
    if errors and not skip_bad:
        shown = "; ".join(f"{path}:{e.line}: {e.message}" for e in errors[:SHOWN_ERRORS])
        more = f"; ... and {len(errors) - SHOWN_ERRORS} more" if len(errors) > SHOWN_ERRORS else ""
        raise InputError(
            f"{path}: {len(errors)} bad row(s), nothing ingested "
            f"(fix them, or skip them explicitly with skip_bad / --skip-bad): {shown}{more}"
        )
    with SampleStore(url) as store:
        report = store.ingest(samples)
    return report, errors
