"""The corpora an operator declares (``DRA_CORPORA``): names, directories, titles and how their HTML reads.

Contract of ``parse_declarations(raw)``: ``raw`` is a JSON object mapping a corpus name to its directory,
or to ``{path, title?, description?, html?, exclude?, follow_links?}``; or the path of a file holding that JSON. It never
raises: an entry that cannot be used is dropped with a warning that says what to fix. A name is lower-case
letters, digits, ``-`` and ``_`` (at most 48 characters), because it is the host of a passage's
``corpus://`` URL and the prefix of its ids. The corpora package (``corpora/catalog.py``) finds their indexes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,47}$")
HTML_MODES = ("docs", "web")

# Generated parts of documentation builds that repeat the pages or hold no prose: Sphinx's reST copies,
# assets and index pages. Hidden files and folders are always skipped.
DEFAULT_EXCLUDE = (
    "_sources",
    "_static",
    "_images",
    "_downloads",
    "genindex*.html",
    "search.html",
    "*modindex.html",
)


@dataclass(frozen=True)
class CorpusSpec:
    """A corpus as declared (or as recorded by ``corpus add``): where it lives and how to present it."""

    name: str
    root: str
    title: str = ""
    description: str = ""
    html: str = "docs"
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    follow_links: bool = False
    """Index what symbolic links lead to outside the directory too; off, the corpus stays inside it."""

    @property
    def display_title(self) -> str:
        return self.title or self.name


def name_problem(name: str) -> str | None:
    if NAME_RE.match(name):
        return None
    return (
        f"corpus name {name!r} is not usable: use lower-case letters, digits, '-' and '_' "
        "(starting with a letter or digit, at most 48 characters)"
    )


def parse_declarations(raw: str, *, base: Path | None = None) -> tuple[tuple[CorpusSpec, ...], list[str]]:
    """The corpora ``DRA_CORPORA`` declares (inline JSON or a file of it) and the warnings on what was dropped."""
    text = raw.strip()
    if not text:
        return (), []
    where = "DRA_CORPORA"
    if not text.startswith(("{", "[")):
        path = Path(text).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            return (), [
                f"DRA_CORPORA names the file {str(path)!r}, which cannot be read ({exc.strerror}); no corpora declared."
            ]
        where = f"DRA_CORPORA file {str(path)!r}"
        base = path.parent
    try:
        declared = json.loads(text)
    except json.JSONDecodeError as exc:
        return (), [f"{where} is not valid JSON ({exc.msg}); no corpora declared."]
    if not isinstance(declared, Mapping):
        return (), [f"{where} must be a JSON object mapping corpus names to directories; no corpora declared."]
    specs: list[CorpusSpec] = []
    warnings: list[str] = []
    for name, value in declared.items():
        spec, problem = _spec(str(name), value, base)
        if problem:
            warnings.append(f"{where}: {problem}; corpus skipped.")
        elif spec is not None:
            specs.append(spec)
    return tuple(specs), warnings


def _spec(name: str, value: Any, base: Path | None) -> tuple[CorpusSpec | None, str | None]:
    if problem := name_problem(name):
        return None, problem
    if isinstance(value, str):
        value = {"path": value}
    if not isinstance(value, Mapping):
        return None, f"corpus {name!r} must be a directory or an object with a path"
    root = value.get("path") or value.get("dir") or value.get("directory")
    if not isinstance(root, str) or not root.strip():
        return None, f"corpus {name!r} has no path"
    html = str(value.get("html") or "docs")
    if html not in HTML_MODES:
        return None, f"corpus {name!r} has html {html!r}; use 'docs' (documentation sites) or 'web' (saved web pages)"
    exclude = value.get("exclude", DEFAULT_EXCLUDE)
    if isinstance(exclude, str) or not all(isinstance(item, str) for item in exclude):
        return None, f"corpus {name!r}: exclude must be a list of glob patterns"
    follow_links = value.get("follow_links", False)
    if not isinstance(follow_links, bool):
        return None, f"corpus {name!r}: follow_links must be true or false"
    path = Path(root).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    return (
        CorpusSpec(
            name=name,
            root=str(path.resolve()),
            title=str(value.get("title") or "").strip(),
            description=str(value.get("description") or "").strip(),
            html=html,
            exclude=tuple(exclude),
            follow_links=follow_links,
        ),
        None,
    )
