"""What a run has seen and can cite: sources, retrieved texts, handed-over findings, delivered citations.

Contract: written only through ``EvidenceStore``'s methods, under its lock; readers get copies.
- ``add_source`` records each URL once (normalised), in first-seen order, numbered from 1; a URL of a work
  already recorded (the same DOI, arXiv id, or title and first author: ``domain/works.py``, from the URL, a
  scholarly search's ``Paper`` or a page's citation metadata) joins that source's ``urls`` instead of
  becoming a source of its own, and the checks read the texts of all its URLs as one source (``library``);
- ``add_evidence`` keeps every retrieved text whole (a page, a search result, a corpus passage), once per URL
  and content; a corpus passage also carries where it lives (``CorpusLocation``); ``adopt`` takes in a
  text an earlier run of the run's task retrieved, with its original retrieval time, so it can be cited
  without being fetched again; ``own_records`` leaves the adopted ones out;
- a sub-agent's findings are parsed once: whoever ends the sub-agent (its findings gate, or a guard's
  hand-back) stages the parsed object under its ``task`` call id, and the hand-over takes it from there
  (``take_staged``) and records what the orchestrator received (``add_handover``);
- ``deliver_citations`` keeps the delivered report's per-source citations, its claims and the summaries
  of what vetting did;
- ``library()`` is the retrieved texts prepared for checks (``report/evidence_text.py``); each text is
  prepared once per run and kept until the run's stores are closed. Preparing is derived work outside the
  lock: two threads preparing one text at once build the same thing.
- a unit handed over again (its ``task`` re-run after the run resumed in another process) replaces its
  earlier hand-over, so no unit counts twice;
- ``snapshot``/``restore`` carry everything above but the staged findings through the run's ledger
  (``ledger.py``) to the process that resumes the run.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, replace
from typing import Any

from ..domain.claims import CitationRecord, CitationSummary, ClaimRecord, ClaimSummary
from ..domain.clock import utc_now_iso
from ..domain.findings import Findings
from ..domain.search import Paper
from ..domain.urls import domain_of, normalise_url
from ..domain.works import CitationMetadata, work_keys
from .text import EvidenceLibrary, EvidenceText


@dataclass(frozen=True)
class SourceRecord:
    index: int
    url: str
    title: str
    domain: str
    # A scholarly search's metadata of the paper at ``url``, for its Sources line.
    paper: Paper | None = None
    # Every URL the work was reached at, ``url`` first, and the keys that make them one work (``domain/works.py``).
    urls: tuple[str, ...] = ()
    work: tuple[str, ...] = ()


@dataclass(frozen=True)
class CorpusLocation:
    """Where a corpus passage lives: the corpus, the file (relative to the corpus directory), the anchor or
    PDF page, and the SHA-256 of the file it was indexed from."""

    corpus: str
    path: str
    anchor: str | None
    page: int | None
    file_sha256: str


@dataclass(frozen=True)
class EvidenceRecord:
    """Text the run actually retrieved, kept whole for citation checks."""

    id: str
    url: str
    title: str
    kind: str
    retrieved_at: str
    agent: str
    sha256: str
    text: str
    location: CorpusLocation | None = None
    # The search backend that found a search result or paper (``domain.search.SearchBackendName``).
    backend: str = ""


@dataclass(frozen=True)
class HandOver:
    """One research unit's findings as the orchestrator received them."""

    task_id: str
    unit: str
    findings: Findings


class EvidenceStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sources: OrderedDict[str, SourceRecord] = OrderedDict()
        self._evidence: list[EvidenceRecord] = []
        self._staged: dict[str, Findings] = {}
        self._handovers: list[HandOver] = []
        self._citations: list[CitationRecord] = []
        self._citation_summary: CitationSummary | None = None
        self._claims: list[ClaimRecord] = []
        self._claim_summary: ClaimSummary | None = None
        self._prepared: dict[str, EvidenceText] = {}
        self._adopted: set[str] = set()
        # Another URL of a recorded work -> the key of its source; a work key -> the key of its source.
        self._aliases: dict[str, str] = {}
        self._works: dict[str, str] = {}

    def add_source(
        self, url: str, title: str = "", *, paper: Paper | None = None, work: CitationMetadata | None = None
    ) -> SourceRecord | None:
        """Record a URL; returns the new record, or None when the run has seen it already or it is another URL of
        a work already recorded (a paper's metadata is still added to a source seen without it)."""
        key = normalise_url(url)
        keys = _work_keys_of(url, title, paper, work)
        with self._lock:
            key = self._aliases.get(key, key)
            existing = self._sources.get(key)
            if existing is None:
                primary = next((self._works[k] for k in sorted(keys) if k in self._works), None)
                if primary is not None:
                    existing = self._sources[primary]
                    self._aliases[key] = primary
                    key = primary
                    if url not in existing.urls:
                        existing = replace(existing, urls=(*existing.urls, url))
            if existing is not None:
                if title and not existing.title:
                    existing = replace(existing, title=title)
                if paper is not None and existing.paper is None:
                    existing = replace(existing, paper=paper)
                existing = replace(existing, work=tuple(sorted({*existing.work, *keys})))
                self._sources[key] = existing
                self._works.update({k: key for k in keys})
                return None
            record = SourceRecord(
                index=len(self._sources) + 1,
                url=url,
                title=title or domain_of(url),
                domain=domain_of(url),
                paper=paper,
                urls=(url,),
                work=tuple(sorted(keys)),
            )
            self._sources[key] = record
            self._works.update({k: key for k in keys})
            return record

    def source(self, url: str) -> SourceRecord | None:
        with self._lock:
            key = normalise_url(url)
            return self._sources.get(self._aliases.get(key, key))

    def aliases(self) -> dict[str, str]:
        """Each other URL of a recorded work (normalised) -> the URL of its source (normalised)."""
        with self._lock:
            return dict(self._aliases)

    def sources(self) -> list[SourceRecord]:
        with self._lock:
            return list(self._sources.values())

    def add_evidence(
        self,
        *,
        url: str,
        title: str,
        kind: str,
        text: str,
        agent: str,
        location: CorpusLocation | None = None,
        backend: str = "",
    ) -> EvidenceRecord:
        return self._add(
            url=url,
            title=title,
            kind=kind,
            text=text,
            agent=agent,
            location=location,
            retrieved_at=utc_now_iso(),
            adopted=False,
            backend=backend,
        )

    def adopt(self, record: EvidenceRecord) -> EvidenceRecord:
        """A text an earlier run of the task retrieved, kept with the time it was retrieved."""
        return self._add(
            url=record.url, title=record.title, kind=record.kind, text=record.text, agent=record.agent,
            location=record.location, retrieved_at=record.retrieved_at, adopted=True, backend=record.backend,
        )  # fmt: skip

    def _add(
        self,
        *,
        url: str,
        title: str,
        kind: str,
        text: str,
        agent: str,
        location: CorpusLocation | None,
        retrieved_at: str,
        adopted: bool,
        backend: str = "",
    ) -> EvidenceRecord:
        digest = hashlib.sha256(text.encode()).hexdigest()
        with self._lock:
            for record in self._evidence:
                if record.url == url and record.sha256 == digest:
                    if not adopted:
                        self._adopted.discard(record.id)
                    return record
            record = EvidenceRecord(
                id=f"ev{len(self._evidence) + 1}",
                url=url,
                title=title,
                kind=kind,
                retrieved_at=retrieved_at,
                agent=agent,
                sha256=digest,
                text=text,
                location=location,
                backend=backend,
            )
            self._evidence.append(record)
            if adopted:
                self._adopted.add(record.id)
            return record

    def records(self) -> list[EvidenceRecord]:
        with self._lock:
            return list(self._evidence)

    def own_records(self) -> list[EvidenceRecord]:
        """The texts this run retrieved itself (a re-read of an adopted text counts as this run's)."""
        with self._lock:
            return [record for record in self._evidence if record.id not in self._adopted]

    def library(self) -> EvidenceLibrary:
        """Every retrieved text, prepared for the citation and claim checks (once per run per text)."""
        return EvidenceLibrary(self.records(), cache=self._prepared, aliases=self.aliases())

    def stage_findings(self, task_id: str, findings: Findings) -> None:
        """The parsed findings a sub-agent ends with, for its hand-over to take."""
        with self._lock:
            self._staged[task_id] = findings

    def take_staged(self, task_id: str) -> Findings | None:
        with self._lock:
            return self._staged.pop(task_id, None)

    def staged_for(self, task_id: str) -> Findings | None:
        with self._lock:
            return self._staged.get(task_id)

    def staged(self) -> list[Findings]:
        """The findings staged by sub-agents whose hand-over has not taken them yet (a unit in flight)."""
        with self._lock:
            return list(self._staged.values())

    def add_handover(self, handover: HandOver) -> None:
        with self._lock:
            self._handovers = [h for h in self._handovers if h.task_id != handover.task_id or not h.task_id]
            self._handovers.append(handover)

    def handovers(self) -> list[HandOver]:
        with self._lock:
            return list(self._handovers)

    def all_findings(self) -> list[Findings]:
        return [handover.findings for handover in self.handovers()]

    def deliver_citations(
        self,
        citations: list[CitationRecord],
        summary: CitationSummary,
        *,
        claims: list[ClaimRecord],
        claim_summary: ClaimSummary,
    ) -> None:
        with self._lock:
            self._citations, self._citation_summary = list(citations), summary
            self._claims, self._claim_summary = list(claims), claim_summary

    @property
    def citations(self) -> list[CitationRecord]:
        with self._lock:
            return list(self._citations)

    @property
    def citation_summary(self) -> CitationSummary | None:
        return self._citation_summary

    @property
    def claims(self) -> list[ClaimRecord]:
        with self._lock:
            return list(self._claims)

    @property
    def claim_summary(self) -> ClaimSummary | None:
        return self._claim_summary

    def snapshot(self) -> dict[str, Any]:
        """Sources, hand-overs and citations as JSON; the texts travel one item each (``ledger.py``)."""
        with self._lock:
            return {
                "sources": [_source_json(record) for record in self._sources.values()],
                "handovers": [
                    {"task_id": h.task_id, "unit": h.unit, "findings": h.findings.model_dump(mode="json")}
                    for h in self._handovers
                ],
                "citations": [c.model_dump(mode="json") for c in self._citations],
                "citation_summary": self._citation_summary.model_dump(mode="json") if self._citation_summary else None,
                "claims": [c.model_dump(mode="json") for c in self._claims],
                "claim_summary": self._claim_summary.model_dump(mode="json") if self._claim_summary else None,
            }

    def restore(self, snapshot: dict[str, Any], records: list[EvidenceRecord]) -> None:
        """Bring back what another process recorded for this run, before this one records anything."""
        with self._lock:
            for source in snapshot.get("sources", []):
                paper = source.get("paper")
                record = SourceRecord(
                    **{
                        **source,
                        "paper": Paper.model_validate(paper) if paper else None,
                        "urls": tuple(source.get("urls") or (source["url"],)),
                        "work": tuple(source.get("work") or ()),
                    }
                )
                key = normalise_url(record.url)
                self._sources.setdefault(key, record)
                self._aliases.update({normalise_url(other): key for other in record.urls[1:]})
                self._works.update({work: key for work in record.work})
            known = {record.id for record in self._evidence}
            self._evidence = sorted(
                [*self._evidence, *(r for r in records if r.id not in known)], key=lambda r: int(r.id[2:])
            )
            self._handovers = [
                HandOver(task_id=h["task_id"], unit=h["unit"], findings=Findings.model_validate(h["findings"]))
                for h in snapshot.get("handovers", [])
            ] + self._handovers
            if snapshot.get("citations") and not self._citations:
                self._citations = [CitationRecord.model_validate(c) for c in snapshot["citations"]]
            if snapshot.get("citation_summary") and self._citation_summary is None:
                self._citation_summary = CitationSummary.model_validate(snapshot["citation_summary"])
            if snapshot.get("claims") and not self._claims:
                self._claims = [ClaimRecord.model_validate(c) for c in snapshot["claims"]]
            if snapshot.get("claim_summary") and self._claim_summary is None:
                self._claim_summary = ClaimSummary.model_validate(snapshot["claim_summary"])


def _work_keys_of(url: str, title: str, paper: Paper | None, work: CitationMetadata | None) -> frozenset[str]:
    keys = work_keys(url)
    if work is not None:
        keys |= work_keys(url, title=work.title, authors=work.authors, doi=work.doi, arxiv_id=work.arxiv_id)
    if paper is not None:
        keys |= work_keys(url, title=title, authors=paper.authors, doi=paper.doi)
    return keys


def _source_json(record: SourceRecord) -> dict[str, Any]:
    return {**asdict(record), "paper": record.paper.model_dump(mode="json") if record.paper else None}
