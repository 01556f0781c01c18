"""The prompt budget: characters a research run sends to models, per role and per call, through the real dev server.

A happy-path run: the orchestrator plans, one research unit does one search and one fetch of a short page,
then the report, on the tiers' hosted models, so no agent gets the small-model assist (``assist/``; a run whose
``run_start`` says otherwise stops the measurement). Every request body is measured as it arrives on the wire
at the scripted model server: its characters, and the characters of its tool schemas. The run is measured with default settings, then
once with each optional capability turned on (a named task, the knowledge base, corpora, MCP, a custom
tool, a sandbox; and with the shipped skills off, since they are on by default), each against the happy
path measured in the same run and against the original llm_agent's figure for the same path.

``capability_table()`` is the static side of it, offline: what each capability adds to every model call of
a role (its prompt sections and its tools' schemas, read from the graph's roster); docs/prompt-budget.md
holds it, and tests/test_prompt_budget.py checks that it is current. tests/e2e/test_prompt_budget.py fails
when the happy path passes ``BUDGET_CHARS``, ``BUDGET_CALLS`` or ``RESEARCHER_TOOL_CHARS``.

Run: ``uv run python -m bench.happy_path_chars``. Exits 1 when the happy path passes its budget.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import uuid
from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from bench.stack import running_stack
from testkit.agent_server import RunResult, stream_run
from testkit.scenarios import orchestrator, plan_and_delegate, researcher_reads, scenario, submit
from testkit.web import SHORT_FACT, SHORT_TITLE

# The original llm_agent's happy path, as issue 26 measured it.
ORIGINAL_CHARS = 173_429
BUDGET_CHARS = 26_000
BUDGET_CALLS = 6
RESEARCHER_TOOL_CHARS = 2_500
RESEARCHER = "research-subagent"
PROJECT = Path(__file__).resolve().parents[1]
EXAMPLE_TOOLS = PROJECT / "examples" / "custom_tools"


@dataclass(frozen=True)
class Call:
    """One model request as the model server received it: who sent it, its characters, its tools' characters."""

    role: str
    chars: int
    tool_chars: int


def happy_path_scenario(url: str) -> dict[str, Any]:
    """The scripted happy path over the web stand-in's short page at ``url``."""
    return scenario(
        orchestrator(
            plan_and_delegate("Find what the short page says"),
            submit(f"# Meeting note\n\nThe meeting moved to Thursday [1].\n\n## Sources\n[1] {SHORT_TITLE} — {url}\n"),
        ),
        researcher_reads(url, query="sodium battery", finding="The meeting moved to Thursday.", quote=SHORT_FACT),
    )


def calls_of(requests: list[dict[str, Any]]) -> list[Call]:
    return [
        Call(
            role=request["agent"] or "unmatched",
            chars=request["body_chars"],
            tool_chars=len(json.dumps((request["body"] or {}).get("tools") or [])),
        )
        for request in requests
    ]


async def happy_path(server_url: str, model: Any, web: Any, configurable: dict[str, Any] | None = None) -> list[Call]:
    """Run the happy path once on the server at ``server_url`` and measure its model calls. Each run is a new
    user's, so what an earlier run remembered offers it no knowledge base."""
    model.set_scenario(happy_path_scenario(web.url("/short")))
    configurable = {"user_id": f"budget-{uuid.uuid4().hex[:8]}", **(configurable or {})}
    run = await stream_run(server_url, "What does the short page say?", configurable=configurable, timeout=180)
    if [e.get("reason") for e in run.end_statuses] != ["report_delivered"]:
        raise SystemExit(f"the happy path did not deliver: {run.end_statuses}")
    if helped := assisted_roles(run):
        raise SystemExit(
            f"the happy path ran with the small-model assist on for {helped}; the budget is measured without it"
        )
    return calls_of(model.requests())


def assisted_roles(run: RunResult) -> list[str]:
    """The agent roles whose model got the small-model assist in ``run``, as its ``run_start`` event says."""
    [start] = run.of_type("run_start")
    return sorted(role for role, decision in (start.get("assist") or {}).items() if decision["on"])


def over_budget(calls: list[Call]) -> list[str]:
    """What the happy path's ``calls`` breach of the budget, one line each; empty when within it."""
    total = sum(c.chars for c in calls)
    breaches = []
    if total > BUDGET_CHARS:
        breaches.append(f"{total:,} characters sent, over the budget of {BUDGET_CHARS:,}")
    if len(calls) > BUDGET_CALLS:
        breaches.append(f"{len(calls)} model calls, over the budget of {BUDGET_CALLS}")
    breaches += [
        f"a {RESEARCHER} call carries {c.tool_chars:,} characters of tool schemas, over {RESEARCHER_TOOL_CHARS:,}"
        for c in calls
        if c.role == RESEARCHER and c.tool_chars > RESEARCHER_TOOL_CHARS
    ]
    return breaches


# --- The static side: what each capability adds to every call of a role ---------------------------------


def _settings(environ: Mapping[str, str]) -> Any:
    from deep_research_agent.settings import ResearchConfig

    return ResearchConfig.resolve({}, environ={"OPENAI_API_KEY": "sk-bench-000000000000", **environ})


def _corpus() -> Any:
    from deep_research_agent.corpora.backend import CorpusMeta
    from deep_research_agent.corpora.catalog import Catalog, CorpusEntry
    from deep_research_agent.settings.corpora import CorpusSpec

    spec = CorpusSpec(name="manuals", root="/srv/manuals", title="Engine manuals", description="Service manuals")
    meta = CorpusMeta(
        name="manuals", root=spec.root, title=spec.title, description=spec.description, html="docs", exclude=(),
        indexed_at="2025-03-04T05:06:07Z", documents=12, passages=40, text_chars=90_000, source_bytes=3_500_000,
        unreadable=0,
    )  # fmt: skip
    return Catalog((CorpusEntry(spec=spec, index=Path("/srv/index/manuals.sqlite"), meta=meta),))


def _mcp() -> Any:
    from deep_research_agent.mcp.listing import Listing
    from deep_research_agent.settings.mcp_servers import McpServer

    async def lookup(query: str) -> str:
        return query

    tool = StructuredTool.from_function(coroutine=lookup, name="lookup", description="Look a term up.")
    server = McpServer(label="glossary", url="http://127.0.0.1:3901/mcp", transport="streamable_http", origin="run")
    return (Listing(server, (tool,)),)


def _shown(environ: Mapping[str, str] | None = None, **build: Any) -> Any:
    from deep_research_agent.graph import roster_of

    return roster_of(_settings(environ or {}), **build)


# name -> (what is turned on, the roster, the run's offer)
def _capabilities() -> dict[str, tuple[Any, dict[str, bool]]]:
    return {
        "named task (`configurable.task`)": (_shown(), {"task": True}),
        "knowledge base with entries, or `remember_findings`": (_shown(), {"knowledge": True}),
        "a follow-up turn on the thread": (_shown(), {"follow_up": True}),
        "one corpus": (_shown(corpora=_corpus()), {}),
        "one MCP server with one tool": (_shown(mcp=_mcp()), {}),
        "the example custom tool (`convert_units`)": (_shown({"DRA_CUSTOM_TOOLS_DIR": str(EXAMPLE_TOOLS)}), {}),
        "a sandbox (extract and coding sub-agents)": (
            _shown({"LLM_SANDBOX_URL": "http://127.0.0.1:9", "LLM_SANDBOX_TOKEN": "t" * 24}),
            {},
        ),
    }


def capability_table() -> str:
    """The Markdown table of what each optional capability adds per model call, by role, offline."""
    from deep_research_agent.lifecycle.offer import RunOffer

    base = _shown().shown_chars(RunOffer(decided=True))
    no_skills = _shown({"DRA_SKILLS_DIR": str(PROJECT / "no-such-skills-folder")}).shown_chars(RunOffer(decided=True))
    rows = [
        "| Turned on | Orchestrator, per call | Research sub-agent, per call | Other roles, per call |",
        "|---|---|---|---|",
        "| the happy path (defaults) | "
        + " | ".join(_cell(base.get(role), (0, 0)) for role in ("orchestrator", RESEARCHER))
        + " | none |",
        "| the shipped skill (`skills/`, on by default) | "
        + " | ".join(_cell(base.get(role), no_skills.get(role)) for role in ("orchestrator", RESEARCHER))
        + " | |",
    ]
    for name, (roster, offer) in _capabilities().items():
        shown = roster.shown_chars(RunOffer(decided=True, **offer))
        others = [f"`{role}` {_cell(chars, (0, 0))}" for role, chars in shown.items() if role not in base]
        cells = [_cell(shown.get(role), base.get(role)) for role in ("orchestrator", RESEARCHER)]
        rows.append(f"| {name} | {' | '.join(cells)} | {'; '.join(others)} |")
    return "\n".join(rows) + "\n"


def _cell(chars: tuple[int, int] | None, baseline: tuple[int, int] | None) -> str:
    (prompt, tools), (base_prompt, base_tools) = chars or (0, 0), baseline or (0, 0)
    if (prompt, tools) == (base_prompt, base_tools):
        return "+0"
    sign = "" if baseline == (0, 0) else "+"
    return f"{sign}{prompt - base_prompt:,} prompt, {sign}{tools - base_tools:,} tools"


# --- The measured side: the run through the dev server -----------------------------------------------------


@contextmanager
def _optional_stacks() -> Iterator[dict[str, tuple[Any, dict[str, Any]]]]:
    """The servers of the capabilities a run's settings cannot turn on: corpora and a sandbox (skipped
    without bubblewrap), each a dev server of its own; name -> (stack, configurable)."""
    from deep_research_agent.corpora.catalog import index_path
    from deep_research_agent.corpora.fts5 import Fts5Index
    from deep_research_agent.corpora.indexer import index_corpus
    from deep_research_agent.settings.corpora import CorpusSpec
    from testkit import corpus as corpus_fixture

    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        root, data = corpus_fixture.write_corpus(Path(tmp) / "docs"), Path(tmp) / "data"
        spec = CorpusSpec(name=corpus_fixture.CORPUS_NAME, root=str(root), title=corpus_fixture.CORPUS_TITLE)
        index = Fts5Index(spec.name, index_path(data, spec.name), writable=True)
        try:
            index_corpus(spec, index, workers=1)
        finally:
            index.close()
        corpora = json.dumps({spec.name: {"path": spec.root, "title": spec.title}})
        stacks = {"one corpus": (stack.enter_context(running_stack(DRA_CORPORA=corpora, DRA_DATA_DIR=str(data))), {})}
        try:
            from testkit.sandbox_service import SandboxService

            service = stack.enter_context(SandboxService())
            sandbox = running_stack(LLM_SANDBOX_URL=service.url, LLM_SANDBOX_TOKEN=service.token)
            stacks["a sandbox"] = (stack.enter_context(sandbox), {})
        except BaseException as exc:  # noqa: BLE001 - pytest.skip raises a BaseException without bubblewrap
            print(f"(the sandbox is not measured: {exc})", file=sys.stderr)
        yield stacks


async def measure() -> dict[str, list[Call]]:
    """The happy path, then once per optional capability; name -> its calls."""
    from testkit.mcp_stand_in import McpStandIn

    measured: dict[str, list[Call]] = {}
    with (
        tempfile.TemporaryDirectory() as empty,
        McpStandIn() as mcp,
        running_stack(DRA_ALLOWED_EXTENSION_ROOTS=f"{PROJECT},{empty}") as base,
    ):
        runs: dict[str, dict[str, Any]] = {
            "happy path": {},
            "named task": {"task": "prompt-budget"},
            "knowledge base (remember_findings)": {"remember_findings": True},
            "skills off": {"skills_dir": empty},
            "one MCP server": {"mcp_servers": [{"label": "stand-in", "url": mcp.url}]},
            "the example custom tool": {"custom_tools_dir": str(EXAMPLE_TOOLS)},
        }
        for name, configurable in runs.items():
            measured[name] = await happy_path(base.server.url, base.model, base.web, configurable)
    with _optional_stacks() as stacks:
        for name, (stack, configurable) in stacks.items():
            measured[name] = await happy_path(stack.server.url, stack.model, stack.web, configurable)
    return measured


def _report(name: str, calls: list[Call], happy: int) -> None:
    total = sum(c.chars for c in calls)
    per_role: dict[str, list[Call]] = defaultdict(list)
    for call in calls:
        per_role[call.role].append(call)
    print(f"\n== {name}: {total:,} chars in {len(calls)} calls   ({total / ORIGINAL_CHARS:.2f}x the original's", end="")
    print(f" {ORIGINAL_CHARS:,}; {total - happy:+,} against the happy path)")
    for role, role_calls in sorted(per_role.items()):
        sizes = ", ".join(f"{c.chars:,}" for c in role_calls)
        tools = max(c.tool_chars for c in role_calls)
        print(f"  {role:>17}: {sum(c.chars for c in role_calls):>7,} chars; per call {sizes}; tool schemas {tools:,}")


def main() -> int:
    measured = asyncio.run(measure())
    happy = measured["happy path"]
    happy_total = sum(c.chars for c in happy)
    for name, calls in measured.items():
        _report(name, calls, happy_total)
    print("\nevery run above: the tiers' hosted models, so model_assist auto gave no agent the small-model assist")
    print(f"budget: {BUDGET_CHARS:,} chars, {BUDGET_CALLS} calls, {RESEARCHER_TOOL_CHARS:,} researcher tool chars")
    print(f"stock deepagents orchestrator toolbox per call (baseline): {stock_orchestrator_tools_chars():,} chars")
    print("\nWhat each capability adds per model call (docs/prompt-budget.md):\n" + capability_table())
    breaches = over_budget(happy)
    for breach in breaches:
        print(f"OVER BUDGET: {breach}")
    return 1 if breaches else 0


def stock_orchestrator_tools_chars() -> int:
    """What deepagents' default orchestrator toolbox weighs on the wire, per model call."""
    from deepagents.backends import StateBackend
    from deepagents.middleware.filesystem import FilesystemMiddleware
    from langchain.agents.middleware import TodoListMiddleware

    tools = [*FilesystemMiddleware(backend=StateBackend()).tools, *TodoListMiddleware().tools]
    return len(json.dumps([convert_to_openai_tool(t) for t in tools]))


if __name__ == "__main__":
    sys.exit(main())
