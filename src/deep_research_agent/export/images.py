"""What a report's images become in an export: links, never loaded.

A report is written by a model that reads untrusted pages, so an image it names (``![x](http://10.0.0.5/p.png)``)
must make nothing load it: not the server while it renders (a PDF engine fetches images), nor the reader's
viewer when the file is opened (which would tell a third party who reads which report).

- ``images_to_links``: a markdown-it core rule for the HTML, PDF and Word renderers: an http(s) image becomes a
  link to its address reading "Image: <alt>"; any other (``data:``, a relative path) a note, "Image not shown:
  <alt>". (markdown-it never takes ``file:`` or ``javascript:`` for an image: those stay the report's text.)
- ``inert_markdown(markdown)``: the Markdown export's text with every image syntax made a link (its ``!``
  dropped), whatever its address, and raw HTML made text (as the HTML export shows it), so no Markdown viewer
  loads anything either.
- ``embedded_only_fetcher()``: WeasyPrint's URL fetcher for the PDF: ``data:`` URLs, decoded in process, and
  nothing else, no redirects, so a resource the HTML names can never open a connection or a file.

Images the product renders itself (charts) are to be embedded by the renderer as ``data:`` URLs, which that
fetcher serves; nothing in a report's text can name one, since every image there has become a link first.
"""

from __future__ import annotations

import re
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline.image import image as parse_image
from markdown_it.token import Token

from ..report.markdown import mask_code

IMAGE_LABEL = "Image"
NOT_SHOWN_LABEL = "Image not shown"
_WEB_SCHEMES = ("http://", "https://")
_PASSES = 4
# A raw HTML tag's opening bracket (a tag, a closing tag, a comment, a declaration, a processing instruction).
_TAG_START = re.compile(r"(<)(?=[A-Za-z/!?])")


def images_to_links(state: StateCore) -> None:
    """Replace every ``image`` token of the document with a link to its address, or a note without one."""
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        for child in block.children:
            children.extend(_as_link(child) if child.type == "image" else [child])
        block.children = children


def _as_link(image: Token) -> list[Token]:
    alt = list(image.children or [])
    src = str(image.attrGet("src") or "")
    if not src.lower().startswith(_WEB_SCHEMES):
        return [Token("text", "", 0, content=f"{NOT_SHOWN_LABEL}: " if alt else NOT_SHOWN_LABEL), *alt]
    opening = Token("link_open", "a", 1)
    opening.attrSet("href", src)
    label = Token("text", "", 0, content=f"{IMAGE_LABEL}: " if alt else IMAGE_LABEL)
    return [opening, label, *alt, Token("link_close", "a", -1)]


def inert_markdown(markdown: str) -> str:
    """``markdown`` with nothing a viewer would load: each image syntax made a link (its ``!`` dropped; an empty
    alt reads "image") and raw HTML made text (its tags' ``<`` escaped), code left as it is.

    Each element is found by the text markdown-it parsed it from, and the result is parsed again until none is
    left (HTML inside an HTML block shows only once the block is escaped); what a few passes cannot place
    (an image split over block-quote lines whose markers differ) has every ``![`` and ``<`` escaped, so
    nothing loadable ever survives.
    """
    for _ in range(_PASSES):
        loaders = _loaders(markdown)
        if not loaders:
            return markdown
        markdown = _disarmed(markdown, loaders)
    return markdown if not _loaders(markdown) else markdown.replace("![", "!\\[").replace("<", "\\<")


def _disarmed(markdown: str, loaders: list[Token]) -> str:
    masked = mask_code(markdown)  # same length, code blanked: an element's text is never found inside code
    out: list[str] = []
    at = 0
    for token in loaders:
        lines = token.meta["source"].split("\n") if token.type == "image" else token.content.splitlines()
        for line in lines if token.type == "html_block" else lines[:1]:
            found = masked.find(mask_code(line), at) if line.strip() else -1
            if found < 0:
                continue
            if token.type == "image":
                empty_alt = line.startswith("![]")
                out += [markdown[at:found], "[image]" if empty_alt else "["]
                at = found + (3 if empty_alt else 2)
            else:
                end = found + len(line)
                out += [markdown[at:found], _TAG_START.sub(r"\\\1", markdown[found:end])]
                at = end
    return "".join(out) + markdown[at:]


def _loaders(markdown: str) -> list[Token]:
    """Images and raw HTML in ``markdown``, in reading order."""
    found: list[Token] = []
    for block in _recording_parser().parse(markdown):
        if block.type == "html_block":
            found.append(block)
        found += [child for child in block.children or [] if child.type in ("image", "html_inline")]
    return found


def _recording_parser() -> MarkdownIt:
    """A parser that takes every image syntax for an image (any address), records the text each came from, and
    sees raw HTML as a viewer would."""
    parser = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
    parser.validateLink = lambda url: True  # type: ignore[method-assign]

    def image(state: StateInline, silent: bool) -> bool:
        start = state.pos
        if not parse_image(state, silent):
            return False
        if not silent:
            state.tokens[-1].meta["source"] = state.src[start : state.pos]
        return True

    parser.inline.ruler.at("image", image)
    return parser


def embedded_only_fetcher() -> Any:
    """WeasyPrint's URL fetcher that serves ``data:`` URLs only (see the module contract)."""
    from weasyprint.urls import URLFetcher  # loads Pango: imported when a PDF is laid out, like weasyprint itself

    return URLFetcher(allowed_protocols=("data",), allow_redirects=False)
