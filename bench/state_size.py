"""Thread-state size of a research run that reads many long pages, through the real dev server.

A run reads 20 pages of about 50 KB of text each (the web stand-in's ``/pages/{n}``), and a run reads one
such page, each on a fresh thread. For each, measured as compact JSON (UTF-8 bytes) of what a client
gets: the largest ``values`` event of the stream, a thread state read (``GET /threads/{id}/state``), and
every checkpoint of the thread's root graph (``threads.get_history``; sub-agent checkpoints are not in it).

The baseline, computed in the same run, is the state as it was when the thread state carried every
evidence text: the same JSON with each ``evidence`` entry given its full text back, as read from
``GET /evidence/{thread_id}``. It is exact for what the state holds and not a separate run, since nothing
else about a run depends on where the texts are kept.

"Checkpoint growth per page" compares the largest checkpoint of the 20-page run with the one-page run's:
what one more page read adds to a checkpoint.

Run: ``uv run python -m bench.state_size``. Exits 1 when the 20-page run's largest values event or state
read is 30 KB or more, or a page read adds more than 1 KB to a checkpoint.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from typing import Any

from langgraph_sdk import get_client

from bench.stack import Stack, running_stack
from testkit.agent_server import GRAPH_ID, get_evidence
from testkit.scenarios import findings_json, orchestrator, plan_and_delegate, researcher, scenario, submit
from testkit.scripted_model import call, turn

PAGES = 20
LIMIT_BYTES = 30_000
GROWTH_LIMIT_BYTES = 1_000
QUOTE = "station N-001-001 logged 1 readings of the tidal gauge"


def size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def with_texts(values: dict[str, Any], texts: dict[str, str]) -> dict[str, Any]:
    """``values`` as the state held them before: every evidence entry with its full text."""
    if not values.get("evidence"):
        return values
    return {**values, "evidence": [{**entry, "text": texts[entry["id"]]} for entry in values["evidence"]]}


@dataclass
class Sizes:
    values_event: int
    state_read: int
    checkpoints: list[int]

    @property
    def largest_checkpoint(self) -> int:
        return max(self.checkpoints)

    @property
    def mean_checkpoint(self) -> float:
        return sum(self.checkpoints) / len(self.checkpoints)


async def measure(stack: Stack, pages: int) -> tuple[Sizes, Sizes, int]:
    """The run's sizes now and in the baseline, and the characters of text it read."""
    urls = [stack.web.url(f"/pages/{n}") for n in range(1, pages + 1)]
    finding = "Station N-001-001 logged one reading."
    stack.model.set_scenario(
        scenario(
            orchestrator(
                plan_and_delegate("Read the tidal survey reports"),
                submit(
                    f"# Tidal survey\n\nStation N-001-001 logged one reading [1].\n\n## Sources\n[1] Report 1 — {urls[0]}\n"
                ),
            ),
            researcher(
                turn(tool_calls=[call("web_fetch", url=url) for url in urls]),
                turn(content=findings_json(finding, [{"finding": finding, "evidence": QUOTE, "source": urls[0]}])),
            ),
        )
    )
    client = get_client(url=stack.server.url)
    thread_id = (await client.threads.create())["thread_id"]
    values_events = []
    async for part in client.runs.stream(
        thread_id,
        GRAPH_ID,
        input={"messages": [{"role": "user", "content": "Summarise the tidal surveys."}]},
        stream_mode="values",
    ):
        if part.event == "values":
            values_events.append(part.data)
    state = await client.threads.get_state(thread_id)
    history = await client.threads.get_history(thread_id, limit=1000)
    answer = await get_evidence(stack.server.url, thread_id)
    if answer.status_code != 200 or len([e for e in answer.json() if e["kind"] == "page"]) != pages:
        raise SystemExit(f"the run did not store its {pages} pages: {answer.status_code} {answer.text[:200]}")
    texts = {record["id"]: record["text"] for record in answer.json()}
    current = Sizes(
        values_event=max(size(v) for v in values_events),
        state_read=size(state),
        checkpoints=[size(checkpoint) for checkpoint in history],
    )
    baseline = Sizes(
        values_event=max(size(with_texts(v, texts)) for v in values_events),
        state_read=size({**state, "values": with_texts(state["values"], texts)}),
        checkpoints=[size({**c, "values": with_texts(c["values"], texts)}) for c in history],
    )
    return current, baseline, sum(len(text) for text in texts.values())


def main() -> int:
    async def both() -> tuple[tuple[Sizes, Sizes, int], tuple[Sizes, Sizes, int]]:
        with running_stack() as stack:
            return await measure(stack, 1), await measure(stack, PAGES)

    (one, one_base, _), (many, many_base, read_chars) = asyncio.run(both())
    print(f"{PAGES} pages read, {read_chars:,} characters of text; sizes in bytes of compact JSON")
    print(f"{'':>30} {'current':>10} {'baseline':>11} {'ratio':>7}")
    rows = [
        ("largest values event", many.values_event, many_base.values_event),
        ("thread state read", many.state_read, many_base.state_read),
        ("largest checkpoint", many.largest_checkpoint, many_base.largest_checkpoint),
        (
            f"checkpoint mean ({len(many.checkpoints)} steps)",
            round(many.mean_checkpoint),
            round(many_base.mean_checkpoint),
        ),
        ("all checkpoints of the run", sum(many.checkpoints), sum(many_base.checkpoints)),
    ]
    for label, now, before in rows:
        print(f"{label:>30} {now:>10,} {before:>11,} {now / before:>7.3f}")
    growth = (many.largest_checkpoint - one.largest_checkpoint) / (PAGES - 1)
    growth_base = (many_base.largest_checkpoint - one_base.largest_checkpoint) / (PAGES - 1)
    print(f"{'checkpoint growth per page':>30} {growth:>10,.0f} {growth_base:>11,.0f} {growth / growth_base:>7.3f}")
    ok = many.values_event < LIMIT_BYTES and many.state_read < LIMIT_BYTES and growth <= GROWTH_LIMIT_BYTES
    print(
        f"limits: values event and state read < {LIMIT_BYTES:,}, growth <= {GROWTH_LIMIT_BYTES:,} per page: {'ok' if ok else 'EXCEEDED'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
