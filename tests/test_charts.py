"""Charts in a report: a ```chart block's spec refused with what to fix, its points checked against the text each
cites like a sentence's figures, delivered with its checks, and drawn by the server in every place a report is read."""

from __future__ import annotations

import io
import json
import re
from typing import Any

import docx
import pytest
from langchain_core.messages import AIMessage, HumanMessage
from pypdf import PdfReader
from starlette.applications import Starlette
from starlette.routing import Route
from starlette.testclient import TestClient

from deep_research_agent.delivery.report_gate import ReportGateMiddleware
from deep_research_agent.domain.charts import ChartRecord, ChartSpecError, PointVerdict, parse_chart
from deep_research_agent.evidence.store import EvidenceStore
from deep_research_agent.export import ExportFormat, render, report_document
from deep_research_agent.export.charts import ChartImage, NotDrawn, render_chart
from deep_research_agent.lifecycle.fallback_report import fallback_report
from deep_research_agent.report.charts import charts_as_markdown, delivered_charts
from deep_research_agent.report.hygiene import lint_citations, scrub_report
from deep_research_agent.report.vetting import finalise, vet_report
from deep_research_agent.routes import chart_response

EARLY, RECENT, GONE = "https://grid.example/early", "https://grid.example/recent", "https://gone.example/x"
EARLY_TEXT = (
    "Streymoy turbines, yearly. The Streymoy wind farm generated 41.2 GWh in 2019, 44.8 GWh in 2020 and "
    "47.5 GWh in 2021."
)
RECENT_TEXT = "Output rose to 52.1 GWh in 2022.\nIn 2023 the farm produced 58.6 GWh after two turbines were added."
SERIES = [(2019, 41.2, 1), (2020, 44.8, 1), (2021, 47.5, 1), (2022, 52.1, 2), (2023, 58.6, 2)]


def evidence(*, snippet_only: bool = False) -> EvidenceStore:
    store = EvidenceStore()
    kind = "search_result" if snippet_only else "page"
    store.add_evidence(url=EARLY, title="Early", kind=kind, text=EARLY_TEXT, agent="research-subagent")
    store.add_evidence(url=RECENT, title="Recent", kind="page", text=RECENT_TEXT, agent="research-subagent")
    return store


def spec(points: list[tuple[Any, Any, Any]] = SERIES, **fields: Any) -> dict[str, Any]:
    return {
        "kind": "line",
        "title": "Streymoy generation",
        "x_label": "Year",
        "y_label": "Generation",
        "unit": "GWh",
        "points": [{"x": x, "y": y, "cite": c} for x, y, c in points],
        **fields,
    }


def report(*charts: dict[str, Any], sources: str = "") -> str:
    blocks = "".join(f"```chart\n{json.dumps(chart)}\n```\n\n" for chart in charts)
    return (
        "# Streymoy\n\nThe farm generated 41.2 GWh in 2019 [1] and 58.6 GWh in 2023 [2].\n\n"
        f"{blocks}## Sources\n[1] Early — {EARLY}\n[2] Recent — {RECENT}\n{sources}"
    )


def delivered(*charts: dict[str, Any], store: EvidenceStore | None = None, **options: Any) -> str:
    store = store or evidence()
    return finalise(vet_report(report(*charts), store, **options), store)


# --- the spec ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw, says",
    [
        (spec([(2019, "41.2 GWh", 1)]), "y '41.2 GWh' is not a number: write the value as a JSON number"),
        ({**spec(), "points": None, "x": [2019, 2020], "y": [41.2]}, "x has 2, y has 1) instead of points"),
        (spec([(year, 1.0, 1) for year in range(1, 5001)]), "it has 5,000 points; a chart takes at most 200"),
        (spec(kind="pie"), "kind 'pie' is not one of bar, line, scatter"),
        (spec(title="<b>Output</b>"), "title '<b>Output</b>' carries markup: write it as plain text"),
        (spec(title="**Output** [1]"), "carries markup"),
        (spec([(2019, 1.0, 1), (2019, 2.0, 1)]), "x 2019 appears twice"),
        (spec([(2019, 1.0, 1), ("2020", 2.0, 1)]), "x mixes numbers and labels"),
        (spec([("Oslo", 1.0, 1)], kind="scatter"), "a scatter chart needs a number as every x"),
        (spec([(2019, 1.0, "one")]), "cite 'one' must be the number n of the source [n]"),
        (spec(colour="red"), "unknown field 'colour'"),
        ({"kind": "bar", "title": "T", "points": [{"x": "a", "y": 1}]}, "point 1 lacks cite"),
    ],
)
def test_a_spec_that_cannot_be_drawn_is_refused_with_what_to_fix(raw: dict[str, Any], says: str):
    with pytest.raises(ChartSpecError) as refused:
        parse_chart(json.dumps(raw))
    assert says in str(refused.value)


def test_not_json_is_refused_with_where_it_broke():
    with pytest.raises(ChartSpecError, match=r"not one JSON object \(Expecting .* at line 1\)"):
        parse_chart("{kind: line}")


def test_the_fields_the_product_writes_are_dropped_from_a_models_copy_so_it_is_checked_afresh():
    copied = {**spec(), "id": "chart-0", "drawn": True, "caption": "Checked: all"}
    copied["points"] = [{**p, "check": {"verdict": "supported"}} for p in copied["points"]]
    assert parse_chart(json.dumps(copied)) == parse_chart(json.dumps(spec()))


def test_a_bad_spec_bounces_the_draft_as_a_tool_error_of_submit_report():
    vetted = vet_report(report(spec(kind="pie")), evidence())
    [problem] = [p for p in vetted.problems if p.startswith("Chart")]
    assert problem == "Chart 1 cannot be drawn: kind 'pie' is not one of bar, line, scatter."
    text = ReportGateMiddleware().bounce_text(vetted.problems)
    assert text.startswith("TOOL ERROR (submit_report, permanent): the report was NOT delivered.") and problem in text


def test_after_the_one_revision_a_chart_that_cannot_be_drawn_is_left_out_with_a_note():
    text = delivered(spec(kind="pie"))
    assert "```chart" not in text
    assert "> Chart not shown (“Streymoy generation”): kind 'pie' is not one of bar, line, scatter." in text


def test_more_charts_than_the_setting_allows_are_refused_then_left_out():
    vetted = vet_report(report(spec(), spec(title="Again")), evidence(), max_charts=1)
    assert "Chart 2 cannot be drawn: a report holds at most 1 chart: keep the ones that matter most." in vetted.problems
    assert "charts are off on this server" in vet_report(report(spec()), evidence(), max_charts=0).problems[-1]
    assert [r.spec.title for r in delivered_charts(delivered(spec(), spec(title="Again"), max_charts=1))] == [
        "Streymoy generation"
    ]


def test_a_run_that_ends_undelivered_keeps_the_servers_chart_limit_in_its_fallback_report():
    draft = AIMessage(content=report(spec(), spec(title="Again")))

    limited = fallback_report([HumanMessage(content="Streymoy?"), draft], evidence(), why="halted", max_charts=1)
    off = fallback_report([HumanMessage(content="Streymoy?"), draft], evidence(), why="halted", max_charts=0)

    assert [r.spec.title for r in delivered_charts(limited)] == ["Streymoy generation"]
    assert delivered_charts(off) == [] and "```chart" not in off


# --- the checks ----------------------------------------------------------------------------------------


def test_each_point_is_held_against_the_text_it_cites_with_its_label_beside_the_value():
    planted = spec([*SERIES[:4], (2023, 63.0, 2)])
    vetted = vet_report(report(planted), evidence())

    [chart] = vetted.charts.records
    assert [c.verdict for c in chart.checks] == [PointVerdict.SUPPORTED] * 4 + [PointVerdict.UNSUPPORTED_VALUE]
    assert chart.checks[4].reason == "63 GWh is not in the text of [2]"
    assert chart.checks[4].sentence == "In 2023 the farm produced 58.6 GWh after two turbines were added."
    assert (
        "Chart “Streymoy generation”, point 2023 (63 GWh, cites [2]): 63 GWh is not in the text of [2]. [2] says: "
        "“In 2023 the farm produced 58.6 GWh after two turbines were added.” Chart the value the source gives for "
        "that label, or drop the point." in vetted.problems
    )


def test_the_documented_limit_one_sentence_giving_several_years_and_values_pairs_any_with_any():
    """docs/charts.md says so: the check reads sentences, not the grammar that binds a value to its year."""
    swapped = spec([(2019, 44.8, 1), (2020, 41.2, 1)])
    [chart] = vet_report(report(swapped), evidence()).charts.records
    assert all(check.ok for check in chart.checks)


def test_a_value_found_only_beside_another_label_does_not_check_out():
    [chart] = vet_report(report(spec([(2020, 52.1, 2), (2023, 58.6, 2)])), evidence()).charts.records
    assert chart.checks[0].verdict == PointVerdict.LABEL_NOT_WITH_VALUE
    assert chart.checks[0].reason == "[2] gives 52.1 GWh, but in no sentence about 2020"
    assert chart.checks[1].ok


def test_units_and_scale_words_follow_the_figure_rules_of_sentences():
    store = EvidenceStore()
    text = "Revenue was $1.2 billion in 2022. Margins reached 12 percent in 2022. The plant is 3,000 m long in 2022."
    store.add_evidence(url=EARLY, title="Early", kind="page", text=text, agent="research-subagent")
    points = {"unit": "USD", "y": 1_200_000_000}, {"unit": "%", "y": 12}, {"unit": "metres", "y": 3000}
    wrong = {"unit": "ft", "y": 3000}
    for point, ok in [*((p, True) for p in points), (wrong, False)]:
        chart = {**spec([(2022, point["y"], 1)]), "unit": point["unit"]}
        [record] = vet_report(report(chart), store).charts.records
        assert record.checks[0].ok is ok, point


def test_a_source_seen_only_as_a_snippet_supports_no_point():
    [chart] = vet_report(report(spec(SERIES[:1])), evidence(snippet_only=True)).charts.records
    assert chart.checks[0].verdict == PointVerdict.SOURCE_NOT_READ
    assert chart.checks[0].reason == "[1] was only seen as a search-result snippet; its page was never read"


def test_a_chart_whose_points_mostly_fail_is_not_drawn_and_says_why():
    text = delivered(spec([(2019, 1.0, 1), (2020, 2.0, 1), (2021, 47.5, 1)]))
    [record] = delivered_charts(text)
    assert not record.drawn and record.reason == "2 of its 3 points do not check out against the sources they cite"
    shown = charts_as_markdown(text, lambda r: "http://server/chart.png")
    assert "![" not in shown and "Chart not drawn: 2 of its 3 points do not check out" in shown
    with pytest.raises(NotDrawn):
        render_chart(record, ChartImage.PNG)


def test_the_delivery_renumbers_chart_cites_with_the_report_and_a_removed_source_leaves_its_point_on_nothing():
    draft = report(spec([(2019, 41.2, 2), (2023, 58.6, 3), (2022, 52.1, 1)]))
    draft = draft.replace(
        f"[1] Early — {EARLY}\n[2] Recent — {RECENT}\n",
        f"[1] Gone — {GONE}\n[2] Early — {EARLY}\n[3] Recent — {RECENT}\n",
    )
    draft = draft.replace("in 2019 [1] and 58.6 GWh in 2023 [2]", "in 2019 [2] and 58.6 GWh in 2023 [3] [1]")
    store = evidence()
    [record] = delivered_charts(finalise(vet_report(draft, store), store))
    assert [p.cite for p in record.spec.points] == [1, 2, None]
    assert [c.verdict for c in record.checks] == ["supported", "supported", "source_not_read"]


def test_a_source_only_a_chart_cites_is_no_orphan_and_its_rows_are_never_summarised_as_a_dump():
    many = [(year, 41.2, 1) for year in range(2000, 2012)]
    text = report(spec(many)).replace("in 2019 [1] and", "in 2019 and")
    assert 1 not in lint_citations(text).orphans
    assert scrub_report(text) == text


# --- where a chart is shown --------------------------------------------------------------------------------


PLANTED = spec([*SERIES[:4], (2023, 63.0, 2)])


def test_the_answer_message_shows_the_image_the_caption_the_reason_and_the_table():
    text = delivered(PLANTED)
    [record] = delivered_charts(text)
    shown = charts_as_markdown(text, lambda r: f"http://server/charts/t/r/{r.id}.png")
    assert f"](http://server/charts/t/r/{record.id}.png)" in shown
    assert "![Line chart: Streymoy generation, Generation against Year; 5 points, from 2019 (41.2 GWh)" in shown
    assert "**Chart: Streymoy generation.** Checked: 4 of 5 values are each in the text of the source it cites" in shown
    assert "¹ 2023: 63 GWh [2] — 63 GWh is not in the text of [2]. [2] says: “In 2023 the farm produced" in shown
    assert "| 2023 | 63 | [2] | does not check out ¹ |" in shown and "| 2019 | 41.2 | [1] | checked |" in shown
    assert "```chart" not in shown


def test_the_drawing_marks_failing_points_hollow_and_is_the_same_bytes_each_time():
    [record] = delivered_charts(delivered(PLANTED))
    png = render_chart(record, ChartImage.PNG)
    assert png.startswith(b"\x89PNG") and png == render_chart(
        record.model_copy(update={"caption": "x"}), ChartImage.PNG
    )
    svg = render_chart(record, ChartImage.SVG).decode()
    assert svg.lstrip().startswith("<?xml") and "<dc:date>" not in svg
    assert re.search(r"fill: #ffffff;[^\"]*stroke: #c2410c", svg), "the failing point is hollow, outlined in orange"
    bars = render_chart(
        ChartRecord.model_validate({**record.model_dump(), "spec": {**record.spec.model_dump(), "kind": "bar"}}),
        ChartImage.SVG,
    ).decode()
    assert "hatch" in bars.lower() or "pattern" in bars.lower(), "the failing bar is drawn hatched, unfilled"


def _document(text: str) -> Any:
    values = {"final_report": text, "messages": [{"type": "human", "content": "Streymoy output?"}]}
    return report_document(values).model_copy(update={"chart_link": "http://server/charts/t/r"})


def test_every_export_embeds_the_drawing_with_alt_text_and_puts_the_data_table_in_an_appendix():
    document = _document(delivered(PLANTED))
    [record] = document.charts

    page = render(document, ExportFormat.HTML).decode()
    assert '<figure class="chart" id="chart-1"><img src="data:image/svg+xml;base64,' in page
    assert 'alt="Line chart: Streymoy generation' in page
    appendix = page.split("<h2>Appendix: chart data</h2>", 1)[1]
    assert "<td>2023</td><td>63</td><td>[2]</td><td>does not check out ¹</td>" in appendix

    pdf = PdfReader(io.BytesIO(render(document, ExportFormat.PDF)))
    assert sum(len(p.images) for p in pdf.pages) >= 1
    text = "".join(p.extract_text() for p in pdf.pages)
    assert "Appendix: chart data" in text and "2023 63 [2] does not check out" in text

    word = docx.Document(io.BytesIO(render(document, ExportFormat.DOCX)))
    [shape] = word.inline_shapes
    assert shape._inline.docPr.get("descr").startswith("Line chart: Streymoy generation")
    headings = [p.text for p in word.paragraphs if p.style.name.startswith("Heading")]
    assert headings[-2:] == ["Appendix: chart data", "Chart 1: Streymoy generation"]
    assert [c.text for c in word.tables[-1].rows[5].cells] == ["2023", "63", "[2]", "does not check out ¹"]

    markdown = render(document, ExportFormat.MD).decode()
    assert "[Line chart: Streymoy generation" in markdown and f"](http://server/charts/t/r/{record.id}.png)" in markdown
    assert "![" not in markdown, "a Markdown viewer loads nothing: the image is a link"
    assert markdown.index("### Chart data 1: Streymoy generation") > markdown.index("## Appendix: checks")
    assert "| 2023 | 63 | [2] | does not check out ¹ |" in markdown


# --- the image route -------------------------------------------------------------------------------------


def _route_client(text: str) -> TestClient:
    async def chart(request: Any) -> Any:
        params = request.path_params
        state = ({"final_report": text}, None) if params["thread_id"] == "mine" else None
        return await chart_response(state, params["thread_id"], params["file"], params.get("run_id"))

    return TestClient(
        Starlette(
            routes=[Route("/charts/{thread_id}/{file}", chart), Route("/charts/{thread_id}/{run_id}/{file}", chart)]
        )
    )


def test_the_route_draws_a_delivered_chart_on_demand_and_answers_404_for_anything_else():
    text = delivered(PLANTED, spec([(2019, 1.0, 1), (2020, 2.0, 1)], title="Wrong"))
    drawn, undrawn = delivered_charts(text)
    client = _route_client(text)

    png = client.get(f"/charts/mine/{drawn.id}.png")
    assert png.status_code == 200 and png.headers["content-type"] == "image/png" and png.content.startswith(b"\x89PNG")
    assert client.get(f"/charts/mine/run-1/{drawn.id}.svg").headers["content-type"] == "image/svg+xml"
    assert (
        client.get(f"/charts/mine/{undrawn.id}.png")
        .json()["detail"]
        .startswith(f"Chart {undrawn.id} is not drawn: 2 of")
    )
    assert client.get(f"/charts/theirs/{drawn.id}.png").status_code == 404
    assert (
        client.get("/charts/mine/chart-0.png").json()["detail"]
        == "No chart chart-0 in the delivered report of thread mine."
    )
    assert client.get(f"/charts/mine/{drawn.id}.gif").status_code == 404


# --- the offer ---------------------------------------------------------------------------------------------


def _offer_request(findings: list[dict[str, str]], question: str = "Streymoy?", **state: Any) -> Any:
    from langchain.agents.middleware import ModelRequest
    from langchain_core.messages import HumanMessage, ToolMessage

    messages = [HumanMessage(question), ToolMessage("{}", tool_call_id="t1", name="task")]
    values = {"messages": messages, "findings": {"t1": {"findings": findings}}, **state}
    return ModelRequest(model=None, messages=messages, state=values, runtime=None)  # type: ignore[arg-type]


def _finding(text: str) -> dict[str, str]:
    return {"finding": text, "evidence": text, "source": EARLY}


SERIES_FINDINGS = [_finding("41.2 GWh in 2019."), _finding("It made 44.8 GWh in 2020."), _finding("In 2021: 47.5 GWh.")]


async def _seen(middleware: Any, request: Any) -> str:
    from langchain.agents.middleware import ModelResponse
    from langchain_core.messages import AIMessage

    seen: list[str] = []

    async def handler(call: Any) -> ModelResponse:
        seen.append(call.messages[-1].text)
        return ModelResponse(result=[AIMessage("ok")])

    await middleware.awrap_model_call(request, handler)
    return seen[0]


@pytest.mark.anyio
async def test_a_chart_is_offered_with_how_to_write_one_once_the_findings_hold_a_yearly_series():
    from deep_research_agent.delivery.chart_offer import ChartOfferMiddleware

    request = _offer_request(SERIES_FINDINGS)
    seen = await _seen(ChartOfferMiddleware(max_charts=3), request)
    assert seen.startswith(
        "{}\n\n## Charts\nThe findings so far hold a series: gwh by year: first 41.2 (2019) → last 47.5 (2021), "
        "up 15.3%; min 41.2 (2019), max 47.5 (2021); mean 44.5, median 44.8. A chart may show it. You may add up "
        "to 3 charts to the report, each a fenced block of language `chart`"
    )
    assert request.messages[-1].text == "{}", "the offer is for that call only, never persisted"


@pytest.mark.anyio
async def test_a_chart_is_offered_when_the_user_asks_for_one_and_never_otherwise():
    from deep_research_agent.delivery.chart_offer import ChartOfferMiddleware

    offer = ChartOfferMiddleware(max_charts=2)
    asked = await _seen(offer, _offer_request(SERIES_FINDINGS[:1], "Plot the output since 2019"))
    assert "## Charts\nThe user asked for a chart. You may add up to 2 charts" in asked
    assert "## Charts" in await _seen(offer, _offer_request([], "风电发电量的图表"))
    for middleware, request in (
        (offer, _offer_request(SERIES_FINDINGS[:2], "How much did it generate?")),
        (ChartOfferMiddleware(max_charts=0), _offer_request(SERIES_FINDINGS, "Chart it")),
        (offer, _offer_request(SERIES_FINDINGS, "Chart it", final_report="# Done")),
    ):
        assert await _seen(middleware, request) == "{}"


def test_a_chart_s_points_count_among_the_report_s_claims_and_a_failing_one_as_flagged():
    store = evidence()
    finalise(vet_report(report(spec([*SERIES[:4], (2023, 63.0, 2)])), store), store)

    summary = store.claim_summary
    assert summary is not None
    assert (summary.claims, summary.checked, summary.supported, summary.flagged) == (6, 6, 5, 1)
    assert (summary.chart_points, summary.chart_points_flagged, summary.citation_accuracy) == (5, 1, 0.8333)
    assert summary.coverage == (
        "6 of 6 claims checked (5 chart points); 5 supported, 1 chart point not checking out (citation accuracy 83%)"
    )
