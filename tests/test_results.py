"""Specification of the one owner of tool-result size (``tools/results.py``): what passes, what is offloaded
to the sandbox with a stub, what a metric time series' stub says, and what is cut when there is no sandbox.
Offloads go to the real sandbox service started by the tests."""

from __future__ import annotations

import json
import statistics
from typing import Any

import pytest

from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.report.series import Point, summarize
from deep_research_agent.run import Run
from deep_research_agent.sandbox.connector import SandboxConnector
from deep_research_agent.settings import ResearchConfig, ResultSettings
from deep_research_agent.tools.results import ResultLimits, detect_series, fit_result, parse_table
from testkit.sandbox_service import SandboxService

pytestmark = pytest.mark.anyio

PRICES = [{"date": f"2026-01-{day:02d}", "close": close, "volume": 1000 + day} for day, close in
          enumerate([10.0, 12.0, 9.5, 11.0, 14.0, 13.0, 15.5, 12.5], start=1)]  # fmt: skip


def limits(sandbox: SandboxConnector | None = None, **options: object) -> ResultLimits:
    return ResultLimits(**{"max_chars": 2_000, "max_rows": 50, **options}, sandbox=sandbox)  # type: ignore[arg-type]


@pytest.fixture
def sandboxes(sandbox_service: SandboxService) -> SandboxConnector:
    environ = {
        "OPENAI_API_KEY": "sk-test",
        "LLM_SANDBOX_URL": sandbox_service.url,
        "LLM_SANDBOX_TOKEN": sandbox_service.token,
    }
    return SandboxConnector(ResearchConfig.resolve({}, environ))


async def fit(run: Run, text: str, **options: Any) -> str:
    """``fit_result`` in the test's run (whose attachments hold its sandbox session)."""
    return await fit_result(text, attachments=run.attachments, **options)


async def in_sandbox(sandboxes: SandboxConnector, run: Run, path: str) -> bytes:
    [got] = await sandboxes.session(run.attachments).download([path])
    assert got.error is None, got.error
    return got.content or b""


async def test_a_result_within_the_limits_is_passed_on_as_it_is(run, sandboxes):
    text = json.dumps([{"name": "a", "size": 1}, {"name": "b", "size": 2}])

    assert await fit(run, text, name="mcp-x-list", cite_as='"MCP: x"', limits=limits(sandboxes)) == text
    assert not sandboxes.session(run.attachments).is_open


async def test_rows_over_the_limit_go_to_a_file_and_the_model_gets_path_rows_columns_and_five_rows(run, sandboxes):
    rows = [{"id": n, "region": f"r{n % 7}", "sales": n * 3} for n in range(120)]
    text = json.dumps(rows)

    stub = await fit(run, text, name="mcp-shop-orders", cite_as='"MCP: shop"', limits=limits(sandboxes, max_chars=0))

    path = next(line.removeprefix("file: ") for line in stub.splitlines() if line.startswith("file: "))
    assert path.startswith("/workspace/data/mcp-shop-orders-") and path.endswith(".json")
    assert "120 rows (limit 50)" in stub and "rows: 120" in stub and "columns: id, region, sales" in stub
    preview = stub.split("preview (first 5 rows):\n", 1)[1].splitlines()[:6]
    assert [json.loads(line) for line in preview[:5]] == rows[:5] and not preview[5].startswith("{")
    assert 'Cite it as "MCP: shop"' in stub and "extract-subagent" in stub and "coding-subagent" in stub
    assert json.loads(await in_sandbox(sandboxes, run, path)) == rows
    assert len(stub) < 2_000


async def test_a_long_page_goes_to_a_text_file_with_its_head_as_preview(run, sandboxes):
    page = "The fleet reached 47.3 percent. " * 200

    stub = await fit(run, page, name="page-example.org", cite_as="its URL", limits=limits(sandboxes), tabular=False)

    path = next(line.removeprefix("file: ") for line in stub.splitlines() if line.startswith("file: "))
    assert path.endswith(".txt") and f"{len(page):,} characters (limit 2,000)" in stub
    assert "preview:\nThe fleet reached 47.3 percent." in stub and "rows:" not in stub
    assert (await in_sandbox(sandboxes, run, path)).decode() == page


async def test_a_metric_time_series_is_offloaded_at_any_size_with_its_summary(run, sandboxes):
    text = json.dumps(PRICES)
    assert len(text) < 2_000 and len(PRICES) < 50

    stub = await fit(run, text, name="mcp-market-prices", cite_as='"MCP: market"', limits=limits(sandboxes))

    assert "a metric time series" in stub and "rows: 8" in stub
    series = next(line for line in stub.splitlines() if line.startswith("series: "))
    assert "Time series of 8 points, 2026-01-01 → 2026-01-08, by date." in series
    assert (
        "close: first 10 (2026-01-01) → last 12.5 (2026-01-08), up 25.0%; min 9.5 (2026-01-03), "
        "max 15.5 (2026-01-07); mean 12.19, median 12.25."
    ) in series
    assert "volume: first 1,001 (2026-01-01) → last 1,008 (2026-01-08), flat;" in series
    assert "never listed row by row" in stub
    path = next(line.removeprefix("file: ") for line in stub.splitlines() if line.startswith("file: "))
    assert json.loads(await in_sandbox(sandboxes, run, path)) == PRICES


async def test_a_csv_series_in_any_order_is_summarised_oldest_first(run, sandboxes):
    lines = ["day,temp_c", "2026-03-03,7.5", "2026-03-01,4.0", "2026-03-02,6.0", "2026-03-04,5.0"]

    stub = await fit(run, "\n".join(lines), name="tool-weather", cite_as="the tool's source", limits=limits(sandboxes))

    assert "format: CSV" in stub and "columns: day, temp_c" in stub and "rows: 4" in stub
    assert (
        "temp_c: first 4 (2026-03-01) → last 5 (2026-03-04), up 25.0%; min 4 (2026-03-01), max 7.5 (2026-03-03)" in stub
    )


async def test_offloaded_files_are_remembered_for_a_replacement_session(run, sandboxes):
    stub = await fit(run, json.dumps(PRICES), name="mcp-m-p", cite_as='"MCP: m"', limits=limits(sandboxes))
    path = next(line.removeprefix("file: ") for line in stub.splitlines() if line.startswith("file: "))

    assert sandboxes.session(run.attachments)._remembered == {path: json.dumps(PRICES).encode()}


async def test_without_a_sandbox_the_limits_cut_rows_then_characters_with_a_note(run):
    rows = [{"id": n, "note": "x" * 30} for n in range(200)]

    text = await fit(run, json.dumps(rows), name="mcp-x-y", cite_as='"MCP: x"', limits=limits())

    body, note = text.split("\n[Result truncated: ", 1)
    assert note.startswith("showing the first 50 of 200 rows; cut to 2,000 of")
    assert "No sandbox is attached to this run, so the rest could not be offloaded" in note
    assert len(body) == 2_000 and body.startswith('[\n {\n  "id": 0')


async def test_without_a_sandbox_a_series_keeps_its_rows_under_its_summary(run):
    text = await fit(run, json.dumps(PRICES), name="mcp-m-p", cite_as='"MCP: m"', limits=limits())

    first, rule, rest = text.split("\n", 2)
    assert first.startswith("Time series of 8 points, 2026-01-01 → 2026-01-08") and "never listed row by row" in rule
    assert json.loads(rest) == PRICES and "truncated" not in text


async def test_with_offloading_off_the_result_is_cut_and_the_note_says_so(run, sandboxes):
    text = await fit(run, "y" * 5_000, name="p", cite_as="it", limits=limits(sandboxes, offload=False), tabular=False)

    assert (
        text.endswith("Offloading is off for this run; narrow the call to see the rest.]")
        and not sandboxes.session(run.attachments).is_open
    )


async def test_a_sandbox_that_cannot_take_the_file_leaves_the_cut_result_and_says_why(run):
    environ = {"OPENAI_API_KEY": "sk-test", "LLM_SANDBOX_URL": "http://127.0.0.1:9", "LLM_SANDBOX_TOKEN": "t" * 20}
    unreachable = SandboxConnector(ResearchConfig.resolve({}, environ))

    text = await fit(run, "z" * 5_000, name="p", cite_as="it", limits=limits(unreachable), tabular=False)

    assert (
        "cut to 2,000 of 5,000 characters" in text
        and "The sandbox could not take the file (cannot reach the sandbox service" in text
    )


@pytest.mark.parametrize(
    ("text", "rows", "columns"),
    [
        ('{"data": [{"a": 1}, {"a": 2, "b": 3}], "next": null}', 2, ["a", "b"]),
        ("a\tb\n1\t2\n3\t4\n", 2, ["a", "b"]),
        ("[1, 2, 3]", 3, []),
    ],
)
def test_tables_are_read_from_json_lists_wrapped_lists_and_delimited_text(text, rows, columns):
    table = parse_table(text)

    assert table is not None and (len(table.rows), table.columns) == (rows, columns)


@pytest.mark.parametrize(
    "text", ["plain prose, with a comma.\nAnother line.", '{"a": 1, "b": [1], "c": [2]}', "not json ["]
)
def test_prose_and_objects_without_one_list_are_no_table(text):
    assert parse_table(text) is None


def test_a_table_without_a_time_column_or_numbers_is_no_series():
    assert detect_series(parse_table(json.dumps([{"name": f"n{i}", "size": i} for i in range(9)]))) is None  # type: ignore[arg-type]
    assert detect_series(parse_table(json.dumps([{"date": f"2026-01-0{i}", "who": "x"} for i in range(1, 9)]))) is None  # type: ignore[arg-type]


def test_epoch_timestamps_in_a_time_column_are_dates():
    rows = [{"timestamp": 1767225600 + day * 86400, "tvl": 100 + day} for day in range(5)]

    series = detect_series(parse_table(json.dumps(rows)))  # type: ignore[arg-type]

    assert series is not None and (series.start, series.end) == ("2026-01-01", "2026-01-05")


def test_the_summary_states_first_last_extremes_with_when_mean_median_and_direction():
    points = [Point(label=f"d{n}", value=v, unit="") for n, v in enumerate([5.0, 3.0, 8.0, 4.0])]

    summary = summarize(points)

    assert (summary.first.label, summary.last.label, summary.low.label, summary.high.label) == ("d0", "d3", "d1", "d2")
    assert summary.mean == 5.0 and summary.median == statistics.median([5, 3, 8, 4]) == 4.5
    assert summary.direction == "down" and summary.change == pytest.approx(-0.2)


@pytest.mark.parametrize(
    ("values", "direction"), [([100, 100.5], "flat"), ([0, 0], "flat"), ([0, 2], "up"), ([3, 1], "down")]
)
def test_direction_is_flat_within_one_percent(values, direction):
    assert summarize([Point(label=str(i), value=v, unit="") for i, v in enumerate(values)]).direction == direction


def test_the_limits_are_the_runs_result_settings():
    settings = ResearchConfig.resolve(
        {"configurable": {"max_result_chars": 500, "max_result_rows": 7, "offload_results": False}},
        environ={"DRA_OFFLOAD_DIR": "/workspace/results"},
    )
    assert ResultLimits.of(settings.part(ResultSettings), None) == ResultLimits(
        max_chars=500, max_rows=7, offload=False, offload_dir="/workspace/results"
    )


@pytest.mark.parametrize(
    ("knobs", "refusal"),
    [
        pytest.param({"max_chars": -1}, "max_chars must be a finite number of 0 or more", id="negative-chars"),
        pytest.param({"max_rows": float("nan")}, "max_rows must be a finite number of 0 or more", id="nan-rows"),
        pytest.param({"offload_dir": "data"}, "offload_dir must be an absolute sandbox path", id="relative-dir"),
        pytest.param({"offload_dir": "/workspace/../etc"}, "offload_dir must be an absolute sandbox path", id="dotdot"),
    ],
)
def test_limits_that_make_no_sense_are_refused_where_they_are_built(knobs: dict[str, Any], refusal: str):
    with pytest.raises(KnobError, match=f"ResultLimits: {refusal}"):
        ResultLimits(**knobs)
