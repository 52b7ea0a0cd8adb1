"""The production sample store: reading sample files, and the store on SQLite.

`StoreBehaviours` holds the store tests that must hold on every backend; the PostgreSQL integration
test reuses it with its own `store_url` fixture.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta, timezone

import pytest

from hss_gate.common.errors import InputError, StoreError
from hss_gate.monitoring.store import (
    IngestOutcome,
    MonitorRun,
    RowError,
    Sample,
    SampleStore,
    ingest_file,
    masked_url,
    read_samples,
)

pytestmark = pytest.mark.unit

T0 = datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
INJECTION = "x'); DROP TABLE samples;--"


def row(sample_id: str, **over) -> dict:
    base = {
        "sample_id": sample_id,
        "document": f'Document {sample_id}. It has, commas and "quotes".',
        "summary": f"Summary {sample_id}.",
        "model_id": "prod-v1",
        "timestamp": "2025-03-01T12:00:00Z",
    }
    return base | over


def sample(sample_id: str, minutes: int = 0, **over) -> Sample:
    fields = {
        "sample_id": sample_id,
        "document": f"Document {sample_id} — naïve café ✓",
        "summary": "",
        "model_id": "prod-v1",
        "timestamp": T0 + timedelta(minutes=minutes),
        "category": "news",
    }
    return Sample(**(fields | over))


def write_jsonl(path, rows) -> str:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def lines_of(errors: list[RowError]) -> list[int]:
    return [e.line for e in errors]


# ---------------------------------------------------------------------------- Sample


def test_sample_timestamps_become_aware_utc():
    naive = Sample(**row("a", timestamp="2025-03-01T12:00:00"))
    offset = Sample(**row("b", timestamp="2025-03-01T14:00:00+02:00"))
    zulu = Sample(**row("c", timestamp="2025-03-01T12:00:00Z"))
    expected = datetime(2025, 3, 1, 12, tzinfo=UTC)
    for s in (naive, offset, zulu):
        assert s.timestamp == expected
        assert s.timestamp.utcoffset() == timedelta(0)
    obj = Sample(
        **row("d", timestamp=datetime(2025, 3, 1, 13, tzinfo=timezone(timedelta(hours=1))))
    )
    assert obj.timestamp == expected and obj.timestamp.tzinfo == UTC


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"summary": None}, "field 'summary': Input should be a valid string"),
        ({"sample_id": "  "}, "field 'sample_id': must not be blank"),
        ({"document": ""}, "field 'document': must not be blank"),
        ({"model_id": "\t"}, "field 'model_id': must not be blank"),
        ({"timestamp": "yesterday"}, "not an ISO 8601 timestamp"),
        ({"timestamp": 1740830400}, "expected an ISO 8601 timestamp string, got int"),
        ({"categroy": "news"}, "unknown field 'categroy'"),
    ],
)
def test_row_rejects(tmp_path, fields, message):
    with pytest.raises(ValueError):
        Sample(**(row("a") | fields))
    samples, errors = read_samples(write_jsonl(tmp_path / "one.jsonl", [row("a") | fields]))
    assert samples == []
    assert len(errors) == 1 and errors[0].line == 1
    assert message in errors[0].message


def test_sample_summary_may_be_empty_but_required():
    assert Sample(**row("a", summary="")).summary == ""
    assert Sample(**row("a")).category == "unspecified"
    without = {k: v for k, v in row("a").items() if k != "summary"}
    with pytest.raises(ValueError, match="summary"):
        Sample(**without)


# ---------------------------------------------------------------------------- reading files


def test_jsonl_round_trip(tmp_path):
    rows = [
        row("a", category="legal"),
        row("b", summary="", timestamp="2025-03-01T14:30:00+02:00"),
        row("c", document="Ünïcode ✓ 文"),
    ]
    samples, errors = read_samples(write_jsonl(tmp_path / "s.jsonl", rows))
    assert errors == []
    assert [s.model_dump(mode="json") for s in samples] == [
        row("a", category="legal", timestamp="2025-03-01T12:00:00Z"),
        row("b", summary="", timestamp="2025-03-01T12:30:00Z", category="unspecified"),
        row("c", document="Ünïcode ✓ 文", timestamp="2025-03-01T12:00:00Z", category="unspecified"),
    ]
    # .json is read as JSON Lines too
    same, _ = read_samples(write_jsonl(tmp_path / "s.json", rows))
    assert same == samples


def test_csv_round_trip_with_multiline_field_and_bom(tmp_path):
    path = tmp_path / "s.csv"
    path.write_bytes(
        (
            "\ufeffsample_id,document,summary,model_id,timestamp,category\r\n"
            'a,"Line one,\r\nline ""two""",sum a,m1,2025-03-01T12:00:00,legal\r\n'
            "b,plain doc,,m2,2025-03-01T13:00:00+01:00,\r\n"
        ).encode()
    )
    samples, errors = read_samples(path)
    assert errors == []
    assert [s.sample_id for s in samples] == ["a", "b"]
    assert samples[0].document == 'Line one,\r\nline "two"'
    assert samples[0].category == "legal"
    assert samples[1].summary == "" and samples[1].category == "unspecified"
    assert samples[1].timestamp == datetime(2025, 3, 1, 12, tzinfo=UTC)


def test_jsonl_bad_rows_have_their_line_numbers(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = json.dumps(row("ok1")).encode()
    path.write_bytes(
        b"\n".join(
            [
                good,  # 1
                b"",  # 2 blank: skipped
                b'{"sample_id": "x",',  # 3
                b"[1, 2]",  # 4
                b'{"sample_id": "\xff\xfe", "document": "d"}',  # 5
                json.dumps({k: v for k, v in row("m").items() if k != "summary"}).encode(),  # 6
                json.dumps(row("blank", model_id=" ")).encode(),  # 7
                json.dumps(row("ts", timestamp="2025-02-30T00:00:00")).encode(),  # 8
                json.dumps(row("ok1", summary="again")).encode(),  # 9
                json.dumps(row("typo") | {"categroy": "x"}).encode(),  # 10
                json.dumps(row("ok2")).encode(),  # 11
            ]
        )
        + b"\n"
    )
    samples, errors = read_samples(path)
    assert [s.sample_id for s in samples] == ["ok1", "ok2"]
    assert samples[0].summary == "Summary ok1."  # the first of a duplicated id is kept
    assert lines_of(errors) == [3, 4, 5, 6, 7, 8, 9, 10]
    messages = [e.message for e in errors]
    assert messages[0].startswith("invalid JSON")
    assert messages[1] == "expected a JSON object, got an array"
    assert messages[2].startswith("not valid UTF-8")
    assert messages[3] == "missing field 'summary'"
    assert messages[4] == "field 'model_id': must not be blank"
    assert "not an ISO 8601 timestamp" in messages[5]
    assert messages[6] == "duplicate sample_id 'ok1' (first at line 1)"
    assert messages[7].startswith("unknown field 'categroy'")


def test_csv_bad_rows_have_their_physical_line_numbers(tmp_path):
    path = tmp_path / "bad.csv"
    text = (
        "sample_id,document,summary,model_id,timestamp\n"  # 1
        'a,"first line\nsecond line\nthird, with comma",s,m,2025-03-01T12:00:00\n'  # 2-4
        "b,doc,s,m,not-a-time\n"  # 5
        "c,doc,\xffs,m,2025-03-01T12:00:00\n"  # 6: invalid UTF-8 (byte replaced below)
        'd,"two\nlines",s,m,2025-03-01T12:00:00\n'  # 7-8
        "\n"  # 9 blank: skipped
        "a,again,s,m,2025-03-01T12:00:00\n"  # 10
        "e,doc,s\n"  # 11
        'f,"bad"quote,s,m,2025-03-01T12:00:00\n'  # 12
        "g,doc,,m,2025-03-01T12:00:00\n"  # 13
    )
    path.write_bytes(text.encode("utf-8").replace("\xff".encode(), b"\xff"))
    samples, errors = read_samples(path)
    assert [s.sample_id for s in samples] == ["a", "d", "g"]
    assert samples[0].document == "first line\nsecond line\nthird, with comma"
    assert lines_of(errors) == [5, 6, 10, 11, 12]
    assert "not an ISO 8601 timestamp: 'not-a-time'" in errors[0].message
    assert errors[1].message == "not valid UTF-8"
    assert errors[2].message == "duplicate sample_id 'a' (first at line 2)"
    assert errors[3].message == "3 values but the header has 5 columns"
    assert errors[4].message.startswith("malformed CSV")


def test_csv_unterminated_quote_is_reported_not_swallowed(tmp_path):
    path = tmp_path / "open.csv"
    path.write_text(
        "sample_id,document,summary,model_id,timestamp\n"
        "a,doc,s,m,2025-03-01T12:00:00\n"
        'b,"never closed,s,m,2025-03-01T12:00:00\n'
        "c,doc,s,m,2025-03-01T12:00:00\n"
    )
    samples, errors = read_samples(path)
    assert [s.sample_id for s in samples] == ["a"]
    assert errors == [RowError(3, "unterminated quoted field: lines 3-4 unreadable")]


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("sample_id,document,summary,model_id,timestamp,categroy", "unknown column.*'categroy'"),
        ("sample_id,document,model_id,timestamp", "missing column.*'summary'"),
        ("sample_id,document,summary,model_id,timestamp,summary", "repeated column.*'summary'"),
    ],
)
def test_csv_header_problems_reject_the_file(tmp_path, header, message):
    path = tmp_path / "h.csv"
    path.write_text(header + "\na,doc,s,m,2025-03-01T12:00:00\n")
    with pytest.raises(InputError, match=f"h.csv:1: CSV header: {message}"):
        read_samples(path)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("empty.jsonl", "", "no samples"),
        ("blank.jsonl", "\n  \n\n", "no samples"),
        ("empty.csv", "", "no samples"),
        ("header.csv", "sample_id,document,summary,model_id,timestamp\n", "no samples"),
        ("array.json", '[{"sample_id": "a"}]', "a JSON array; expected JSON Lines"),
        ("s.txt", "whatever", "unsupported sample file type"),
    ],
)
def test_unusable_files(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError, match=message):
        read_samples(path)


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        read_samples(tmp_path / "missing.jsonl")


# ---------------------------------------------------------------------------- the store


class StoreBehaviours:
    """Store tests for any backend: subclasses provide a `store_url` fixture for an empty store."""

    def test_windows_and_reference_windows(self, store_url):
        from tests.unit.test_windows import check_reference_windows

        check_reference_windows(store_url)

    def test_ingest_and_recent_round_trip(self, store_url):
        samples = [sample("a", 0), sample("b", 1, summary="S", category="unspecified")]
        with SampleStore(store_url) as store:
            assert store.count() == 0
            assert store.ingest(samples) == IngestOutcome(added=2, duplicates=0)
            assert store.count() == 2
            got = store.recent(10)
        assert got == samples[::-1]  # newest first, every field equal
        assert all(
            s.timestamp.tzinfo is not None and s.timestamp.utcoffset() == timedelta(0) for s in got
        )
        assert got[1].timestamp == T0  # microseconds survive
        with SampleStore(store_url) as again:  # data persists across connections
            assert again.count() == 2

    def test_reingest_counts_duplicates_and_keeps_the_stored_row(self, store_url):
        with SampleStore(store_url) as store:
            store.ingest([sample("a"), sample("b", 1)])
            report = store.ingest([sample("a", summary="changed"), sample("c", 2), sample("c", 3)])
            assert report == IngestOutcome(added=1, duplicates=2)
            assert store.count() == 3
            by_id = {s.sample_id: s for s in store.recent(10)}
        assert by_id["a"].summary == ""  # not overwritten
        assert by_id["c"].timestamp == T0 + timedelta(minutes=2)  # the first of the batch
        assert SampleStore(store_url).ingest([]) == IngestOutcome(added=0, duplicates=0)

    def test_ingest_is_all_or_nothing(self, store_url):
        with SampleStore(store_url) as store:
            store.ingest([sample("before")])
            # more rows than one insert batch, so the first batch is written before the bad row
            good = [sample(f"s{i}", i) for i in range(600)]
            broken = Sample.model_construct(**(sample("broken").model_dump() | {"document": None}))
            with pytest.raises(StoreError, match="ingest failed, nothing was written"):
                store.ingest([*good, broken])
            assert store.count() == 1
            assert [s.sample_id for s in store.recent(5)] == ["before"]

    def test_recent_order_ties_and_model_filter(self, store_url):
        with SampleStore(store_url) as store:
            store.ingest(
                [
                    sample("late", 10, model_id="A"),
                    sample("early", -10, model_id="B"),
                    sample("tie1", 0, model_id="A"),
                    sample("tie2", 0, model_id="B"),
                    sample("mid", 5, model_id="B"),
                ]
            )
            store.ingest([sample("tie3", 0, model_id="A")])
            assert [s.sample_id for s in store.recent(10)] == [
                "late",
                "mid",
                "tie3",
                "tie2",
                "tie1",
                "early",
            ]
            assert [s.sample_id for s in store.recent(3)] == ["late", "mid", "tie3"]
            assert [s.sample_id for s in store.recent(2, model_id="B")] == ["mid", "tie2"]
            assert [s.sample_id for s in store.recent(10, model_id="A")] == ["late", "tie3", "tie1"]
            assert store.recent(10, model_id="nobody") == []
            assert store.recent(0) == []
            with pytest.raises(InputError):
                store.recent(-1)

    def test_monitor_runs_round_trip_newest_first(self, store_url):
        def run(run_id, hours, **over):
            fields = {
                "run_id": run_id,
                "started_at": datetime(2025, 3, 1, 8) + timedelta(hours=hours),  # naive = UTC
                "model": "openai:http://prod/v1",
                "n_samples": 20,
                "mean_hss": 0.41,
                "ci_low": 0.35,
                "ci_high": 0.47,
                "drift": True,
                "drifted_columns": ["hss", "base_n_words"],
                "decision": "unhealthy",
                "details": {"reasons": ["severity rose"], "p": {"hss": 0.01}, "n": [1, 2]},
            }
            return MonitorRun(**(fields | over))

        second = run("r2", 2)
        first = run(
            "r1",
            1,
            mean_hss=float("nan"),
            ci_low=None,
            ci_high=None,
            drift=False,
            drifted_columns=[],
            decision="error",
            details={"error": "x", "v": float("nan")},
        )
        third = run("r3", 3, decision="healthy")
        with SampleStore(store_url) as store:
            assert store.runs() == []
            for r in (second, first, third):
                store.record_run(r)
            got = store.runs()
            assert [r.run_id for r in got] == ["r3", "r2", "r1"]
            assert got[1] == second
            assert got[1].started_at == datetime(2025, 3, 1, 10, tzinfo=UTC)
            assert got[2].mean_hss is None and got[2].details == {"error": "x", "v": None}
            assert [r.run_id for r in store.runs(limit=2)] == ["r3", "r2"]
            with pytest.raises(StoreError, match="'r1' is already recorded"):
                store.record_run(run("r1", 9))
            assert len(store.runs()) == 3

    def test_sql_in_values_is_stored_verbatim(self, store_url):
        nasty = sample(
            INJECTION, document="Robert'); DROP TABLE samples;-- \"; --", model_id=INJECTION
        )
        with SampleStore(store_url) as store:
            assert store.ingest([nasty]) == IngestOutcome(added=1, duplicates=0)
            assert store.ingest([nasty]) == IngestOutcome(added=0, duplicates=1)
            assert store.recent(5, model_id=INJECTION) == [nasty]
            assert store.recent(5, model_id="x' OR '1'='1") == []
        with SampleStore(store_url) as store:  # the table is still there
            assert store.count() == 1
            assert store.recent(1)[0].sample_id == INJECTION

    def test_ingest_file_refuses_bad_rows_unless_skipped(self, store_url, tmp_path):
        path = write_jsonl(
            tmp_path / "mixed.jsonl", [row("a"), row("b"), row("c", timestamp="soon")]
        )
        with pytest.raises(InputError, match=r"1 bad row\(s\), nothing ingested.*mixed.jsonl:3: "):
            ingest_file(path, store_url)
        with SampleStore(store_url) as store:
            assert store.count() == 0
        report, errors = ingest_file(path, store_url, skip_bad=True)
        assert report == IngestOutcome(added=2, duplicates=0)
        assert lines_of(errors) == [3] and "timestamp" in errors[0].message
        report, _ = ingest_file(path, store_url, skip_bad=True)
        assert report == IngestOutcome(added=0, duplicates=2)
        with SampleStore(store_url) as store:
            assert sorted(s.sample_id for s in store.recent(10)) == ["a", "b"]


class TestSqliteStore(StoreBehaviours):
    @pytest.fixture
    def store_url(self, tmp_path):
        return f"sqlite:///{tmp_path}/not/yet/there/samples.sqlite"

    def test_creates_the_parent_directory(self, store_url, tmp_path):
        SampleStore(store_url).close()
        assert (tmp_path / "not/yet/there/samples.sqlite").is_file()


def test_unreachable_server_fails_fast_with_masked_password():
    started = time.monotonic()
    with pytest.raises(StoreError) as caught:
        SampleStore("postgresql+psycopg://nobody:s3cret-pw@127.0.0.1:1/x", connect_timeout=3)
    assert time.monotonic() - started < 5
    message = str(caught.value)
    assert "s3cret-pw" not in message
    assert "postgresql+psycopg://nobody:***@127.0.0.1:1/x" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("not a url", "invalid sample store URL"),
        (
            "nosuchdb+driver://u:pw-secret@h/db",
            r"cannot use the sample store nosuchdb\+driver://u:\*\*\*@h",
        ),
    ],
)
def test_unusable_urls(url, message):
    with pytest.raises(StoreError, match=message) as caught:
        SampleStore(url)
    assert "pw-secret" not in str(caught.value)


def test_masked_url():
    assert masked_url("postgresql+psycopg://u:p%40ss@h:5/db") == "postgresql+psycopg://u:***@h:5/db"
    assert masked_url("postgresql+psycopg://u@h/db") == "postgresql+psycopg://u@h/db"
    assert masked_url("sqlite:///x/y.sqlite") == "sqlite:///x/y.sqlite"


def test_ingest_file_message_shows_the_first_errors_only(tmp_path):
    rows = [row(f"r{i}", timestamp="bad") for i in range(8)] + [row("good")]
    path = write_jsonl(tmp_path / "many.jsonl", rows)
    with pytest.raises(InputError) as caught:
        ingest_file(path, f"sqlite:///{tmp_path}/s.sqlite")
    message = str(caught.value)
    assert message.startswith(f"{path}: 8 bad row(s), nothing ingested")
    assert f"{path}:5: " in message and f"{path}:6: " not in message
    assert message.endswith("; ... and 3 more")
    assert not (tmp_path / "s.sqlite").exists()  # nothing was even opened


def _summaries_world(tmp_path):
    """A frank_cnndm-shaped pair of files: documents without category, summaries of two
    systems with extra fields."""
    docs = tmp_path / "documents.jsonl"
    docs.write_text(
        "".join(
            json.dumps({"doc_id": f"d{i}", "document": f"Document {i} says the mill closed."})
            + "\n"
            for i in range(3)
        )
    )
    lines = [
        {"doc_id": f"d{i}", "system": system, "summary": f"{system} {i}.", "factual": 1}
        for system in ("bart", "s2s")
        for i in range(3)
    ]
    summaries = tmp_path / "summaries.jsonl"
    summaries.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return docs, summaries


def test_summaries_file_joins_its_corpus_by_doc_id(tmp_path):
    from hss_gate.common.inputs import load_corpus
    from hss_gate.monitoring.store import from_summaries
    from hss_gate.text.corpus import UNCATEGORIZED

    docs, summaries = _summaries_world(tmp_path)
    documents = {d.doc_id: d for d in load_corpus(docs)}
    now = datetime(2026, 12, 2, tzinfo=UTC)
    samples, errors = read_samples(summaries, from_summaries(documents, system="s2s", now=now))
    assert errors == []
    assert [(s.sample_id, s.model_id, s.summary) for s in samples] == [
        (f"s2s/d{i}", "s2s", f"s2s {i}.") for i in range(3)
    ]
    assert samples[1].document == "Document 1 says the mill closed."
    assert {s.category for s in samples} == {UNCATEGORIZED} and samples[0].timestamp == now
    both, _ = read_samples(summaries, from_summaries(documents))  # every system, its own id
    assert sorted({s.model_id for s in both}) == ["bart", "s2s"] and len(both) == 6
    renamed, _ = read_samples(summaries, from_summaries(documents, "prod-v2", "bart"))
    assert {s.model_id for s in renamed} == {"prod-v2"}


def test_summaries_file_faults_name_their_line(tmp_path):
    from hss_gate.monitoring.store import from_summaries

    docs = {"d0": type("Doc", (), {"text": "A text.", "category": "news"})()}
    path = tmp_path / "s.jsonl"
    path.write_text(
        json.dumps({"doc_id": "d0", "summary": "S."})
        + "\n"
        + json.dumps({"doc_id": "zz", "system": "a", "summary": "S."})
        + "\n"
    )
    _, errors = read_samples(path, from_summaries(docs))
    assert [str(e) for e in errors] == [
        "line 1: no model id: give --model-id or a 'system' field",
        "line 2: doc_id 'zz' is not in the corpus",
    ]
    with pytest.raises(InputError, match="no samples"):
        read_samples(path, from_summaries(docs, "m", system="nobody"))


def test_cli_ingests_a_summaries_file_with_corpus(tmp_path):
    from typer.testing import CliRunner

    from hss_gate.cli import app

    docs, summaries = _summaries_world(tmp_path)
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    args = ["samples", "ingest", str(summaries), "--samples", url]
    result = CliRunner().invoke(app, [*args, "--corpus", str(docs), "--system", "bart"])
    assert result.exit_code == 0, result.output
    assert "ingested 3 samples" in result.output
    with SampleStore(url) as store:
        assert {s.model_id for s in store.recent(10)} == {"bart"}
    refused = CliRunner().invoke(app, [*args, "--system", "bart"])
    assert refused.exit_code == 2 and "need --corpus" in refused.output
