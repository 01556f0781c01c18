"""Passages: what a document's sections become in the index, and how they get stable ids.

Every format's splitter (``formats``) reads a file into ``Section``s in document order: a title path
(the document title, then each heading down to the section), the section's anchor or page, and its text
blocks. ``build_passages`` turns them into passages of a searchable size:

- a section up to ``MAX_CHARS`` is one passage; a longer one is cut at block boundaries into parts of
  about ``TARGET_CHARS``, preferring cuts where the text sets an anchor of its own (a part takes the
  anchor and the bold label that start it), and a single block longer than that is cut at sentences;
- a section shorter than ``MIN_CHARS`` (an intro line before its subsections) takes in its first
  subsection when both fit in ``TARGET_CHARS``; the passage keeps the first section's title path and
  anchor and lists both headings. Other sections stay apart, however short (two definitions side by
  side), so each keeps a URL that points at it;
- a passage's text starts with its own heading line, so a definition's signature (``work_mem
  (integer)``, ``sqlite3.connect(database, timeout=5.0, …)``) is part of the text a quote can cite.

Ids are ``<corpus>:<12 hex>``, a digest of the file's path, the passage's anchor (or, without one, its
title path) and how many passages before it in the same file share that key. So re-indexing an unchanged
file gives the same ids, and editing one section leaves the ids of the others alone.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

MIN_CHARS = 200
TARGET_CHARS = 1200
MAX_CHARS = 1800
_SENTENCE_END_RE = re.compile(r"(?<=[.!?:;])\s+|\n+")


@dataclass
class Block:
    """A paragraph, list item, table row or code block; ``anchor``/``label`` when one starts here."""

    text: str
    anchor: str | None = None
    label: str | None = None


@dataclass
class Section:
    """One stretch of a document under one title path (a heading's body, a definition, a PDF page)."""

    path: tuple[str, ...]
    anchor: str | None = None
    page: int | None = None
    blocks: list[Block] = field(default_factory=list)
    # A definition's signature or a heading that is not the last element of ``path`` (e.g. the root).
    heading_line: str | None = None

    @property
    def heading(self) -> str:
        return self.heading_line if self.heading_line is not None else (self.path[-1] if self.path else "")

    def chars(self) -> int:
        return sum(len(block.text) + 2 for block in self.blocks)


@dataclass(frozen=True)
class Passage:
    """One indexed passage of a document."""

    id: str
    seq: int
    title_path: tuple[str, ...]
    headings: tuple[str, ...]
    anchor: str | None
    page: int | None
    text: str


def passage_id(corpus: str, path: str, key: str, occurrence: int) -> str:
    digest = hashlib.sha1(f"{path}\x00{key}\x00{occurrence}".encode()).hexdigest()[:12]
    return f"{corpus}:{digest}"


@dataclass
class _Draft:
    title_path: tuple[str, ...]
    anchor: str | None
    page: int | None
    headings: list[str]
    texts: list[str]
    merged: bool = False

    def chars(self) -> int:
        return sum(len(text) + 2 for text in self.texts)


def build_passages(corpus: str, path: str, sections: Iterable[Section]) -> list[Passage]:
    """The passages of one file (``path`` relative to its corpus), in document order, with stable ids."""
    drafts: list[_Draft] = []
    for section in sections:
        drafts.extend(_parts(section))
    merged = _merge_small(drafts)
    seen: Counter[str] = Counter()
    passages = []
    for seq, draft in enumerate(merged):
        text = "\n\n".join(t for t in draft.texts if t).strip()
        if not text:
            continue
        key = draft.anchor or (f"page={draft.page}" if draft.page else " › ".join(draft.title_path))
        passages.append(
            Passage(
                id=passage_id(corpus, path, key, seen[key]),
                seq=seq,
                title_path=draft.title_path,
                headings=tuple(dict.fromkeys(h for h in draft.headings if h)),
                anchor=draft.anchor,
                page=draft.page,
                text=text,
            )
        )
        seen[key] += 1
    return [_renumbered(p, n) for n, p in enumerate(passages)]


def _renumbered(passage: Passage, seq: int) -> Passage:
    return passage if passage.seq == seq else Passage(**{**passage.__dict__, "seq": seq})


def _parts(section: Section) -> list[_Draft]:
    """The section as one draft, or cut into parts of about ``TARGET_CHARS`` when it is longer than ``MAX_CHARS``."""
    heading = section.heading
    blocks = [b for b in section.blocks if b.text.strip()]
    lead = [heading] if heading else []
    if not blocks:
        return []
    if section.chars() + len(heading) <= MAX_CHARS:
        return [_Draft(section.path, section.anchor, section.page, [heading], lead + [b.text for b in blocks])]
    pieces: list[Block] = []
    for block in blocks:
        pieces.extend(_cut_block(block) if len(block.text) > MAX_CHARS else [block])
    drafts: list[_Draft] = []
    in_effect = part_anchor = section.anchor
    label: str | None = None
    current: list[str] = []
    size = len(heading)

    def close() -> None:
        path = section.path + ((label,) if label else ())
        lead_lines = ([heading] if not drafts and heading else []) + ([label] if label and drafts else [])
        drafts.append(
            _Draft(path, part_anchor, section.page, [heading, *([label] if label else [])], lead_lines + current)
        )

    for block in pieces:
        starts_anchor = block.anchor is not None and block.anchor != in_effect
        # A new anchor is a natural cut once the part has a body; otherwise cut where the size says.
        if current and (size + len(block.text) > TARGET_CHARS or (starts_anchor and size >= TARGET_CHARS // 2)):
            close()
            current, size, label = [], 0, None
        if block.anchor is not None:
            in_effect = block.anchor
        if not current:
            part_anchor = in_effect
            if block.label:
                label = block.label
                if block.text.removeprefix("- ").strip() == block.label:
                    size += len(block.text)
                    continue
        current.append(block.text)
        size += len(block.text) + 2
    if current:
        close()
    return drafts


def _cut_block(block: Block) -> list[Block]:
    """A block longer than ``MAX_CHARS`` cut at sentence or line ends (hard cuts only inside one huge run)."""
    pieces: list[Block] = []
    buffer = ""
    for sentence in _SENTENCE_END_RE.split(block.text):
        while len(sentence) > TARGET_CHARS:
            cut = sentence.rfind(" ", 0, TARGET_CHARS)
            cut = cut if cut > TARGET_CHARS // 2 else TARGET_CHARS
            if buffer:
                pieces.append(Block(buffer))
                buffer = ""
            pieces.append(Block(sentence[:cut].rstrip()))
            sentence = sentence[cut:].lstrip()
        if buffer and len(buffer) + len(sentence) + 1 > TARGET_CHARS:
            pieces.append(Block(buffer))
            buffer = ""
        buffer = f"{buffer} {sentence}" if buffer else sentence
    if buffer:
        pieces.append(Block(buffer))
    if pieces:
        pieces[0] = Block(pieces[0].text, anchor=block.anchor, label=block.label)
    return pieces


def _continues(previous: _Draft, draft: _Draft) -> bool:
    """``draft`` lies inside ``previous``'s section: a subsection of it, or more of the same anchor."""
    inside = draft.title_path[: len(previous.title_path)] == previous.title_path
    return inside and (len(draft.title_path) > len(previous.title_path) or draft.anchor == previous.anchor)


def _merge_small(drafts: Sequence[_Draft]) -> list[_Draft]:
    """A small draft takes in the first draft that follows inside its section (an intro line before its
    first subsection) when both fit in ``TARGET_CHARS``; the subsections after that keep their own
    passages, so each keeps a URL that points at it."""
    merged: list[_Draft] = []
    for draft in drafts:
        previous = merged[-1] if merged else None
        if (
            previous is not None
            and not previous.merged
            and previous.chars() < MIN_CHARS
            and previous.page == draft.page
            and previous.chars() + draft.chars() <= TARGET_CHARS
            and _continues(previous, draft)
        ):
            previous.texts.extend(draft.texts)
            previous.headings.extend(draft.headings)
            previous.merged = True
            continue
        merged.append(_Draft(draft.title_path, draft.anchor, draft.page, list(draft.headings), list(draft.texts)))
    return merged
