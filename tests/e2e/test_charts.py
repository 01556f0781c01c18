"""Reports with charts, through ``langgraph dev``: a unit reads two loopback pages holding a yearly series, the
orchestrator charts it with one planted point, and the chart is checked, drawn by the server and shown in the
last AI message (what a generic UI renders), the ``/charts`` route and every export, read back here.

The suite's server has no sandbox attached: the chart is drawn all the same (the product draws it, no code
runs). The web UI's view of the same chart is in test_web_ui.py.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

import docx
import httpx
import pytest
from pypdf import PdfReader

from deep_research_agent.report.charts import delivered_charts
from testkit.agent_server import RunResult, stream_run
from testkit.mcp_caller import mcp_session, text_of
from testkit.scenarios import CHART_QUESTION, charted_series, end_of, message_text, requests_of
from testkit.web import ARTICLES

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]


@pytest.fixture
async def charted(agent_server, scripted, web) -> tuple[RunResult, str, str]:
    early, recent = (web.url(ARTICLES[slug].path) for slug in ("streymoy-early", "streymoy-recent"))
    scripted.set_scenario(charted_series(early, recent))
    run = await stream_run(agent_server.url, CHART_QUESTION, timeout=120)
    assert end_of(run) == ("done", "report_delivered")
    return run, early, recent


async def get(url: str, **params: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=60) as client:
        return await client.get(url, params=params)


async def test_a_series_read_from_two_pages_is_delivered_as_a_line_chart_whose_points_cite_them(charted, scripted):
    run, early, recent = charted
    values = run.values
    # The user asked for a chart: the call that writes the report was told how, the planning call was not.
    planning, writing, *_ = requests_of(scripted, "orchestrator")
    assert "```chart" not in json.dumps(planning["body"]) and "## Charts" not in json.dumps(planning["body"])
    assert "## Charts\nThe user asked for a chart." in message_text(writing["body"]["messages"][-1])
    [start] = run.of_type("run_start")
    assert "coding-subagent" not in start["tools"], "the suite's server has no sandbox: the product draws the chart"

    [chart] = delivered_charts(values["final_report"])
    assert chart.spec.kind == "line" and chart.drawn
    cited = {source["index"]: source["url"] for source in values["cited_sources"]}
    assert {cited[p.cite] for p in chart.spec.points if p.cite is not None} == {early, recent}
    assert [(p.x, p.y, c.verdict) for p, c in zip(chart.spec.points, chart.checks, strict=True)] == [
        (2019, 41.2, "supported"),
        (2020, 44.8, "supported"),
        (2021, 47.5, "supported"),
        (2022, 52.1, "supported"),
        (2023, 58.6, "supported"),
        (2024, 63.9, "unsupported_value"),
    ]
    assert chart.checks[-1].reason == "63.9 GWh is not in the text of [2]"
    assert chart.caption.startswith("Checked: 5 of 6 values are each in the text of the source it cites")
    # The planted point was sent back once with what to fix, before the same draft was delivered marked.
    [revising] = run.statuses("revising")
    assert "point 2024 (63.9 GWh, cites [2]): 63.9 GWh is not in the text of [2]" in revising["detail"]


async def test_the_last_ai_message_shows_the_chart_as_an_image_the_server_serves_with_its_table(agent_server, charted):
    run, early, recent = charted
    [chart] = delivered_charts(run.values["final_report"])
    last = run.values["messages"][-1]
    assert last["type"] == "ai" and last["name"] == "dra_deliverable"
    text = last["content"]

    images = re.findall(r"!\[[^\]]*\]\((http://[^)]+)\)", text)
    assert len(images) == 1, text[:1500]
    [image] = images
    assert image == f"{agent_server.url}/charts/{run.thread_id}/{run.run_id}/{chart.id}.png"
    assert "```chart" not in text, "a generic UI shows the chart, never its JSON"
    assert "Chart: Streymoy turbines, yearly generation." in text
    note = next(line for line in text.splitlines() if line.startswith("¹"))
    assert note.strip() == f"¹ 2024: 63.9 GWh [[2]]({recent}) — 63.9 GWh is not in the text of [[2]]({recent}).", note
    assert f"| 2019 | 41.2 | [[1]]({early}) | checked |" in text
    assert f"| 2024 | 63.9 | [[2]]({recent}) | does not check out ¹ |" in text

    answer = await get(image)
    assert answer.status_code == 200 and answer.headers["content-type"] == "image/png"
    assert answer.content.startswith(b"\x89PNG")
    svg = await get(f"{agent_server.url}/charts/{run.thread_id}/{chart.id}.svg")
    assert svg.status_code == 200 and b"<svg" in svg.content
    missing = await get(f"{agent_server.url}/charts/{run.thread_id}/chart-0000000000000000.png")
    assert missing.status_code == 404 and "No chart chart-0000000000000000" in missing.json()["detail"]


def _html_appendix(page: str) -> str:
    return page.split("<h2>Appendix: chart data</h2>", 1)[1]


async def test_every_export_embeds_the_chart_and_puts_its_data_table_in_the_appendix(agent_server, charted):
    run, _, _ = charted
    [chart] = delivered_charts(run.values["final_report"])
    base = f"{agent_server.url}/reports/{run.thread_id}"
    exports: dict[str, Any] = {}
    for format in ("html", "pdf", "docx", "md"):
        answer = await get(base, format=format)
        assert answer.status_code == 200, (format, answer.text[:300])
        exports[format] = answer.content

    page = exports["html"].decode()
    assert re.search(r'<img src="data:image/svg\+xml;base64,[A-Za-z0-9+/=]+" alt="Line chart: Streymoy', page)
    assert "<td>2024</td><td>63.9</td><td>[2]</td><td>does not check out ¹</td>" in _html_appendix(page)

    pdf = PdfReader(io.BytesIO(exports["pdf"]))
    assert sum(len(p.images) for p in pdf.pages) >= 1, "the chart is embedded in the PDF"
    text = "".join(p.extract_text() for p in pdf.pages)
    assert text.index("Appendix: chart data") < text.index("2024 63.9 [2] does not check out")

    word = docx.Document(io.BytesIO(exports["docx"]))
    [shape] = word.inline_shapes
    assert shape._inline.docPr.get("descr").startswith("Line chart: Streymoy turbines, yearly generation")
    assert [c.text for c in word.tables[-1].rows[-1].cells] == ["2024", "63.9", "[2]", "does not check out ¹"]

    markdown = exports["md"].decode()
    link = f"{agent_server.url}/charts/{run.thread_id}/{chart.id}.png"
    assert f"]({link})" in markdown and "![" not in markdown
    assert markdown.index("| 2024 | 63.9 | [2] | does not check out ¹ |") > markdown.index("### Chart data 1:")
    assert (await get(link)).status_code == 200, "the Markdown export's link is the server's own image"


async def test_a_calling_agent_reads_the_chart_over_mcp_as_an_image_link_and_its_table(agent_server, charted):
    run, _, _ = charted
    [chart] = delivered_charts(run.values["final_report"])

    async with mcp_session(agent_server.url) as session:
        answer = await session.call_tool("get_report", {"thread_id": run.thread_id})

    text = text_of(answer)
    assert not answer.isError, text
    assert "```chart" not in text and "```chart" not in answer.structuredContent["report"]
    assert f"]({agent_server.url}/charts/{run.thread_id}/{chart.id}.png)" in text
    assert "Chart: Streymoy turbines, yearly generation." in text
    assert "| 2019 | 41.2 | [1] | checked |" in text and "| 2024 | 63.9 | [2] | does not check out ¹ |" in text
