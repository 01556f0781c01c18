"""The report's Markdown as markdown-it tokens, with its ``[n]`` markers and ``[unverified]`` marks as tokens
of their own, so the HTML and Word renderers link and annotate them the same way.

Contract:
- CommonMark with tables and strikethrough; raw HTML in the report is text, never markup (a report quotes
  web pages), and markdown-it's link validation drops ``javascript:`` and other unsafe links;
- an image is never an image: it becomes a link to its address or a note (``images.images_to_links``);
- a ``[n]`` (also ``[1, 2]``, ``[1-3]``) in running text becomes a ``citation`` token whose ``meta["numbers"]``
  are the cited sources (``report/markdown.py``'s reading of a marker); inside code it stays code;
- each ``[unverified]`` becomes an ``unverified`` token whose ``meta["note"]`` counts the marks from 1 in
  reading order: the k-th mark is the k-th flagged claim of the document.
"""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token

from ..report.claim_split import UNVERIFIED_MARK
from ..report.markdown import citation_groups
from .images import images_to_links

CITATION = "citation"
UNVERIFIED = "unverified"


def markdown_parser() -> MarkdownIt:
    parser = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    parser.core.ruler.push("dra_images", images_to_links)
    parser.core.ruler.push("dra_marks", _mark_tokens)
    return parser


def _mark_tokens(state: StateCore) -> None:
    note = 0
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        for child in block.children:
            if child.type != "text":
                children.append(child)
                continue
            pieces, note = _split(child.content, note)
            children.extend(pieces)
        block.children = children


def _split(text: str, note: int) -> tuple[list[Token], int]:
    tokens: list[Token] = []
    for position, part in enumerate(text.split(UNVERIFIED_MARK)):
        if position:
            note += 1
            mark = Token(UNVERIFIED, "", 0, content=UNVERIFIED_MARK)
            mark.meta = {"note": note}
            tokens.append(mark)
        tokens.extend(_citations(part))
    return tokens, note


def _citations(text: str) -> list[Token]:
    tokens: list[Token] = []
    at = 0
    for group in citation_groups(text, code_masked=True):
        if group.start > at:
            tokens.append(Token("text", "", 0, content=text[at : group.start]))
        marker = Token(CITATION, "", 0, content=text[group.start : group.end])
        marker.meta = {"numbers": list(group.numbers)}
        tokens.append(marker)
        at = group.end
    if at < len(text):
        tokens.append(Token("text", "", 0, content=text[at:]))
    return tokens


def unverified_marks(markdown: str) -> int:
    """How many ``[unverified]`` marks the text carries outside code."""
    return sum(
        1 for block in markdown_parser().parse(markdown) for child in block.children or [] if child.type == UNVERIFIED
    )
