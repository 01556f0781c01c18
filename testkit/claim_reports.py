"""Reports whose claims the checks settle in known ways, over the loopback pages of ``testkit/web.py``.

``coverage_report(url)`` cites the Lighthouse of Alexandria page (``ARTICLES["pharos-lighthouse"]``) in
twelve claims: nine the deterministic checks settle as supported (their figures, or their names, are in the
page) and three with nothing to look up (no figure, quote or name), which no judge decides and which are
therefore delivered unchecked: every surface shows ``COVERAGE``. ``VACUOUS`` are two such sentences.
"""

from __future__ import annotations

CHECKED = (
    "The Lighthouse of Alexandria was built between 280 and 247 BC [1].",
    "It stood over 100 metres tall [1].",
    "Its fire was visible from 50 kilometres out at sea [1].",
    "Earthquakes between 956 and 1323 damaged the tower [1].",
    "It was built on Pharos [1].",
    "It was built during the reigns of Ptolemy I and Ptolemy II [1].",
    "The Lighthouse of Alexandria stood on Pharos [1].",
    "The tower stood over 100 metres tall, one of the tallest structures built by hand [1].",
    "Ptolemy II reigned while the lighthouse was built on Pharos [1].",
)
VACUOUS = (
    "The evidence found answers the question [1].",
    "Finding 1 is supported by its source [1].",
)
UNCHECKED = (*VACUOUS, "The tower was admired by travellers [1].")
COVERAGE = "9 of 12 claims checked; 9 supported (citation accuracy 100%)"
VACUOUS_COVERAGE = "0 of 2 claims checked"
TITLE = "The Lighthouse of Alexandria"


def report_of(sentences: tuple[str, ...], url: str) -> str:
    return f"# {TITLE}\n\n{' '.join(sentences)}\n\n## Sources\n[1] {TITLE} — {url}\n"


def coverage_report(url: str) -> str:
    """Twelve claims citing the page at ``url``: nine checked and supported, three unchecked (``COVERAGE``)."""
    return report_of((*CHECKED[:5], UNCHECKED[0], *CHECKED[5:], *UNCHECKED[1:]), url)


def vacuous_report(url: str) -> str:
    """Two claims citing the page at ``url`` with nothing in them to check (``VACUOUS_COVERAGE``)."""
    return report_of(VACUOUS, url)
