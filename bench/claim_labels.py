"""How well the claim checks flag what a cited text does not back: a labelled set of report sentences.

``claim_labels.jsonl`` beside this module holds passages and cases (one JSON object a line, ``type``
``passage`` or ``case``). The passages are real text: the PostgreSQL 15 documentation and the Debian
Reference as the Debian packages ``postgresql-doc-15`` and ``debian-reference-en`` ship them, quoted as
written, and encyclopedic prose written for the project (the Lighthouse of Alexandria page is the one the
end-to-end tests serve). Each case is a report sentence citing its passage and a label: ``supported`` (a
correct paraphrase, a label number such as "Finding 1") or the kind of error it carries (``wrong_figure``,
``wrong_year``, ``wrong_unit``, ``wrong_era``, ``wrong_quote``, ``wrong_name``, ``wrong_place``,
``wrong_direction``, ``wrong_cause``, ``invented_detail``). ``split`` is ``dev`` for the cases the checks
were tuned on and ``held_out`` for a set written after the rules were frozen and run once.

Every passage becomes one page of a run's evidence and its cases one report (each case a paragraph ending
``[1]``), which goes through the product's own checks (``check_citations``, ``check_claims``); a case is
flagged when its claim is delivered marked ``[unverified]`` (``ClaimVerdict.flags``: neither ``supported``
nor ``unchecked``). Printed per mode: precision and recall of the flags over the unsupported cases, the
false-flag rate over the supported ones, how many of each were left unchecked, and the recall per error
kind:

- ``deterministic``: figures, quotes, labels, names and direction, no model;
- ``scripted judge``: the same, then the judge's runner (``report/judge.run_judge``) with a stand-in that
  answers each claim it is sent with its label, naming the passage that holds its deciding words (P1 when
  none was shown) and quoting it as its reason, and calls the control claim contradicted. It measures which
  claims reach the judge, with what passages, and the plumbing (prompt, parsing, the guards, applying),
  not a model: a miss here is an error the judge is never shown;
- ``model judge``: the tier's utility model through ``lifecycle/claim_judge.py`` (uncounted), when a model
  key is configured (``OPENAI_API_KEY`` or ``OPENROUTER_API_KEY``, and ``OPENAI_BASE_URL`` if not
  OpenRouter) or ``--model`` is given; ``--local 0.5b|1.5b`` runs it on a llama.cpp server with that
  Qwen2.5-Coder model, found or built and fetched as ``bench/local_model.py`` does. With ``--control both``
  (the default for a model) it runs twice, with the planted control claim (``report/judge_guard.py``) and
  without: how often the judge was caught (a report whose control claim it called supported keeps none of
  its verdicts), and the rates either way.

Run: ``uv run python -m bench.claim_labels [--split dev|held_out|all] [--misses] [--model | --local 1.5b]
[--control on|off|both] [--timeout S]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

from deep_research_agent.domain.names import ClaimVerdict
from deep_research_agent.evidence.text import EvidenceLibrary
from deep_research_agent.report.citations import check_citations
from deep_research_agent.report.claims import ClaimCheck, check_claims
from deep_research_agent.report.judge import JudgeCall, apply_judgements, run_judge

CASES = Path(__file__).with_name("claim_labels.jsonl")
SUPPORTED = "supported"
_CLAIM_RE = re.compile(r"^(C\d+) \(cites [^)]*; its passages: ([^)]*)\): (.*)$", re.M)
_PASSAGE_RE = re.compile(r"^(P\d+) \(source \[\d+\]\): (.*)$", re.M)


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    url: str
    origin: str
    text: str


@dataclass(frozen=True)
class Case:
    id: str
    passage: str
    label: str
    sentence: str
    split: str
    note: str = ""
    # The words of the passage's sentence (or sentences) that decide the claim: what it states, or what the
    # claim distorts. Empty when the passage has no sentence about it (an invented detail from nowhere).
    deciding: tuple[str, ...] = ()

    @property
    def unsupported(self) -> bool:
        return self.label != SUPPORTED


def load(path: Path = CASES) -> tuple[dict[str, Passage], list[Case]]:
    passages: dict[str, Passage] = {}
    cases: list[Case] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        item = json.loads(line)
        kind = item.pop("type")
        if kind == "passage":
            passages[item["id"]] = Passage(**item)
        elif kind == "case":
            cases.append(Case(**{**item, "deciding": tuple(item.get("deciding") or ())}))
        else:
            raise ValueError(f"{path.name}:{number}: unknown type {kind!r}")
    missing = {c.passage for c in cases} - passages.keys()
    if missing:
        raise ValueError(f"cases cite unknown passages: {sorted(missing)}")
    return passages, cases


def cited(sentence: str) -> str:
    """The sentence citing ``[1]`` before its closing full stop."""
    body = sentence.rstrip()
    if body.endswith("."):
        return body[:-1].rstrip() + " [1]."
    return body + " [1]"


def report_of(passage: Passage, cases: list[Case]) -> str:
    body = "\n\n".join(cited(case.sentence) for case in cases)
    return f"# {passage.title}\n\n{body}\n\n## Sources\n[1] {passage.title} — {passage.url}\n"


def library_of(passage: Passage) -> EvidenceLibrary:
    record = {
        "id": f"ev-{passage.id}",
        "url": passage.url,
        "title": passage.title,
        "kind": "page",
        "text": passage.text,
    }
    return EvidenceLibrary([record])


def deterministic(passage: Passage, cases: list[Case]) -> tuple[ClaimCheck, EvidenceLibrary]:
    markdown = report_of(passage, cases)
    library = library_of(passage)
    check = check_claims(markdown, check_citations(markdown, library, []), library)
    if len(check.checked) != len(cases):
        texts = [c.claim.text for c in check.checked]
        raise ValueError(f"passage {passage.id}: {len(cases)} cases made {len(texts)} claims: {texts}")
    return check, library


def scripted_judge(cases: Iterable[Case]) -> JudgeCall:
    """A stand-in judge that answers each claim it is sent with that claim's label, naming the passage of its
    deciding words (its first passage when none was shown) and quoting it; any other claim (the control) it
    calls contradicted."""
    by_sentence = {" ".join(c.sentence.rstrip(".").split()): c for c in cases}

    async def judge(system: str, user: str) -> str:
        passages = dict(_PASSAGE_RE.findall(user))
        verdicts = []
        for claim_id, shown, text in _CLAIM_RE.findall(user):
            case = by_sentence.get(" ".join(text.rstrip(".").split()))
            own = [p.strip() for p in shown.split(",")]
            deciding = next((p for p in own if case and any(w in passages[p] for w in case.deciding)), own[0])
            verdict = "contradicted" if case is None else "supported" if case.label == SUPPORTED else "not_supported"
            reason = f"{deciding} says: {passages[deciding][:100]}"
            verdicts.append({"claim": claim_id, "verdict": verdict, "passage": deciding, "reason": reason})
        return json.dumps({"verdicts": verdicts})

    return judge


def model_judge() -> JudgeCall:
    """The judge a run gets (``lifecycle/claim_judge.py``), on the tier's utility model of the configured endpoint."""
    from deep_research_agent.graph import report_judge
    from deep_research_agent.run.usage import UsageMeter
    from deep_research_agent.settings import ResearchConfig

    settings = ResearchConfig.resolve({"configurable": {"claim_judge": "on"}})
    if settings.problems:
        raise SystemExit("; ".join(settings.problems))
    judge = report_judge(settings)
    if judge is None:
        raise SystemExit("the claim judge is off for these settings")
    return judge.for_run(UsageMeter())


@contextmanager
def local_model(size: str) -> Iterator[None]:
    """A llama.cpp server with the Qwen2.5-Coder model of ``size``, the process's settings pointed at it."""
    from bench.local_model import MODELS, build_server, fetch_model, find_server, local_env, start_server
    from testkit.ports import free_port

    chosen = MODELS[size]
    binary = find_server() or build_server()
    model = fetch_model(chosen)
    port = free_port()
    print(f"llama-server {binary}, model {chosen.title} ({model.stat().st_size / 1e6:.0f} MB)", flush=True)
    server = start_server(binary, model, port, chosen.alias)
    saved = dict(os.environ)
    os.environ.update(local_env(f"http://127.0.0.1:{port}/v1", "http://127.0.0.1:9", "127.0.0.1", chosen.alias))
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


@dataclass
class Score:
    flagged: Counter[str]
    unchecked: Counter[str]
    total: Counter[str]
    misses: list[tuple[Case, str]]
    false_flags: list[tuple[Case, str]]
    calls: int = 0
    failures: int = 0
    sent: int = 0
    reports: int = 0
    unreliable: int = 0
    seconds: float = 0.0

    @property
    def unsupported(self) -> int:
        return sum(n for label, n in self.total.items() if label != SUPPORTED)

    @property
    def caught(self) -> int:
        return sum(n for label, n in self.flagged.items() if label != SUPPORTED)

    @property
    def precision(self) -> float:
        flagged = self.caught + self.flagged[SUPPORTED]
        return self.caught / flagged if flagged else 1.0

    @property
    def recall(self) -> float:
        return self.caught / self.unsupported if self.unsupported else 1.0

    @property
    def false_flag_rate(self) -> float:
        return self.flagged[SUPPORTED] / self.total[SUPPORTED] if self.total[SUPPORTED] else 0.0


def score(results: list[tuple[Case, str, str]]) -> Score:
    """``results`` are (case, verdict, detail) triples; a case is flagged when its verdict marks it [unverified]."""
    flagged: Counter[str] = Counter()
    unchecked: Counter[str] = Counter()
    total: Counter[str] = Counter()
    misses, false_flags = [], []
    for case, verdict, detail in results:
        total[case.label] += 1
        is_flagged = ClaimVerdict(verdict).flags
        flagged[case.label] += is_flagged
        unchecked[case.label] += verdict == ClaimVerdict.UNCHECKED
        if case.unsupported and not is_flagged:
            misses.append((case, verdict))
        if not case.unsupported and is_flagged:
            false_flags.append((case, f"{verdict}: {detail}"))
    return Score(flagged, unchecked, total, misses, false_flags)


async def evaluate(
    passages: dict[str, Passage],
    cases: list[Case],
    judge: Callable[[list[Case]], JudgeCall] | None,
    *,
    control: bool = True,
    timeout: float = 120.0,
) -> Score:
    results: list[tuple[Case, str, str]] = []
    calls = failures = sent = reports = unreliable = 0
    started = time.monotonic()
    for passage_id in dict.fromkeys(c.passage for c in cases):
        group = [c for c in cases if c.passage == passage_id]
        check, library = deterministic(passages[passage_id], group)
        if judge is not None and check.judgeable():
            outcome = await run_judge(check, library, judge(group), timeout=timeout, control=control)
            calls += outcome.calls
            failures += len(outcome.failures)
            sent += len(check.judgeable())
            reports += 1
            unreliable += outcome.unreliable
            check = apply_judgements(check, outcome.judgements)
        results += [(case, r.verdict, r.detail) for case, r in zip(group, check.records, strict=True)]
    result = score(results)
    result.calls, result.failures, result.sent = calls, failures, sent
    result.reports, result.unreliable, result.seconds = reports, unreliable, time.monotonic() - started
    return result


def show(title: str, result: Score, *, misses: bool) -> None:
    print(f"\n{title}")
    supported = result.total[SUPPORTED]
    print(
        f"  caught (flagged) {result.caught} of {result.unsupported} unsupported (recall {result.recall:.1%}), "
        f"false flags {result.flagged[SUPPORTED]} of {supported} supported (false-flag rate "
        f"{result.false_flag_rate:.1%}); precision {result.precision:.1%}"
    )
    left = sum(n for label, n in result.unchecked.items() if label != SUPPORTED)
    print(
        f"  left unchecked: {left} of {result.unsupported} unsupported, {result.unchecked[SUPPORTED]} of {supported} supported"
    )
    if result.calls or result.failures:
        total = sum(result.total.values())
        print(
            f"  judge: {result.sent} of {total} claims sent, in {result.calls} calls ({result.seconds:.0f} s), "
            f"{result.failures} failed; unreliable (called its control claim supported) in {result.unreliable} of "
            f"{result.reports} reports"
        )
    kinds = sorted(label for label in result.total if label != SUPPORTED)
    print("  " + ", ".join(f"{kind} {result.flagged[kind]}/{result.total[kind]}" for kind in kinds))
    if misses:
        for case, verdict in result.misses:
            print(f"  missed {case.id} ({case.label}, {verdict}): {case.sentence}")
        for case, why in result.false_flags:
            print(f"  false flag {case.id}: {case.sentence} — {why}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--split", choices=("dev", "held_out", "all"), default="all")
    parser.add_argument("--misses", action="store_true", help="list every missed case and false flag")
    parser.add_argument("--model", action="store_true", help="also judge with the configured tier's utility model")
    parser.add_argument(
        "--local", choices=("0.5b", "1.5b"), help="also judge with this model on a local llama.cpp server"
    )
    parser.add_argument(
        "--control", choices=("on", "off", "both"), default="both", help="the model judge's control claim"
    )
    parser.add_argument("--timeout", type=float, default=None, help="seconds per judge call (120; 900 with --local)")
    args = parser.parse_args(argv)
    passages, cases = load()
    if args.split != "all":
        cases = [c for c in cases if c.split == args.split]
    labels = Counter(c.label for c in cases)
    print(
        f"{len(cases)} cases over {len({c.passage for c in cases})} passages: {labels[SUPPORTED]} supported, "
        f"{len(cases) - labels[SUPPORTED]} unsupported ({args.split})"
    )
    for title, judge_of in (
        ("deterministic (figures, quotes, labels, names, direction; no model)", None),
        ("with the scripted judge (answers each claim it is sent with its label)", scripted_judge),
    ):
        show(title, asyncio.run(evaluate(passages, cases, judge_of)), misses=args.misses)
    modelled = args.model or args.local or os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENROUTER_API_KEY")
    if not modelled:
        return 0
    timeout = args.timeout or (900.0 if args.local else 120.0)
    controls = {"on": [True], "off": [False], "both": [True, False]}[args.control]
    with local_model(args.local) if args.local else nullcontext():
        judge = model_judge()
        name = f"the local {args.local} model" if args.local else "the tier's utility model"
        for control in controls:
            result = asyncio.run(evaluate(passages, cases, lambda _cases: judge, control=control, timeout=timeout))
            show(
                f"with the model judge ({name}), control claim {'on' if control else 'off'}", result, misses=args.misses
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
