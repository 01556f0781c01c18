"""Markdown and reStructuredText documents as sections, split at their own headings.

- Markdown goes through markdown-it-py (CommonMark; it comes with rich): ATX and Setext headings open
  sections, every other top-level block keeps its source text. A heading's anchor is its GitHub-style
  slug (``## Row factories`` → ``row-factories``, repeats get ``-1``, ``-2``), the title is the YAML front
  matter's ``title``, else the first heading.
- reStructuredText is read line by line. Why not docutils: it is not a dependency, and it fails on
  every Sphinx directive and role it does not know, which is most of real documentation; section titles
  and explicit targets are all a splitter needs. A title is a line with an adornment of one repeated
  punctuation character under it (and optionally over it); levels follow the order in which adornment
  styles first appear, as in docutils. A ``.. _label:`` target right before a title is its anchor, else
  the docutils-style id of the title. Sphinx object directives (``.. function:: sqlite3.connect(...)``,
  ``.. class::``, ``.. method::``, …) open definitions anchored at the object's full name under the
  current ``.. module::`` or ``.. currentmodule::``, like the HTML Sphinx makes.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

from markdown_it import MarkdownIt

from .passages import Block, Section

_FRONT_MATTER_RE = re.compile(r"\A---[ \t]*\n(.*?)\n(?:---|\.\.\.)[ \t]*\n", re.DOTALL)
_FRONT_TITLE_RE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.MULTILINE)
_SLUG_DROP_RE = re.compile(r"[^\w\- ]")
_INLINE_MARKS_RE = re.compile(r"[*_`]+|\[([^\]]*)\]\([^)]*\)")


@dataclass
class MarkupDocument:
    title: str
    sections: list[Section]


def github_slug(text: str, seen: Counter[str]) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens, repeats numbered."""
    base = _SLUG_DROP_RE.sub("", text.strip().lower()).replace(" ", "-")
    count = seen[base]
    seen[base] += 1
    return base if count == 0 else f"{base}-{count}"


class _Outline:
    """Turns a stream of (level, heading, anchor) and text blocks into sections with title paths."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.stack: list[tuple[int, str, str | None]] = []
        self.sections: list[Section] = []
        self.current: Section | None = None

    def heading(self, level: int, text: str, anchor: str | None, *, line: str | None = None) -> None:
        while self.stack and self.stack[-1][0] >= level:
            self.stack.pop()
        self.stack.append((level, text, anchor))
        headings = [h for _, h, _ in self.stack]
        if headings and headings[0].casefold() == self.title.casefold():
            headings = headings[1:]
        path = (self.title, *headings) if self.title else tuple(headings)
        self.current = Section(
            path=path,
            anchor=anchor or next((a for _, _, a in reversed(self.stack) if a), None),
            heading_line=line or text,
        )
        self.sections.append(self.current)

    def block(self, text: str) -> None:
        if not text.strip():
            return
        if self.current is None:
            self.current = Section(path=(self.title,) if self.title else (), heading_line=self.title or None)
            self.sections.append(self.current)
        self.current.blocks.append(Block(text.strip("\n")))


def _plain(markdown_inline: str) -> str:
    return " ".join(_INLINE_MARKS_RE.sub(lambda m: m.group(1) or "", markdown_inline).split())


_MARKDOWN = MarkdownIt("commonmark")


def parse_markdown(text: str, *, fallback_title: str, anchors: bool = True) -> MarkupDocument:
    """Sections of a Markdown document; ``anchors`` off for text whose headings have no real anchors
    (trafilatura's Markdown of a web page)."""
    title = ""
    body = text
    front = _FRONT_MATTER_RE.match(text)
    if front:
        found = _FRONT_TITLE_RE.search(front.group(1))
        title = found.group(1).strip("'\"") if found else ""
        body = text[front.end() :]
    lines = body.splitlines()
    tokens = _MARKDOWN.parse(body)
    if not title:
        first = next((tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"), "")
        title = _plain(first) or fallback_title
    outline = _Outline(title)
    seen: Counter[str] = Counter()
    for index, token in enumerate(tokens):
        # Top-level blocks open at level 0 and carry their source lines; their insides sit deeper.
        if token.level != 0 or token.nesting < 0 or token.map is None:
            continue
        if token.type == "heading_open":
            heading = _plain(tokens[index + 1].content)
            outline.heading(int(token.tag[1]), heading, github_slug(heading, seen) if anchors else None)
            continue
        start, end = token.map
        outline.block("\n".join(lines[start:end]))
    return MarkupDocument(title=title, sections=[s for s in outline.sections if s.blocks])


# --- reStructuredText ----------------------------------------------------------------------------

_ADORNMENT_CHARS = "=-`:'\"~^_*+#<>."
_TARGET_RE = re.compile(r"^\.\. _([^:`]+|`[^`]+`):\s*$")
_MODULE_RE = re.compile(r"^\.\. (?:py:)?(?:module|currentmodule):: *(\S+)")
_OBJECT_RE = re.compile(
    r"^(\s*)\.\. (?:py:)?(function|class|method|attribute|data|exception|decorator|classmethod|staticmethod|"
    r"property|coroutinefunction|coroutinemethod|abstractmethod|c:function|c:macro|c:type|c:member|c:var|option|envvar)"
    r":: *(.+?)\s*$"
)
_DIRECTIVE_OPTION_RE = re.compile(r"^\s+:[\w-]+:")
_RST_ID_RE = re.compile(r"[^a-z0-9]+")


def _is_adornment(line: str) -> bool:
    stripped = line.rstrip()
    return len(stripped) >= 3 and stripped[0] in _ADORNMENT_CHARS and stripped == stripped[0] * len(stripped)


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def docutils_id(text: str) -> str:
    """The id docutils gives a section title: ASCII, lower case, runs of other characters as one hyphen."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return _RST_ID_RE.sub("-", ascii_text.lower()).strip("-")


def parse_rst(text: str, *, fallback_title: str) -> MarkupDocument:
    """Sections of a reStructuredText document (titles, targets and Sphinx object directives)."""
    lines = text.expandtabs(8).splitlines()
    styles: list[tuple[str, bool]] = []
    titles: list[tuple[int, int, str, str | None]] = []  # (first line, line after, title, anchor)
    objects: dict[int, tuple[int, str, str]] = {}  # line -> (indent, directive, signature)
    pending_target: str | None = None
    module = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        target = _TARGET_RE.match(line)
        if target:
            pending_target = target.group(1).strip("`")
            i += 1
            continue
        found_module = _MODULE_RE.match(line)
        if found_module:
            module = found_module.group(1)
        found_object = _OBJECT_RE.match(line)
        if found_object:
            indent, directive, signature = found_object.groups()
            name = signature.split("(", 1)[0].strip()
            if directive in ("option", "envvar") or directive.startswith("c:"):
                anchor = name
            else:
                anchor = name if not module or name.startswith(module + ".") else f"{module}.{name}"
            objects[i] = (len(indent), signature, anchor)
        overline = _is_adornment(line) and i + 2 < len(lines) and _is_adornment(lines[i + 2]) and lines[i + 1].strip()
        if overline and lines[i + 2].rstrip()[0] == line.rstrip()[0]:
            title = lines[i + 1].strip()
            style = (line.rstrip()[0], True)
            end = i + 3
        elif (
            line.strip()
            and not line[:1].isspace()
            and i + 1 < len(lines)
            and _is_adornment(lines[i + 1])
            and len(lines[i + 1].rstrip()) >= _width(line.rstrip())
            and not _is_adornment(line)
        ):
            title = line.strip()
            style = (lines[i + 1].rstrip()[0], False)
            end = i + 2
        else:
            if line.strip():
                pending_target = None if not line.startswith("..") else pending_target
            i += 1
            continue
        if style not in styles:
            styles.append(style)
        titles.append((i, end, title, pending_target or docutils_id(title)))
        pending_target = None
        i = end

    title = titles[0][2] if titles else fallback_title
    outline = _Outline(title)
    heading_at = {
        start: (end, styles.index(_style_of(lines, start)) + 1, heading, anchor)
        for start, end, heading, anchor in titles
    }
    level = 0
    titled: tuple[int, str, str | None] | None = None  # the section an object directive sits in
    object_stack: list[int] = []  # indents of open object directives
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            outline.block("\n".join(paragraph))
            paragraph.clear()

    i = 0
    while i < len(lines):
        if i in heading_at:
            flush()
            end, level, heading, anchor = heading_at[i]
            object_stack.clear()
            titled = (level, heading, anchor)
            outline.heading(level, heading, anchor)
            i = end
            continue
        line = lines[i]
        if i in objects:
            flush()
            indent, signature, anchor = objects[i]
            while object_stack and object_stack[-1] >= indent:
                object_stack.pop()
            object_stack.append(indent)
            name = signature.split("(", 1)[0].strip()
            outline.heading(
                level + len(object_stack), name + ("()" if "(" in signature else ""), anchor, line=signature
            )
            i += 1
            while i < len(lines) and _DIRECTIVE_OPTION_RE.match(lines[i]):
                i += 1
            continue
        indent = len(line) - len(line.lstrip())
        if not line.strip():
            flush()
        elif _TARGET_RE.match(line):
            flush()
        elif object_stack and indent <= object_stack[-1] and not paragraph:
            # Text back at (or left of) a directive's own indent is no longer its body.
            while object_stack and indent <= object_stack[-1]:
                object_stack.pop()
            if not object_stack and titled is not None:
                outline.heading(*titled)
            paragraph.append(line.strip())
        else:
            paragraph.append(line.strip() if not paragraph else line.rstrip())
        i += 1
    flush()
    return MarkupDocument(title=title, sections=[s for s in outline.sections if s.blocks])


def _style_of(lines: list[str], start: int) -> tuple[str, bool]:
    line = lines[start]
    if _is_adornment(line) and start + 2 < len(lines) and _is_adornment(lines[start + 2]):
        return line.rstrip()[0], True
    return lines[start + 1].rstrip()[0], False
