"""The sample store on a real PostgreSQL server (HSS_TEST_POSTGRES_URL).

Start a throwaway server with `eval "$(scripts/postgres.sh start)"` (.ci/run does this). Each test
gets a fresh database on that server, so the URL's user needs the CREATEDB privilege.
"""

from __future__ import annotations

import os
import uuid

import pytest
import sqlalchemy as sa

from hss_gate.common.errors import StoreError
from hss_gate.monitoring.store import SampleStore
from tests.unit.test_samples import StoreBehaviours, sample

POSTGRES_URL = os.environ.get("HSS_TEST_POSTGRES_URL", "")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not POSTGRES_URL,
        reason="HSS_TEST_POSTGRES_URL is not set: no PostgreSQL server to test against "
        '(start one with `eval "$(scripts/postgres.sh start)"`; .ci/run does this)',
    ),
]


@pytest.fixture
def store_url():
    """A new, empty database on the test server; dropped afterwards."""
    name = f"hss_test_{uuid.uuid4().hex[:12]}"  # generated, so safe to put in DDL
    admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        yield sa.make_url(POSTGRES_URL).set(database=name).render_as_string(hide_password=False)
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


class TestPostgresStore(StoreBehaviours):
    def test_schema_uses_timestamptz_and_stays_utc(self, store_url):
        with SampleStore(store_url) as store:
            store.ingest([sample("a")])
        engine = sa.create_engine(store_url)
        try:
            columns = {c["name"]: c["type"] for c in sa.inspect(engine).get_columns("samples")}
            assert columns["timestamp"].timezone is True
            with engine.connect() as conn:
                conn.execute(sa.text("SET TIME ZONE 'Asia/Kolkata'"))
                stored = conn.execute(sa.text("SELECT timestamp FROM samples")).scalar_one()
        finally:
            engine.dispose()
        assert stored.utcoffset().total_seconds() == 5.5 * 3600  # really a zoned instant
        with SampleStore(store_url) as store:
            assert store.recent(1)[0].timestamp == sample("a").timestamp

    def test_an_older_store_upgrades_in_place(self, store_url):
        """A store as the code before reference windows made it (no reference_windows table),
        and one whose reference_windows lacks later columns: both upgrade, rows kept."""
        from hss_gate.monitoring.store import MONITOR_RUNS, SAMPLES

        engine = sa.create_engine(store_url)
        try:
            SAMPLES.create(engine)
            MONITOR_RUNS.create(engine)
        finally:
            engine.dispose()
        with SampleStore(store_url) as store:
            store.ingest([sample("a")])
        with SampleStore(store_url) as store:
            assert store.migrated == []
        engine = sa.create_engine(store_url)
        try:
            with engine.begin() as conn:
                conn.execute(sa.text('ALTER TABLE reference_windows DROP COLUMN "values"'))
        finally:
            engine.dispose()
        with SampleStore(store_url) as store:
            assert store.migrated == ["reference_windows.values"]
            store.save_reference("m", pinned=False, values={"x": [0.5]})
            assert store.reference("m")["values"] == {"x": [0.5]}
            assert store.count() == 1


def test_missing_database_is_a_store_error():
    url = sa.make_url(POSTGRES_URL).set(database="hss_no_such_db", password="pw-hidden-1")
    with pytest.raises(StoreError, match="cannot open the sample store") as caught:
        SampleStore(url.render_as_string(hide_password=False))
    assert "pw-hidden-1" not in str(caught.value)
    assert "hss_no_such_db" in str(caught.value)
