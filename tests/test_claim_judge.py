"""The claim judge: which claims it gets, the prompt, reading its answer, and every way it can fail."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from langchain_core.messages import AIMessage

from deep_research_agent import graph
from deep_research_agent.domain.knobs import KnobError
from deep_research_agent.domain.names import ClaimVerdict
from deep_research_agent.evidence.store import EvidenceStore
from deep_research_agent.evidence.text import EvidenceLibrary
from deep_research_agent.lifecycle.claim_judge import ModelClaimJudge, claim_judge, judge_timeout
from deep_research_agent.report.citations import check_citations
from deep_research_agent.report.claims import ClaimCheck, check_claims
from deep_research_agent.report.judge import (
    CONTROL,
    PASSAGES_PER_SOURCE,
    Judgement,
    JudgeReplyError,
    apply_judgements,
    judge_batches,
    judgement_key,
    parse_reply,
    run_judge,
    unfounded_claims,
)
from deep_research_agent.report.judge_guard import CONTROL_CLAIMS
from deep_research_agent.report.vetting import finalise, vet_report, with_judgements
from deep_research_agent.run import UsageMeter
from deep_research_agent.settings import ResearchConfig
from testkit.recording_model import RecordingChatModel, factory

from .test_claims import EVIDENCE, PHAROS, PHAROS_TEXT, report

pytestmark = pytest.mark.anyio

BODY = (
    "It stood over 100 metres tall [1]. It was built on Pharos [1]. Fires destroyed the tower [1]. "
    "It was one of the Seven Wonders [1]."
)


def checked(body: str = BODY) -> tuple[ClaimCheck, EvidenceLibrary]:
    markdown = report(body)
    library = EvidenceLibrary(EVIDENCE)
    return check_claims(markdown, check_citations(markdown, library, []), library), library


# A reason about the claims of BODY, as a judge that read their passages gives it.
REASON = "the passage says it was built on Pharos and was one of the Seven Wonders"


def answer(*verdicts: tuple[str, str, str], reason: str = REASON) -> str:
    return json.dumps(
        {"verdicts": [{"claim": c, "verdict": v, "passage": p, "reason": reason} for c, v, p in verdicts]}
    )


# --- what is judged, and the prompt --------------------------------------------------------------


def test_claims_no_check_settles_are_judged_each_with_its_passages() -> None:
    check, library = checked()
    [batch] = judge_batches(check, library, control=False)
    assert [item.claim for item in batch.items] == [
        "It was built on Pharos.",
        "Fires destroyed the tower.",
        "It was one of the Seven Wonders.",
    ]
    assert [item.id for item in batch.items] == ["C1", "C2", "C3"]
    assert all(p.index == 1 and p.text in PHAROS_TEXT for p in batch.passages)
    assert [len(item.passages) for item in batch.items] == [PASSAGES_PER_SOURCE] * 3
    assert len({p.id for p in batch.passages}) == len(batch.passages), "a passage shared by claims is listed once"
    user = batch.user
    assert user.startswith("Passages:\nP1 (source [1]): ") and "\nClaims:\nC1 (cites [1]; its passages: " in user
    assert "JSON only" in batch.system and '"not_supported"' in batch.system


def test_claims_are_judged_in_batches() -> None:
    body = " ".join(f"It was one of the Seven Wonders, note {n} [1]." for n in "abcdefg")
    check, library = checked(body)
    assert [len(b.items) for b in judge_batches(check, library, batch_claims=3, control=False)] == [3, 3, 1]
    planted = judge_batches(check, library, batch_claims=3)
    assert [(len(b.items), len(b.claims)) for b in planted] == [(4, 3), (4, 3), (2, 1)], "one control claim a batch"


# --- reading the answer --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(answer(("C1", "supported", "P1"), ("C2", "not_supported", "P2")), id="plain"),
        pytest.param(
            "<think>hmm</think>Here you go:\n```json\n"
            + answer(("C1", "Supported", "P1"), ("C2", "not supported", "P2"))
            + "\n```",
            id="think-and-fence",
        ),
        pytest.param(
            json.dumps(
                [{"id": 1, "label": "entailed", "passage": 1}, {"id": "2", "verdict": "unsupported", "passage": "p2"}]
            ),
            id="bare-list-and-synonyms",
        ),
        pytest.param(
            json.dumps({"C1": "supported", "C2": {"verdict": "not-supported", "passage": "P2"}}), id="mapping"
        ),
    ],
)
def test_the_answer_is_read_in_the_shapes_a_model_gives(reply: str) -> None:
    check, library = checked()
    [batch] = judge_batches(check, library, control=False)
    found = parse_reply(reply, batch)
    first, second = batch.items[0], batch.items[1]
    assert found[first.position].verdict == "supported"
    assert found[second.position].verdict == "not_supported"
    assert found[second.position].sentence == batch.passages[1].text and found[second.position].index == 1


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param("I think they are all fine.", id="prose"),
        pytest.param('{"verdicts": [{"claim": "C9", "verdict": "supported"}]}', id="unknown-claim"),
        pytest.param('{"verdicts": [{"claim": "C1", "verdict": "maybe"}]}', id="unknown-verdict"),
        pytest.param("", id="empty"),
    ],
)
def test_an_answer_with_no_usable_verdict_is_an_error(reply: str) -> None:
    check, library = checked()
    [batch] = judge_batches(check, library)
    with pytest.raises(JudgeReplyError):
        parse_reply(reply, batch)


# --- running it, and its failures ----------------------------------------------------------------


class Judge:
    """A scripted judge: answers each call with the next reply (an Exception is raised; a float sleeps)."""

    def __init__(self, *replies: object) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[str, str]] = []

    async def __call__(self, system: str, user: str) -> str:
        self.calls.append((system, user))
        reply = self.replies[min(len(self.calls), len(self.replies)) - 1]
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, float):
            await asyncio.sleep(reply)
            return ""
        return str(reply)


async def test_the_judge_s_verdicts_replace_the_deterministic_ones_with_the_deciding_sentence() -> None:
    check, library = checked()
    judge = Judge(answer(("C1", "supported", "P1"), ("C2", "contradicted", "P3"), ("C3", "supported", "P2")))
    outcome = await run_judge(check, library, judge, timeout=5, control=False)
    assert outcome.failures == [] and outcome.calls == 1 and len(judge.calls) == 1
    judged = apply_judgements(check, outcome.judgements)
    records = judged.records
    assert [(r.verdict, r.decided_by) for r in records] == [
        ("supported", "figures_and_quotes"),
        ("supported", "judged"),
        ("contradicted", "judged"),
        ("supported", "judged"),
    ]
    [source] = records[2].sources
    assert source.deciding and source.sentence and source.sentence in PHAROS_TEXT
    assert records[2].detail == REASON
    summary = judged.summary
    assert (summary.judged, summary.contradicted, summary.citation_accuracy) == (3, 1, 0.75)
    [problem] = judged.problems()
    assert problem.startswith("“Fires destroyed the tower [1].”: judged against its cited text, which contradicts it")
    assert f"[1] says: “{source.sentence}”" in problem


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        pytest.param(RuntimeError("provider down"), "RuntimeError: provider down", id="exception"),
        pytest.param(1.0, "no answer within 0.05 s", id="timeout"),
        pytest.param("<html>502 Bad Gateway</html>", "unparseable answer", id="garbage"),
    ],
)
async def test_a_failing_judge_leaves_the_deterministic_verdicts_and_says_why(reply: object, said: str) -> None:
    check, library = checked()
    outcome = await run_judge(check, library, Judge(reply), timeout=0.05)
    assert outcome.judgements == {}
    [failure] = outcome.failures
    assert failure.startswith("3 claims: ") and said in failure
    assert apply_judgements(check, outcome.judgements).records == check.records


async def test_claims_the_judge_does_not_answer_keep_their_verdict_and_are_reported() -> None:
    check, library = checked()
    outcome = await run_judge(check, library, Judge(answer(("C2", "not_supported", "P1"))), timeout=5, control=False)
    assert outcome.failures == ["2 of 3 claims: not answered"]
    verdicts = [r.verdict for r in apply_judgements(check, outcome.judgements).records]
    assert verdicts == ["supported", "supported", "not_supported", "supported"]


async def test_claims_judged_before_are_not_judged_again() -> None:
    check, library = checked()
    keys = [judgement_key(c) for c in check.judgeable()]
    known = {keys[0]: Judgement("supported"), keys[1]: Judgement("not_supported"), "gone": Judgement("supported")}
    judge = Judge(answer(("C1", "supported", "P1")))
    outcome = await run_judge(check, library, judge, timeout=5, known=known, control=False)
    assert len(judge.calls) == 1 and judge.calls[0][1].split("Claims:")[1].count("\nC") == 1, (
        "only the claim not judged before is sent"
    )
    assert set(outcome.judgements) == set(keys)
    again = await run_judge(check, library, Judge(RuntimeError("never called")), timeout=5, known=outcome.judgements)
    assert again.judgements == outcome.judgements and again.calls == 0


# --- a judge that cannot rubber-stamp ------------------------------------------------------------


def rubber_stamp(system: str, user: str) -> str:
    """Every claim of the prompt supported, each on its first passage, with a reason made of its own words."""
    claims = re.findall(r"^(C\d+) \(cites [^;]*; its passages: (P\d+)[^)]*\): (.*)$", user, re.M)
    return json.dumps(
        {"verdicts": [{"claim": c, "verdict": "supported", "passage": p, "reason": t} for c, p, t in claims]}
    )


async def test_every_batch_holds_one_control_claim_among_the_claims_with_a_passage_of_its_own() -> None:
    check, library = checked()
    [batch] = judge_batches(check, library)
    [planted] = [item for item in batch.items if item.position == CONTROL]
    pair = next(pair for pair in CONTROL_CLAIMS if pair.claim == planted.claim)
    [passage] = planted.passages
    assert passage.text == pair.passage and passage.index not in {n for item in batch.claims for n in item.indexes}
    assert f"{planted.id} (cites [{passage.index}]; its passages: {passage.id}): {pair.claim}" in batch.user
    assert len(batch.claims) == 3 and all(pair.claim not in item.claim for item in batch.claims)
    placed = {
        next(i for i, item in enumerate(b.items) if item.position == CONTROL)
        for body in (BODY, BODY.replace("Fires", "Floods"), BODY.replace("tower", "light"), "It was admired [1].")
        for b in judge_batches(*checked(body))
    }
    assert len(placed) > 1, "the control claim is not always in the same place"


async def test_a_judge_that_calls_the_control_claim_supported_is_unreliable_and_none_of_its_verdicts_is_used() -> None:
    check, library = checked()
    known = {judgement_key(check.judgeable()[0]): Judgement(ClaimVerdict.SUPPORTED, REASON, 1, None, "x")}

    async def judge(system: str, user: str) -> str:
        return rubber_stamp(system, user)

    outcome = await run_judge(check, library, judge, timeout=5, known=known)
    assert outcome.unreliable and outcome.judgements == {} and outcome.calls == 1
    records = apply_judgements(check, outcome.judgements).records
    assert [r.verdict for r in records] == ["supported", "supported", "unchecked", "supported"]
    assert "judged" not in {r.decided_by for r in records}


async def test_a_judge_that_calls_the_control_claim_false_is_used() -> None:
    check, library = checked()

    async def judge(system: str, user: str) -> str:
        [planted] = [item for item in judge_batches(check, library)[0].items if item.position == CONTROL]
        verdicts = json.loads(rubber_stamp(system, user))["verdicts"]
        for verdict in verdicts:
            if verdict["claim"] == planted.id:
                verdict.update(verdict="contradicted", reason="the passage says the opposite")
        return json.dumps({"verdicts": verdicts})

    outcome = await run_judge(check, library, judge, timeout=5)
    assert not outcome.unreliable and outcome.failures == []
    assert {j.verdict for j in outcome.judgements.values()} == {"supported", "unchecked"}, (
        "“Fires destroyed the tower.” shares nothing with the passage it was called supported on"
    )


async def test_a_judge_that_leaves_the_control_claim_unanswered_has_that_batch_s_verdicts_ignored() -> None:
    check, library = checked()
    outcome = await run_judge(check, library, Judge(answer(("C1", "supported", "P1"))), timeout=5)
    assert outcome.judgements == {} and not outcome.unreliable
    assert outcome.failures == [
        "3 claims: the control claim was not answered, so none of this batch's verdicts was used"
    ]


@pytest.mark.parametrize(
    ("passage", "reason", "why"),
    [
        pytest.param("P3", REASON, "a passage that does not share its content", id="a-passage-about-something-else"),
        pytest.param(None, REASON, "named no passage", id="no-passage"),
        pytest.param("P1", "...", "without a reason about it", id="dots"),
        pytest.param("P1", "The passage supports the claim.", "without a reason about it", id="boilerplate"),
        pytest.param("P1", "", "without a reason about it", id="empty"),
    ],
)
async def test_a_supported_verdict_that_names_no_passage_sharing_the_claim_or_no_reason_is_downgraded_to_unchecked(
    passage: str | None, reason: str, why: str
) -> None:
    check, library = checked("It was built on Pharos [1].")
    entry = {"claim": "C1", "verdict": "supported", "reason": reason} | ({"passage": passage} if passage else {})
    outcome = await run_judge(check, library, Judge(json.dumps({"verdicts": [entry]})), timeout=5, control=False)
    judged = apply_judgements(check, outcome.judgements)
    [record] = judged.records
    assert (record.verdict, record.decided_by) == ("unchecked", "not_checked") and why in record.detail
    assert not any(source.deciding for source in record.sources)
    assert outcome.unfounded == ["It was built on Pharos."]
    assert unfounded_claims(judged, outcome.judgements) == [record.claim]
    assert judged.summary.coverage == "0 of 1 claim checked"


async def test_a_supported_verdict_on_the_passage_that_states_the_claim_holds() -> None:
    check, library = checked("It was built on Pharos [1].")
    reply = answer(("C1", "supported", "P1"), reason="P1: built on the island of Pharos")
    outcome = await run_judge(check, library, Judge(reply), timeout=5, control=False)
    [record] = apply_judgements(check, outcome.judgements).records
    assert (record.verdict, record.decided_by, outcome.unfounded) == ("supported", "judged", [])
    assert record.sources[0].deciding and "island of Pharos" in record.sources[0].sentence


def test_judgements_survive_the_delivery_s_renumbering() -> None:
    evidence = EvidenceStore()
    evidence.add_evidence(url=PHAROS, title="Pharos", kind="page", text=PHAROS_TEXT, agent="research-subagent")
    gone = "https://gone.example/x"
    draft = (
        f"# P\n\nFires destroyed the tower [2]. It was a wonder [9].\n\n## Sources\n[2] P — {PHAROS}\n[9] G — {gone}\n"
    )
    vetted = vet_report(draft, evidence)
    [fires] = [c for c in vetted.claims.judgeable() if "Fires" in c.claim.text]
    vetted = with_judgements(vetted, {judgement_key(fires): Judgement("contradicted", "earthquakes", 2, None, "x")})
    assert any("judged against its cited text" in p for p in vetted.problems)
    delivered = finalise(vetted, evidence)
    assert "Fires destroyed the tower [1] [unverified]." in delivered
    [record] = [r for r in evidence.claims if "Fires" in r.claim]
    assert (record.verdict, record.decided_by, record.indexes) == ("contradicted", "judged", [1])


# --- the model call ------------------------------------------------------------------------------


def settings(**configurable: object) -> ResearchConfig:
    return ResearchConfig.resolve({"configurable": {"apiKeys": {"OPENAI_API_KEY": "k"}, **configurable}}, environ={})


@pytest.mark.parametrize(
    ("value", "on", "warned"),
    [
        pytest.param(None, True, False, id="auto-by-default-and-every-tier-has-a-utility-model"),
        pytest.param("on", True, False, id="on"),
        pytest.param("off", False, False, id="off"),
        pytest.param("false", False, False, id="boolean-spelling"),
        pytest.param("sometimes", True, True, id="unknown-warns-and-is-auto"),
    ],
)
def test_the_claim_judge_setting(value: str | None, on: bool, warned: bool) -> None:
    resolved = settings(**({"claim_judge": value} if value else {}))
    assert resolved.judges_claims is on and (graph.report_judge(resolved) is not None) is on
    assert any("claim_judge" in w for w in resolved.warnings) is warned
    assert ResearchConfig.resolve({}, environ={"DRA_CLAIM_JUDGE": "off"}).judges_claims is False


async def test_the_model_call_uses_the_utility_slot_as_claim_judge_and_meters_every_reply() -> None:
    model = RecordingChatModel(replies=[AIMessage(content='{"verdicts": []}', usage_metadata=None)])
    asked: list[tuple[str, str]] = []
    metered: list[tuple[UsageMeter, AIMessage]] = []

    def make(slot: str, role: str) -> RecordingChatModel:
        asked.append((slot, role))
        return model

    judge = ModelClaimJudge(model_factory=make, on_model_response=lambda usage, reply: metered.append((usage, reply)))
    usage = UsageMeter()
    assert await judge.for_run(usage)("system words", "user words") == '{"verdicts": []}'
    assert asked == [("utility", "claim-judge")] and [meter for meter, _ in metered] == [usage]
    [call] = model.calls
    assert [m.type for m in call.messages] == ["system", "human"] and "nostream" in call.tags
    assert judge_timeout(30) == 30 and judge_timeout(settings().request_timeout) == 90 and judge_timeout(0) == 90


def test_the_judge_is_built_only_when_enabled_and_its_timeout_refuses_a_negative_request_timeout() -> None:
    utility = settings().tier.utility
    assert claim_judge(enabled=False, utility=utility, model_factory=factory(RecordingChatModel())) is None
    assert isinstance(
        claim_judge(enabled=True, utility=utility, model_factory=factory(RecordingChatModel())), ModelClaimJudge
    )
    with pytest.raises(KnobError, match="judge_timeout: request_timeout must be a finite number of 0 or more"):
        judge_timeout(-1.0)


async def test_the_model_call_raises_what_the_model_raises() -> None:
    judge = ModelClaimJudge(model_factory=factory(RecordingChatModel(replies=[RuntimeError("429")])))
    with pytest.raises(RuntimeError, match="429"):
        await judge.for_run(UsageMeter())("s", "u")


def test_a_judge_without_a_model_factory_is_refused() -> None:
    with pytest.raises(KnobError, match="model_factory"):
        ModelClaimJudge(model_factory=None)  # type: ignore[arg-type]
