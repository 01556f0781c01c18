"""How a corpus passage is addressed and cited.

- ``passage_url``: ``corpus://<name>/<path>#<anchor>``, or ``#page=N`` for a PDF page, or no fragment for a
  passage with neither; the path and anchor are percent-encoded, so the URL survives spaces and ``#`` in
  file names. It is the passage's source URL in events, evidence, findings and the report (its domain is
  the corpus name), and ``urls.normalise_url`` keeps its fragment: two sections of one page are two sources.
- ``title_of``: the Sources line a person would write, ``<corpus title> — <document title> › <section>
  (<path>)``, e.g. ``PostgreSQL 15 docs — 20.4. Resource Consumption › 20.4.1. Memory › work_mem
  (integer) (runtime-config-resource.html)``. Long headings are cut, and a deep title path keeps its first
  and last two parts.
"""

from __future__ import annotations

from urllib.parse import quote, unquote, urlsplit

from .backend import StoredPassage

SCHEME = "corpus"
_MAX_HEADING = 70
_SAFE_PATH = "/-._~!$&'()*+,;=:@"
_SAFE_ANCHOR = "-._~!$&'()*+,;=:@/?"


def passage_url(corpus: str, path: str, anchor: str | None, page: int | None = None) -> str:
    fragment = f"#{quote(anchor, safe=_SAFE_ANCHOR)}" if anchor else (f"#page={page}" if page else "")
    return f"{SCHEME}://{corpus}/{quote(path, safe=_SAFE_PATH)}{fragment}"


def url_of(passage: StoredPassage) -> str:
    return passage_url(passage.corpus, passage.path, passage.anchor, passage.page)


def is_corpus_url(url: str) -> bool:
    return url.strip().lower().startswith(f"{SCHEME}://")


def parse_passage_url(url: str) -> tuple[str, str, str | None] | None:
    """(corpus, path, fragment) of a ``corpus://`` URL, or None for any other URL."""
    if not is_corpus_url(url):
        return None
    parts = urlsplit(url.strip())
    return parts.netloc, unquote(parts.path.lstrip("/")), unquote(parts.fragment) or None


def _cut(text: str, limit: int = _MAX_HEADING) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def title_of(corpus_title: str, passage: StoredPassage) -> str:
    path = [_cut(part) for part in passage.title_path if part.strip()]
    if len(path) > 3:
        path = [path[0], "…", *path[-2:]]
    where = " › ".join(path) or passage.path
    return f"{corpus_title} — {where} ({passage.path})"
