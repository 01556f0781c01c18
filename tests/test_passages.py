"""The passages the claim judge reads for a claim (``report/passages.py``): chosen by its figures, names and
words together, never a page's header lines, open to one more signal (meaning), and measured on the
labelled claims (``bench/judge_passages.py``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pytest

from bench.claim_labels import load
from bench.judge_passages import GOAL, by_facts, by_facts_and_meaning, measure, shapes, words_only
from deep_research_agent.embeddings import EmbeddingFailed
from deep_research_agent.embeddings.bundled import BundledEmbedder
from deep_research_agent.evidence.text import EvidenceLibrary, EvidenceText, Span, content_words
from deep_research_agent.report.citations import check_citations
from deep_research_agent.report.claims import check_claims
from deep_research_agent.report.judge import PASSAGES_PER_SOURCE, judge_batches
from deep_research_agent.report.judge_guard import GROUNDING
from deep_research_agent.report.passages import (
    SIGNALS,
    ClaimFacts,
    MeaningSignal,
    choose_passages,
    shared_content,
    stems,
    with_meaning,
)

URL = "https://example.org/pharos"
PAGE = (
    "Title: The Lighthouse of Alexandria\n\n"
    "The Lighthouse of Alexandria was built on the island of Pharos between 280 and 247 BC. "
    "Travellers described a tower in three stages. "
    "It stood over 100 metres tall, one of the tallest structures built by hand. "
    "Its fire could be seen from far out at sea. "
    "Earthquakes between 956 and 1323 damaged it until it fell into ruin."
)


def facts_and_text(sentence: str, page: str = PAGE) -> tuple[ClaimFacts, EvidenceText]:
    """The claim ``sentence`` (citing the page) as the checks read it, and the page as the run stored it."""
    markdown = f"# Report\n\n{sentence} [1].\n\n## Sources\n[1] The Lighthouse of Alexandria — {URL}\n"
    library = EvidenceLibrary(
        [{"id": "ev-1", "url": URL, "title": "The Lighthouse of Alexandria", "kind": "page", "text": page}]
    )
    [checked] = check_claims(markdown, check_citations(markdown, library, []), library).checked
    return ClaimFacts.of(checked.claim), library.for_source(URL)[0]


def shown(sentence: str, count: int = 3, **kwargs: object) -> list[str]:
    facts, text = facts_and_text(sentence)
    return [text.sentence(span) for span in choose_passages(facts, text, count=count, **kwargs)]  # type: ignore[arg-type]


def test_a_claim_s_figures_pick_the_body_sentence_that_holds_them_never_the_title_line() -> None:
    passages = shown("The Pharos tower dates from 280 to 247 BC")

    assert passages[0].startswith("The Lighthouse of Alexandria was built on the island of Pharos between 280")
    assert not any(p.startswith("Title:") for p in passages)


def test_a_sentence_holding_the_claim_s_figure_outranks_one_that_shares_only_its_words() -> None:
    # "fire", "seen", "sea" share words with the fourth sentence; the figure is in the third.
    passages = shown("Its fire could be seen from the top, which stood over 100 metres tall", count=1)

    assert passages == ["It stood over 100 metres tall, one of the tallest structures built by hand."]


def test_a_wrong_figure_is_shown_the_sentence_that_gives_the_same_measure() -> None:
    passages = shown("Earthquakes between 1056 and 1423 damaged it")

    assert passages[0].startswith("Earthquakes between 956 and 1323")


def test_a_claim_none_of_whose_facts_is_in_the_text_gets_its_first_body_sentences() -> None:
    passages = shown("Zebras graze quietly", count=2)

    assert passages == [
        "The Lighthouse of Alexandria was built on the island of Pharos between 280 and 247 BC.",
        "Travellers described a tower in three stages.",
    ]


class EverySecondSentence:
    """A stand-in for a signal that reads meaning: it proposes the page's second body sentence and scores it
    above anything the words give."""

    def propose(self, facts: ClaimFacts, text: EvidenceText) -> Iterable[Span]:
        yield text.sentence_span(text.text.index("Travellers"))

    def score(self, facts: ClaimFacts, text: EvidenceText, span: Span) -> float:
        return 100.0 if text.text[span[0] :].startswith("Travellers") else 0.0


def test_one_more_signal_is_passed_in_and_its_score_adds_to_the_others() -> None:
    from deep_research_agent.report.passages import SIGNALS

    passages = shown("Its fire could be seen from far out at sea", count=2, signals=(*SIGNALS, EverySecondSentence()))

    assert passages == ["Travellers described a tower in three stages.", "Its fire could be seen from far out at sea."]


def test_shared_content_is_the_share_of_the_claim_s_figures_names_and_words_a_passage_holds() -> None:
    facts, _ = facts_and_text("It stood over 100 metres tall on Pharos")

    assert shared_content(facts, "It stood over 100 metres tall, on the island of Pharos.") == 1.0
    assert shared_content(facts, "Travellers described a tower in three stages.") == 0.0
    assert 0 < shared_content(facts, "It stood tall.") < GROUNDING


@pytest.fixture(scope="module")
def labelled():
    passages, cases = load()
    return shapes(passages, cases)


@pytest.mark.parametrize("shape", ["one page per passage", "long page (all passages of an origin)"])
def test_the_deciding_passage_is_shown_for_the_labelled_claims_that_have_one(labelled, shape: str) -> None:
    now, _ = measure(labelled[shape], by_facts, None)
    before, _ = measure(labelled[shape], words_only, None)

    assert now.total >= 200
    assert now.rate() >= GOAL and now.rate(judged=True) >= GOAL
    assert now.included >= before.included


def test_no_correct_claim_judged_supported_on_its_deciding_passage_is_downgraded(labelled) -> None:
    _, grounding = measure(labelled["one page per passage"], by_facts, None)

    assert len(grounding) >= 90 and min(grounding) >= GROUNDING


HARBOUR = (
    "Title: Harbour notes\n\n"
    "The harbour master said the ferry timetable changes every spring. "
    "Visitors praised the new fish market beside the pier. "
    "Volunteers repainted the pier railings last summer. "
    "Gales regularly keep the fishing fleet tied up in port for days. "
    "The lighthouse keeper retired after forty years of service."
)
PARAPHRASE = "Bad weather often stops the harbour's boats from going out to sea"
DECIDING = "Gales regularly keep the fishing fleet tied up in port for days."


class FailingEmbedder:
    identity = "failing/3"

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        raise EmbeddingFailed("the embedding endpoint answered 503")

    def embed_query(self, text: str) -> np.ndarray:
        raise EmbeddingFailed("the embedding endpoint answered 503")


@pytest.fixture(scope="module")
def bundled() -> BundledEmbedder:
    return BundledEmbedder()


def test_a_paraphrased_claim_s_deciding_sentence_is_chosen_only_by_meaning(bundled: BundledEmbedder) -> None:
    facts, text = facts_and_text(PARAPHRASE, HARBOUR)
    deciding = text.sentence_span(text.text.find(DECIDING))

    by_words = choose_passages(facts, text, count=PASSAGES_PER_SOURCE)
    by_meaning = choose_passages(facts, text, count=PASSAGES_PER_SOURCE, signals=with_meaning(bundled))

    assert not facts.word_stems & stems(content_words(DECIDING)), "the claim shares no word with its source"
    assert deciding not in by_words
    assert deciding in by_meaning
    assert MeaningSignal(bundled).score(facts, text, deciding) > 0


def test_meaning_adds_to_the_figures_a_claim_s_figure_still_picks_its_sentence(bundled: BundledEmbedder) -> None:
    passages = shown("The tower was more than 100 metres high", count=1, signals=with_meaning(bundled))

    assert passages == ["It stood over 100 metres tall, one of the tallest structures built by hand."]


def test_an_embedder_that_fails_leaves_the_choice_to_the_other_signals(caplog: pytest.LogCaptureFixture) -> None:
    facts, text = facts_and_text(PARAPHRASE, HARBOUR)
    signals = with_meaning(FailingEmbedder())

    chosen = choose_passages(facts, text, count=PASSAGES_PER_SOURCE, signals=signals)

    assert chosen == choose_passages(facts, text, count=PASSAGES_PER_SOURCE)
    meaning = signals[-1]
    assert isinstance(meaning, MeaningSignal) and "503" in meaning.failure
    assert "chosen without meaning" in caplog.text
    assert with_meaning(None) == SIGNALS


def test_the_judge_is_shown_the_sentence_a_paraphrase_restates_when_it_reads_meaning(bundled: BundledEmbedder) -> None:
    markdown = f"# Report\n\n{PARAPHRASE} [1].\n\n## Sources\n[1] Harbour notes — {URL}\n"
    library = EvidenceLibrary([{"id": "ev-1", "url": URL, "title": "Harbour notes", "kind": "page", "text": HARBOUR}])
    check = check_claims(markdown, check_citations(markdown, library, []), library)

    plain = judge_batches(check, library, control=False)
    meaning = judge_batches(check, library, control=False, signals=with_meaning(bundled))

    assert DECIDING not in plain[0].user
    assert DECIDING in meaning[0].user


def test_meaning_shows_the_deciding_passage_at_least_as_often_on_the_labelled_claims(
    labelled, bundled: BundledEmbedder
) -> None:
    for pages in labelled.values():
        with_it, _ = measure(pages, by_facts_and_meaning(bundled), None)
        without, _ = measure(pages, by_facts, None)

        assert with_it.rate() >= GOAL and with_it.included >= without.included


class CountingEmbedder:
    """Every text the same unit vector; counts the texts it was given."""

    identity = "counting/2"

    def __init__(self) -> None:
        self.texts = 0

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += len(texts)
        return np.tile(np.array([1.0, 0.0], dtype=np.float32), (len(texts), 1))

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


def test_one_judging_pass_embeds_at_most_its_budget_of_sentences_and_reuses_each_text_s(
    caplog: pytest.LogCaptureFixture,
) -> None:
    embedder = CountingEmbedder()
    meaning = MeaningSignal(embedder, budget=3)
    facts, harbour = facts_and_text(PARAPHRASE, HARBOUR)
    _, pharos = facts_and_text(PARAPHRASE)

    first = choose_passages(facts, harbour, count=3, signals=(*SIGNALS, meaning))
    again = choose_passages(facts, harbour, count=3, signals=(*SIGNALS, meaning))
    beyond = choose_passages(facts, pharos, count=3, signals=(*SIGNALS, meaning))

    assert first == again
    assert embedder.texts == 3 + 1, "three sentences of the first text and the claim, each once"
    assert beyond == choose_passages(facts, pharos, count=3), "past the budget the other signals choose"
    assert meaning.unread == 1 and "chosen without it" in caplog.text
