"""When two sources are one work: the same DOI, the same arXiv id, or the same title and first author.

``work_keys(url, title=..., authors=..., doi=..., arxiv_id=...)`` returns the keys a source is known by:

- ``doi:<doi>`` (lower case) from a ``doi.org`` URL or a DOI given by metadata;
- ``arxiv:<id>`` (version dropped) from an arXiv URL (``/abs/``, ``/pdf/``, ``/html/``), from arXiv's own
  DataCite DOI ``10.48550/arXiv.<id>``, or from metadata;
- ``title:<normalised title>|<first author's surname>`` when both are known: the title case-folded, accents
  and punctuation dropped, words joined by single spaces; titles under ``MIN_TITLE_WORDS`` words are not
  used, since a short title ("Introduction") names many works.

Two sources sharing any key are one work. ``citation_metadata(html)`` reads the keys' ingredients from a
publisher's page: the Highwire ``citation_*`` meta tags that Google Scholar asks publishers for
(``citation_doi``, ``citation_arxiv_id``, ``citation_title``, ``citation_author``), and ``dc.identifier``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

MIN_TITLE_WORDS = 4
_ARXIV_HOSTS = ("arxiv.org", "www.arxiv.org", "export.arxiv.org")
_ARXIV_PATH_RE = re.compile(
    r"^/(?:abs|pdf|html|format)/(?P<id>(?:\d{4}\.\d{4,5})|(?:[a-z\-]+(?:\.[A-Z]{2})?/\d{7}))(?:v\d+)?(?:\.pdf)?/?$"
)
_ARXIV_ID_RE = re.compile(
    r"^(?:arxiv:)?(?P<id>(?:\d{4}\.\d{4,5})|(?:[a-z\-]+(?:\.[A-Z]{2})?/\d{7}))(?:v\d+)?$", re.IGNORECASE
)
_ARXIV_DOI_RE = re.compile(r"^10\.48550/arxiv\.(?P<id>.+)$", re.IGNORECASE)
_DOI_HOSTS = ("doi.org", "dx.doi.org", "www.doi.org")
_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
_META_RE = re.compile(
    r"<meta\s+[^>]*?(?:name|property)\s*=\s*[\"'](?P<name>[^\"']+)[\"'][^>]*?content\s*=\s*[\"'](?P<content>[^\"']*)[\"']"
    r"|<meta\s+[^>]*?content\s*=\s*[\"'](?P<content2>[^\"']*)[\"'][^>]*?(?:name|property)\s*=\s*[\"'](?P<name2>[^\"']+)[\"']",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class CitationMetadata:
    title: str = ""
    authors: tuple[str, ...] = ()
    doi: str = ""
    arxiv_id: str = ""


def bare_arxiv_id(value: str) -> str:
    """An arXiv id without ``arXiv:`` or its version (``2401.12345v2`` → ``2401.12345``), or ""."""
    found = _ARXIV_ID_RE.match(value.strip())
    return found.group("id").lower() if found else ""


def doi_in_url(url: str) -> str:
    parts = urlsplit(url.strip())
    if (parts.hostname or "").lower() not in _DOI_HOSTS:
        return ""
    doi = unquote(parts.path.lstrip("/"))
    return doi if doi.startswith("10.") and "/" in doi else ""


def arxiv_in_url(url: str) -> str:
    parts = urlsplit(url.strip())
    if (parts.hostname or "").lower() not in _ARXIV_HOSTS:
        return ""
    found = _ARXIV_PATH_RE.match(parts.path)
    return found.group("id").lower() if found else ""


def normalised_title(title: str) -> str:
    plain = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    return " ".join(_WORD_RE.findall(plain.casefold()))


def surname(author: str) -> str:
    """The family name of ``Ada Lovelace`` or ``Lovelace, Ada``, normalised."""
    name = author.split(",", 1)[0] if "," in author else (author.split() or [""])[-1]
    return normalised_title(name)


def work_keys(
    url: str,
    *,
    title: str = "",
    authors: Sequence[str] = (),
    doi: str = "",
    arxiv_id: str = "",
) -> frozenset[str]:
    keys: set[str] = set()
    for candidate in (doi, doi_in_url(url)):
        candidate = candidate.strip().lower()
        if not candidate:
            continue
        arxiv_doi = _ARXIV_DOI_RE.match(candidate)
        if arxiv_doi and bare_arxiv_id(arxiv_doi.group("id")):
            keys.add(f"arxiv:{bare_arxiv_id(arxiv_doi.group('id'))}")
        keys.add(f"doi:{candidate}")
    for candidate in (bare_arxiv_id(arxiv_id), arxiv_in_url(url)):
        if candidate:
            keys.add(f"arxiv:{candidate}")
            keys.add(f"doi:10.48550/arxiv.{candidate}")
    words = normalised_title(title)
    first = surname(authors[0]) if authors else ""
    if first and len(words.split()) >= MIN_TITLE_WORDS:
        keys.add(f"title:{words}|{first}")
    return frozenset(keys)


def citation_metadata(html: str) -> CitationMetadata:
    """The scholarly metadata in a page's ``<meta>`` tags (first 200 KB), empty when there is none."""
    values: dict[str, list[str]] = {}
    for match in _META_RE.finditer(html[:200_000]):
        name = (match.group("name") or match.group("name2") or "").strip().lower()
        content = " ".join((match.group("content") or match.group("content2") or "").split())
        if name and content:
            values.setdefault(name, []).append(content)
    doi = next(iter(values.get("citation_doi", []) + values.get("dc.identifier", []) + values.get("prism.doi", [])), "")
    doi = doi.removeprefix("doi:").removeprefix("https://doi.org/").strip()
    return CitationMetadata(
        title=next(iter(values.get("citation_title", []) + values.get("dc.title", [])), ""),
        authors=tuple(values.get("citation_author", []) or values.get("dc.creator", [])),
        doi=doi if doi.startswith("10.") else "",
        arxiv_id=bare_arxiv_id(next(iter(values.get("citation_arxiv_id", [])), "")),
    )
