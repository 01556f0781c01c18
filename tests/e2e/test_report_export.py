"""Reports people can hand on, through ``langgraph dev``: ``GET /reports/{thread_id}[/{run_id}]?format=`` turns
a delivered report into Markdown, HTML, PDF and Word, read back here with a parser of each format.

The run reads two loopback pages about the Lighthouse of Alexandria and delivers a report with a table, a code
block, CJK and right-to-left text and one invented figure, which the report gate marks ``[unverified]``.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import docx
import httpx
import pytest
from langgraph_sdk import get_client
from pypdf import PdfReader

from testkit.agent_server import AgentServer, RunResult, stream_run
from testkit.scenarios import end_of, findings_json, orchestrator, plan_and_delegate, researcher, scenario, submit
from testkit.scripted_model import call, turn
from testkit.web import ARTICLES
from tests.conftest import agent_env

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

QUESTION = "How tall was the Lighthouse of Alexandria? 亚历山大灯塔有多高？"
INVENTED = "The lighthouse stood 300 metres tall and was finished in 1999 [1]."
MARKED = "The lighthouse stood 300 metres tall and was finished in 1999 [1] [unverified]."
CJK = "灯塔位于法罗斯岛。"
ARABIC = "منارة الإسكندرية"
ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789ab"


def report_markdown(pharos: str, survey: str, image: str = "") -> str:
    return (
        "# The Lighthouse of Alexandria\n\n"
        f"It was built between 280 and 247 BC [1]. {INVENTED}\n\n"
        + (f"![Plan of the tower]({image})\n\n" if image else "")
        + "| Survey | Finding |\n|---|---|\n| 2023 dives | 2,500 granite blocks were mapped [2]. |\n\n"
        "```python\nheights = {'pharos': '[1]'}\n```\n\n"
        f"## 中文摘要\n\n{CJK} The Arabic name is {ARABIC}.\n\n"
        f"## Sources\n[1] The Lighthouse of Alexandria — {pharos}\n[2] Divers map the ruins of the Pharos — {survey}\n"
    )


def lighthouse_scenario(web: Any, image: str = "") -> tuple[dict[str, Any], str, str]:
    pharos, survey = (web.url(ARTICLES[slug].path) for slug in ("pharos-lighthouse", "pharos-survey"))
    reader = researcher(
        turn(tool_calls=[call("web_fetch", url=pharos), call("web_fetch", url=survey)]),
        turn(
            content=findings_json(
                "Dates and the survey.",
                [
                    {"finding": "Built 280-247 BC.", "evidence": "between 280 and 247 BC", "source": pharos},
                    {"finding": "2,500 blocks mapped.", "evidence": "mapped 2,500 granite blocks", "source": survey},
                ],
            )
        ),
    )
    draft = submit(report_markdown(pharos, survey, image))
    # The invented figure is sent back once; the same draft again is delivered with it marked.
    return (
        scenario(orchestrator(plan_and_delegate("Find the lighthouse's height"), draft, repeat_last=True), reader),
        pharos,
        survey,
    )


@pytest.fixture
async def delivered(agent_server, scripted, web) -> tuple[RunResult, str, str]:
    plan, pharos, survey = lighthouse_scenario(web)
    scripted.set_scenario(plan)
    run = await stream_run(agent_server.url, QUESTION, timeout=120)
    assert end_of(run) == ("done", "report_delivered")
    assert MARKED in run.values["final_report"], "the scenario delivers one marked claim"
    return run, pharos, survey


async def get_report(server: str, path: str, headers: dict[str, str] | None = None, **params: str) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server, timeout=60) as client:
        return await client.get(path, params=params, headers=headers)


class Links(HTMLParser):
    """Every element's text by id, every link's href and text, and the whole text."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.ids: dict[str, list[str]] = {}
        self.open: list[tuple[str, str | None]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "a":
            self.links.append((found.get("href") or "", ""))
        if found.get("id"):
            self.ids[found["id"]] = []
        self.open.append((tag, found.get("id")))

    def handle_endtag(self, tag: str) -> None:
        if self.open:
            self.open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self.open and self.open[-1][0] == "a" and self.links:
            href, text = self.links[-1]
            self.links[-1] = (href, text + data)
        for _, element in self.open:
            if element in self.ids:
                self.ids[element].append(data)

    def by_id(self, element: str) -> str:
        return "".join(self.ids.get(element, []))


def assert_header(text: str) -> None:
    assert "The Lighthouse of Alexandria" in text and QUESTION in text
    assert "Outcome: partial" in text and "(marked [unverified])" in text, "the outcome notice is at the top"
    assert text.index("Outcome: partial") < text.index("It was built between 280 and 247 BC")


async def test_the_html_export_links_every_marker_to_its_source_and_notes_why_a_claim_is_unverified(
    agent_server, delivered
):
    run, pharos, survey = delivered

    answer = await get_report(agent_server.url, f"/reports/{run.thread_id}", format="html")

    assert answer.status_code == 200 and answer.headers["content-type"] == "text/html; charset=utf-8"
    disposition = answer.headers["content-disposition"]
    assert disposition.startswith('attachment; filename="how-tall-was-the-lighthouse-of-alexandria')
    assert "filename*=UTF-8''how-tall-was-the-lighthouse-of-alexandria-%E4%BA%9A" in disposition
    page = Links()
    page.feed(answer.text)
    text = "".join(page.text)
    assert_header(text)
    citations = [(href, label) for href, label in page.links if label.isdigit()]
    assert citations == [(pharos, "1"), (pharos, "1"), ("#note-1", "1"), (survey, "2")], citations
    assert "heights = {'pharos': '[1]'}" in text, "a marker inside code stays code"
    assert "<table>" in answer.text and "<pre><code" in answer.text
    note = page.by_id("note-1")
    assert "The lighthouse stood 300 metres tall and was finished in 1999 [1]" in note
    assert "300 metres, 1999 not in the text of [1]" in note
    assert pharos in page.by_id("source-1") and "read 20" in page.by_id("source-1")
    assert survey in page.by_id("source-2") and "Divers map the ruins of the Pharos" in page.by_id("source-2")
    assert CJK in text and ARABIC in text
    assert "Coverage" in text and "claims checked" in text and "citation accuracy" in text


async def test_the_pdf_export_keeps_links_marks_sources_and_cjk_text(agent_server, delivered):
    run, pharos, survey = delivered

    answer = await get_report(agent_server.url, f"/reports/{run.thread_id}/{run.run_id}", format="pdf")

    assert answer.status_code == 200 and answer.headers["content-type"] == "application/pdf"
    pdf = PdfReader(io.BytesIO(answer.content))
    text = "\n".join(page.extract_text() for page in pdf.pages)
    assert_header(" ".join(text.split()))
    assert "[unverified]" in text and "not in the text of [1]" in " ".join(text.split())
    assert CJK in text, "CJK text renders with a font that has its glyphs"
    uris = [
        annotation.get_object()["/A"]["/URI"]
        for page in pdf.pages
        for annotation in page.get("/Annots") or []
        if "/A" in annotation.get_object()
    ]
    assert uris.count(pharos) >= 3 and uris.count(survey) >= 2, "each [n] and each Sources title links the source"
    assert "Sources" in text and "Divers map the ruins of the Pharos" in text and "Coverage" in text


async def test_the_docx_export_notes_every_marker_and_unverified_claim(agent_server, delivered):
    run, pharos, survey = delivered

    answer = await get_report(agent_server.url, f"/reports/{run.thread_id}", format="docx")

    assert answer.headers["content-type"] == "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    document = docx.Document(io.BytesIO(answer.content))
    paragraphs = document.paragraphs
    text = "\n".join(p.text for p in paragraphs)
    assert_header(text)
    body_links = [(h.text, h.fragment) for p in paragraphs for h in p.hyperlinks if h.fragment]
    table_links = [
        (h.text, h.fragment)
        for table in document.tables
        for cell in table._cells
        for p in cell.paragraphs
        for h in p.hyperlinks
    ]
    assert body_links == [("1", "source_1"), ("1", "source_1"), ("1", "note_1")]
    assert ("2", "source_2") in table_links
    bookmarks = {
        b.get("{http://schemas.openxmlformats.org/wordprocessingml/2006/main}name"): p.text
        for p in paragraphs
        for b in p._p.iter("{http://schemas.openxmlformats.org/wordprocessingml/2006/main}bookmarkStart")
    }
    assert pharos in bookmarks["source_1"] and survey in bookmarks["source_2"] and "read 20" in bookmarks["source_1"]
    assert "300 metres, 1999 not in the text of [1]" in bookmarks["note_1"]
    assert [h.address for p in paragraphs for h in p.hyperlinks if h.address] == [pharos, survey]
    assert CJK in text and ARABIC in text and "heights = {'pharos': '[1]'}" in text
    cells = [cell.text for table in document.tables for cell in table._cells]
    assert "Coverage" in cells and "2,500 granite blocks were mapped [2]." in cells


async def test_the_markdown_export_rebuilds_the_sources_with_read_times(agent_server, delivered):
    run, pharos, _ = delivered

    answer = await get_report(agent_server.url, f"/reports/{run.thread_id}")

    assert answer.headers["content-type"] == "text/markdown; charset=utf-8"
    assert_header(answer.text.replace("**", ""))
    assert re.search(rf"\[1\] \[The Lighthouse of Alexandria\]\(<{re.escape(pharos)}>\) \(read \d{{4}}-", answer.text)
    assert "1. “The lighthouse stood 300 metres tall and was finished in 1999 [1].”" in answer.text


async def test_the_pdf_export_of_a_report_naming_a_loopback_image_makes_no_request_to_it_and_links_it(
    agent_server, scripted, web
):
    image = web.url("/image.png")
    plan, _, _ = lighthouse_scenario(web, image=image)
    scripted.set_scenario(plan)
    run = await stream_run(agent_server.url, QUESTION, timeout=120)
    assert end_of(run) == ("done", "report_delivered") and image in run.values["final_report"]

    answers = {
        format: await get_report(agent_server.url, f"/reports/{run.thread_id}", format=format)
        for format in ("pdf", "html", "md", "docx")
    }

    assert "/image.png" not in web.page_requests(), "exporting the report fetched the image it names"
    assert all(answer.status_code == 200 for answer in answers.values())
    pdf = PdfReader(io.BytesIO(answers["pdf"].content))
    uris = [a.get_object()["/A"]["/URI"] for p in pdf.pages for a in p.get("/Annots") or [] if "/A" in a.get_object()]
    assert image in uris and "Image: Plan of the tower" in " ".join(p.extract_text() for p in pdf.pages)
    assert (
        "<img" not in answers["html"].text and f'<a href="{image}">Image: Plan of the tower</a>' in answers["html"].text
    )
    assert f"[Plan of the tower]({image})" in answers["md"].text and "![Plan" not in answers["md"].text


async def test_reports_answer_behind_a_tls_terminating_proxy(agent_server, delivered):
    run, _, _ = delivered

    answer = await get_report(
        agent_server.url, f"/reports/{run.thread_id}", headers={"X-Forwarded-Proto": "https"}, format="md"
    )

    assert answer.status_code == 200, answer.text[:500]
    assert MARKED in answer.text


async def test_a_thread_without_a_report_or_an_unknown_format_is_refused_with_a_detail(agent_server):
    thread_id = (await get_client(url=agent_server.url).threads.create())["thread_id"]

    empty = await get_report(agent_server.url, f"/reports/{thread_id}", format="pdf")
    unknown = await get_report(agent_server.url, f"/reports/{thread_id}", format="odt")
    missing = await get_report(agent_server.url, "/reports/no-such-thread/no-such-run")

    assert (empty.status_code, empty.json()) == (404, {"detail": f"No delivered report on thread {thread_id}."})
    assert unknown.status_code == 422 and "md, html, pdf, docx" in unknown.json()["detail"]
    assert missing.status_code == 404 and missing.json()["detail"].startswith("No delivered report on run no-such-run")


@pytest.fixture(scope="module")
def authed_server(model_server, web_server, test_corpus):
    auth = Path(__file__).resolve().parents[2] / "testkit" / "owner_auth.py"
    env = {**agent_env(model_server, web_server, test_corpus), "DRA_AUTH_TOKENS": f"alice={ALICE},bob={BOB}"}
    server = AgentServer(env, jobs=2, auth={"path": f"{auth}:auth"}).start()
    try:
        yield server
    finally:
        server.stop()


async def test_behind_the_deployment_s_auth_another_user_s_report_is_a_404(authed_server, scripted, web):
    plan, _, _ = lighthouse_scenario(web)
    scripted.set_scenario(plan)
    run = await stream_run(get_client(url=authed_server.url, api_key=ALICE), QUESTION, timeout=120)
    assert end_of(run) == ("done", "report_delivered")
    path = f"/reports/{run.thread_id}"

    own = await get_report(authed_server.url, path, headers={"x-api-key": ALICE}, format="md")
    other = await get_report(authed_server.url, path, headers={"x-api-key": BOB}, format="md")
    nobody = await get_report(authed_server.url, path, format="md")

    assert own.status_code == 200 and MARKED in own.text, own.text[:500]
    assert other.status_code == 404, authed_server.log()[-3000:]
    assert (other.status_code, other.json()) == (404, {"detail": f"No delivered report on thread {run.thread_id}."})
    assert nobody.status_code == 401


def ask(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", "ask", "--url", url, "--no-clarify", *args],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180, env=env,
    )  # fmt: skip


def read_back(path: Path) -> str:
    """The text of a written document, by a parser of its format."""
    if path.suffix == ".pdf":
        return " ".join(" ".join(page.extract_text() for page in PdfReader(path).pages).split())
    if path.suffix == ".docx":
        return "\n".join(p.text for p in docx.Document(str(path)).paragraphs)
    if path.suffix == ".md":
        return path.read_text(encoding="utf-8")
    page = Links()
    page.feed(path.read_text(encoding="utf-8"))
    return "".join(page.text)


@pytest.mark.parametrize("suffix", [".md", ".html", ".pdf", ".docx"])
async def test_ask_out_writes_the_report_in_the_format_its_extension_names(
    agent_server, scripted, web, tmp_path, suffix
):
    plan, pharos, _ = lighthouse_scenario(web)
    scripted.set_scenario(plan)
    target = tmp_path / "out" / f"report{suffix}"

    done = ask(agent_server.url, QUESTION, "--out", str(target))

    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Report written to {target}" in done.stdout
    text = read_back(target)
    assert "The Lighthouse of Alexandria" in text and QUESTION in text and "[unverified]" in text
    assert "300 metres, 1999 not in the text of [1]" in text and CJK in text
    assert pharos in "".join(text.split()), "a long URL may wrap in a PDF line"


def test_ask_out_refuses_an_unknown_extension_before_anything_runs(agent_server, tmp_path):
    done = ask(agent_server.url, QUESTION, "--out", str(tmp_path / "report.odt"))

    assert done.returncode == 2
    assert "Invalid --out" in done.stdout and ".md, .html, .pdf, .docx" in done.stdout
    assert not (tmp_path / "report.odt").exists()
