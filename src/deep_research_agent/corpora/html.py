"""HTML documents as sections: headings, definition entries and anchors, with the page chrome left out.

Two readings, chosen per corpus (``CorpusSpec.html``):

- ``docs`` (the default, for documentation sets): a walk over lxml's tree. Why not trafilatura here:
  on these pages it drops Sphinx's API signatures and parameter lists (``check_same_thread`` of
  ``sqlite3.connect`` is gone), keeps no ``id`` to link a passage to, and at about 0.2 MB/s it cannot
  index a 90 MB documentation set in minutes on two cores; this walk reads 5 MB/s.
  Headings (``h1``–``h6``) open sections; a definition term with an ``id`` (a Sphinx ``dt.sig``, a
  DocBook ``variablelist`` entry such as ``GUC-WORK-MEM``) opens a sub-section for its ``dd``; a heading
  takes its own ``id`` or that of the element it opens (``<section id>``, DocBook's ``div.sect2``,
  a ``<a name>`` just before it). Other anchors inside a section (``<a name="max_column">`` followed by a
  bold title) mark where a long section is best cut. Scripts, styles, forms, ``nav``/``aside``/``footer``,
  ARIA landmarks other than ``main`` and the chrome classes of common generators (Sphinx, DocBook,
  sqlite.org's ``nosearch``) are dropped; ``main`` (or ``role=main``) is read when the page has one.
- ``web`` (saved web pages): trafilatura's main-content Markdown, exactly as ``web_fetch`` reads a page,
  split at its Markdown headings (no anchors: trafilatura keeps none).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import lxml.html
from lxml import etree

from .passages import Block, Section

HEADINGS = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_DROP_TAGS = (
    "script",
    "style",
    "noscript",
    "template",
    "nav",
    "aside",
    "footer",
    "form",
    "button",
    "select",
    "iframe",
    "svg",
    "canvas",
    "map",
)
_DROP_ROLES = {"navigation", "banner", "contentinfo", "search", "complementary", "menu", "menubar"}
_DROP_CLASSES = {
    "nosearch", "menu", "mainmenu", "submenu", "searchmenu", "tagline",
    "sphinxsidebar", "sphinxsidebarwrapper", "related", "footer", "headerlink", "breadcrumbs", "breadcrumb",
    "navheader", "navfooter", "toc", "skip-link", "skiplink", "visually-hidden", "sr-only",
}  # fmt: skip
_BLOCK_TAGS = {
    "p", "div", "section", "article", "main", "body", "header", "ul", "ol", "li", "dl", "dt", "dd", "table", "thead",
    "tbody", "tfoot", "tr", "caption", "blockquote", "figure", "figcaption", "details", "summary", "hr", "address",
    "center", "fieldset", "legend", "html",
}  # fmt: skip
_CODE_TAGS = {"code", "tt", "kbd", "samp"}
_CELL_TAGS = {"td", "th"}
_LABEL_TAGS = {"b", "strong"}
_MAX_LABEL_CHARS = 100
_LINK_SHARE = 0.85
_LINK_LIST_WORDS = 16
_SPACE_RE = re.compile(r"\s+")


def _flat(text: str) -> str:
    return _SPACE_RE.sub(" ", text).strip()


@dataclass
class HtmlDocument:
    title: str
    sections: list[Section]


@dataclass
class _Frame:
    level: int
    heading: str
    anchor: str | None
    is_definition: bool = False
    heading_line: str | None = None


@dataclass
class _Walk:
    root_title: str
    frames: list[_Frame] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    current: Section | None = None
    inline: list[str] = field(default_factory=list)
    pending_anchor: str | None = None
    pending_label: str | None = None
    pending_prefix: str = ""
    link_chars: int = 0

    # --- sections -------------------------------------------------------------------------------

    def path(self) -> tuple[str, ...]:
        headings = [frame.heading for frame in self.frames if frame.heading]
        if headings and _same(headings[0], self.root_title):
            headings = headings[1:]
        return (self.root_title, *headings) if self.root_title else tuple(headings)

    def open_section(self) -> None:
        self.flush()
        top = self.frames[-1] if self.frames else None
        self.current = Section(
            path=self.path(),
            anchor=next((f.anchor for f in reversed(self.frames) if f.anchor), None) if top else None,
            heading_line=top.heading_line if top else (self.root_title or None),
        )
        if (
            top
            and not top.is_definition
            and top.heading
            and len(self.frames) == 1
            and _same(top.heading, self.root_title)
        ):
            self.current.heading_line = self.root_title
        self.sections.append(self.current)

    def heading(self, level: int, text: str, anchor: str | None) -> None:
        self.flush()
        # A heading inside a definition nests under it; otherwise it closes every heading of its level or deeper.
        while self.frames and not self.frames[-1].is_definition and self.frames[-1].level >= level:
            self.frames.pop()
        self.frames.append(_Frame(level, text, anchor or self.take_anchor()))
        self.pending_anchor = None
        self.open_section()

    def definition(self, signature: str, anchor: str) -> None:
        self.flush()
        level = (self.frames[-1].level if self.frames else 0) + 1
        name = _definition_name(signature)
        self.frames.append(_Frame(level, name, anchor, is_definition=True, heading_line=signature))
        self.pending_anchor = None
        self.open_section()

    def end_definition(self) -> None:
        self.flush()
        while self.frames:
            if self.frames.pop().is_definition:
                break
        self.open_section()

    def take_anchor(self) -> str | None:
        anchor, self.pending_anchor = self.pending_anchor, None
        return anchor

    # --- text -----------------------------------------------------------------------------------

    def text(self, text: str | None) -> None:
        if text:
            self.inline.append(text)

    def flush(self) -> None:
        text = _flat("".join(self.inline))
        links, self.link_chars = self.link_chars, 0
        self.inline.clear()
        if not text:
            return
        if links >= _LINK_SHARE * len(text) and len(text.split()) <= _LINK_LIST_WORDS:
            # A block that is all link text is navigation: an index entry, a table-of-contents line.
            self.pending_prefix = ""
            self.pending_label = None
            return
        if self.current is None:
            self.open_section()
        assert self.current is not None
        label = self.pending_label if self.pending_label and _same(self.pending_label, text) else None
        self.current.blocks.append(Block(self.pending_prefix + text, anchor=self.take_anchor(), label=label))
        self.pending_label = None
        self.pending_prefix = ""

    def current_has_body(self) -> bool:
        return bool(self.current and self.current.blocks)

    def raw_block(self, text: str) -> None:
        self.flush()
        if not text.strip():
            return
        if self.current is None:
            self.open_section()
        assert self.current is not None
        self.current.blocks.append(Block(text.strip("\n"), anchor=self.take_anchor()))


def _same(a: str, b: str) -> bool:
    return a.strip(" ¶#").casefold() == b.strip(" ¶#").casefold()


_CALL_RE = re.compile(r"^([^\s(][^(]*?)\(")
_SHORT_SIGNATURE = 60


def _definition_name(signature: str) -> str:
    """How a definition is listed in a title path: a short term whole (``work_mem (integer)``), a long
    call signature by its name (``sqlite3.connect(database, timeout=5.0, …)`` → ``sqlite3.connect()``)."""
    if len(signature) <= _SHORT_SIGNATURE:
        return signature
    call = _CALL_RE.match(signature)
    if call and len(call.group(1)) <= _SHORT_SIGNATURE:
        return call.group(1).strip() + "()"
    return signature[: _SHORT_SIGNATURE - 1].rstrip() + "…"


def _classes(element: etree._Element) -> set[str]:
    return set((element.get("class") or "").split())


def _is_chrome(element: etree._Element) -> bool:
    return bool(_classes(element) & _DROP_CLASSES) or (element.get("role") or "").lower() in _DROP_ROLES


def _strip_chrome(root: etree._Element) -> None:
    doomed = [el for el in root.iter(*_DROP_TAGS)]
    doomed += [
        el
        for el in root.iter()
        if isinstance(el.tag, str) and el.tag not in ("html", "body", "main") and _is_chrome(el)
    ]
    for element in doomed:
        if element.getparent() is not None:
            element.drop_tree()


def _main_region(root: etree._Element) -> etree._Element:
    for xpath in ("//main", "//*[@role='main']"):
        found = root.xpath(xpath)
        if found:
            return found[0]
    articles = root.xpath("//article")
    if len(articles) == 1:
        return articles[0]
    body = root.find("body")
    return body if body is not None else root


def _text_of(element: etree._Element) -> str:
    return _flat(element.text_content())


def _pre_text(element: etree._Element) -> str:
    text = element.text_content()
    return "```\n" + text.strip("\n") + "\n```"


def _is_label(element: etree._Element) -> str | None:
    """The text of a block that is one bold phrase and nothing else (sqlite.org's titled list items)."""
    children = [c for c in element if isinstance(c.tag, str)]
    if len(children) != 1 or children[0].tag not in _LABEL_TAGS:
        return None
    if (element.text or "").strip() or (children[0].tail or "").strip():
        return None
    text = _text_of(children[0])
    return text if 0 < len(text) <= _MAX_LABEL_CHARS else None


def _walk(walk: _Walk, element: etree._Element) -> None:
    tag = element.tag if isinstance(element.tag, str) else None
    if tag is None:  # a comment or processing instruction: only its tail is text
        walk.text(element.tail)
        return
    tag = tag.lower()
    if tag in HEADINGS:
        walk.heading(HEADINGS[tag], _text_of(element), element.get("id"))
    elif tag == "pre":
        walk.raw_block(_pre_text(element))
    elif tag == "dl":
        _walk_definitions(walk, element)
    elif tag == "br":
        walk.text(" ")
    elif tag in _BLOCK_TAGS or tag in _CELL_TAGS:
        if tag in _BLOCK_TAGS:
            walk.flush()
        elif walk.inline:
            walk.text(" | ")
        anchor = element.get("id") or element.get("name")
        if anchor:
            # The innermost id before any text names the spot best (DocBook's div.appendix inside a page wrapper).
            walk.pending_anchor = anchor
        if tag in ("p", "li", "dt", "div") and walk.pending_anchor is not None:
            walk.pending_label = _is_label(element) or walk.pending_label
        if tag == "li":
            walk.pending_prefix = "- "
        walk.text(element.text)
        for child in element:
            _walk(walk, child)
        if tag in _BLOCK_TAGS:
            walk.flush()
    else:
        anchor = element.get("id") or (element.get("name") if tag == "a" else None)
        if anchor and not _text_of(element):
            walk.pending_anchor = anchor
        if tag == "a" and element.get("href"):
            walk.link_chars += len(_flat(element.text_content()))
        code = tag in _CODE_TAGS and "\n" not in (element.text_content() or "")
        if code:
            walk.text("`")
        walk.text(element.text)
        for child in element:
            _walk(walk, child)
        if code:
            walk.text("`")
    walk.text(element.tail)


def _walk_definitions(walk: _Walk, dl: etree._Element) -> None:
    """A definition list: each ``dt`` with an id opens a definition whose ``dd``s are its body."""
    walk.flush()
    in_definition = False
    for child in dl:
        tag = child.tag.lower() if isinstance(child.tag, str) else None
        if tag == "dt" and child.get("id"):
            if in_definition:
                walk.end_definition()
            walk.definition(_text_of(child), child.get("id"))
            in_definition = True
        elif tag == "dt" and in_definition and not walk.current_has_body():
            walk.raw_block(_text_of(child))
        else:
            _walk(walk, child)
            continue
        walk.text(child.tail)
    if in_definition:
        walk.end_definition()


_CHARSET_RE = re.compile(rb"""<meta[^>]+charset=["']?([\w.:-]+)|<\?xml[^>]+encoding=["']([\w.:-]+)""", re.IGNORECASE)
_XML_DECLARATION_RE = re.compile(r"^\s*<\?xml[^>]*\?>")


def decode_html(data: bytes) -> str:
    """The page's text: its declared charset (``<meta charset>``, the XML declaration), else UTF-8.

    lxml falls back to Latin-1 when a page declares nothing, which garbles every UTF-8 page saved without
    a ``<meta charset>``; and it refuses text that still carries an XML encoding declaration."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    declared = _CHARSET_RE.search(data[:4096])
    charset = (declared.group(1) or declared.group(2)).decode("ascii", "ignore") if declared else "utf-8"
    try:
        text = data.decode(charset, errors="replace")
    except LookupError:
        text = data.decode("utf-8", errors="replace")
    return _XML_DECLARATION_RE.sub("", text, count=1)


def parse_html_docs(data: bytes) -> HtmlDocument:
    """Sections of a documentation page (the ``docs`` reading)."""
    root = lxml.html.document_fromstring(decode_html(data))
    title_element = root.find(".//title")
    page_title = _flat(title_element.text_content()) if title_element is not None else ""
    _strip_chrome(root)
    region = _main_region(root)
    # The first h1 names the page when the <title> carries it plus a site suffix (Sphinx); pages whose h1s
    # are numbered sections (sqlite.org) keep their <title>.
    h1 = region.find(".//h1")
    heading = _text_of(h1).strip(" ¶#") if h1 is not None else ""
    title = heading if heading and (not page_title or heading.casefold() in page_title.casefold()) else page_title
    title = title.strip(" ¶#")
    walk = _Walk(root_title=title)
    _walk(walk, region)
    walk.flush()
    return HtmlDocument(title=title, sections=[s for s in walk.sections if s.blocks])
