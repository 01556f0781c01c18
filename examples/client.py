"""Reference consumer of the deep research agent's event stream (langgraph_sdk + stdlib only).

    python examples/client.py "Your question" [--url http://127.0.0.1:2024]    # or set DRA_URL

How a frontend maps the stream to UI. Protocol events arrive on the ``custom`` channel: the event name is
``custom`` from the orchestrator and ``custom|tools:<uuid>`` from inside a sub-agent; the data is the event
dict, which always has ``type`` and ``role`` (plus ``task_id`` inside a sub-agent: group rows by it).
- run_start            reset the view; check ``protocol_version`` (1) before trusting the shapes.
- clarification        a card with ``questions`` and one input each. The run then ends ``done`` with reason
                       ``awaiting_clarification``; send the answers as ONE user message on the SAME thread.
- search_query         a pending search row (``id``, ``query``); search_results fills it (``ok``, ``count``).
- source               append to the source list (first sighting of a URL in the run).
- page_fetched         a "reading <url>" activity line, or a failed-fetch marker when ``ok`` is false.
- status subagent_*    one row per sub-agent, keyed by ``task_id``: start (role, model) → done (model
                       calls, tokens, tool calls) or failed (``detail``).
- subagent_findings    attach the unit's ``summary``, ``findings`` and ``gaps`` to the research area.
- status warning / keyless_search / revising
                       a dismissible banner with ``detail``.
- report               render ``markdown``; show a banner when ``partial`` is true. ``claims`` counts its
                       checked claims; a sentence marked ``[unverified]`` did not check out against its
                       sources, and the thread state's ``citations`` says why, claim by claim.
- usage                the footer: tokens, cost, per-role breakdown.
- status done / error  the single end state: stop spinners and show ``detail`` (it ends "Run time Xm Ys.").

A "Finish now" button asks the run to deliver what it has (the run id is in the stream's first
``metadata`` part): ``await client.store.put_item(["deep_research_agent", "stop_requests"], run_id,
{"mode": "wrap_up"})`` lets the agents write up and the report be written; ``{"mode": "now"}`` stops every
agent at once and ends ``done/stopped_by_user`` with a partial report. ``runs.cancel`` delivers nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time

from langgraph_sdk import get_client

GRAPH_ID = "deep_research_agent"
NO_CLARIFY = "Do not ask clarifying questions. Proceed on reasonable assumptions and state them.\n\n"


def describe(event: dict) -> str:
    """One plain line per protocol event."""
    kind, who = event.get("type"), event.get("role", "orchestrator")
    if kind == "status":
        extra = event.get("detail") or event.get("model") or ""
        return f"[{who}] status {event.get('state')} {extra}".rstrip()
    if kind == "search_query":
        return f"[{who}] searching: {event['query']}"
    if kind == "search_results":
        outcome = f"{event['count']} results" if event.get("ok") else f"failed: {event.get('error')}"
        return f"[{who}] results for {event['query']!r}: {outcome}"
    if kind == "source":
        return f"[{who}] source: {event['title']} ({event['url']})"
    if kind == "page_fetched":
        return f"[{who}] read {event['url']}: {'ok' if event.get('ok') else event.get('error')}"
    if kind == "subagent_findings":
        return f"[{who}] findings for {event['unit']}: {len(event.get('findings', []))}"
    if kind == "clarification":
        return f"[{who}] clarification: {len(event['questions'])} question(s)"
    if kind == "usage":
        return f"usage: {event['total_tokens']} tokens, ${event['cost_usd']:.4f}, {event['elapsed']}"
    return f"[{who}] {kind}"


async def stream(client, thread_id: str, text: str) -> dict:
    """Stream one run; return what the caller needs: the end status, report and any questions."""
    seen: dict = {"end": None, "report": None, "questions": []}
    async for part in client.runs.stream(
        thread_id,
        GRAPH_ID,
        input={"messages": [{"role": "user", "content": text}]},
        stream_mode=["messages", "updates", "custom"],
        stream_subgraphs=True,
    ):
        if not part.event.startswith("custom") or not isinstance(part.data, dict):
            continue  # token chunks and state updates: a richer UI would use them for live typing
        event = part.data
        if event["type"] == "report":
            seen["report"] = event["markdown"]
        elif event["type"] == "clarification":
            seen["questions"] = event["questions"]
        elif event["type"] == "status" and event["state"] in ("done", "error"):
            seen["end"] = event
        print(describe(event), flush=True)
    return seen


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("question")
    parser.add_argument("--url", default=os.environ.get("DRA_URL", "http://127.0.0.1:2024"))
    args = parser.parse_args()
    interactive = sys.stdin.isatty()
    client = get_client(url=args.url)
    started = time.monotonic()
    end = None
    try:
        thread = await client.threads.create()
        seen = await stream(client, thread["thread_id"], args.question if interactive else NO_CLARIFY + args.question)
        if seen["questions"]:
            if interactive:
                lines = [f"{n}. Q: {q} A: {input(f'{q} > ')}" for n, q in enumerate(seen["questions"], 1)]
                reply = "Answers to your clarifying questions:\n" + "\n".join(lines)
            else:
                reply = "No answers are available; proceed on your stated assumptions."
            seen = await stream(client, thread["thread_id"], reply)
        end = seen["end"]
        if seen["report"]:
            print("\n" + seen["report"])
        print(f"\nEnd: {end['state']} ({end.get('reason')}): {end.get('detail')}" if end else "\nNo end status.")
    finally:
        elapsed = end["elapsed"] if end and end.get("elapsed") else f"{time.monotonic() - started:.0f}s"
        print(f"Run time {elapsed}")
    return 0 if end and end["state"] == "done" else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
