"""What a web or scholarly search found, the same for every search backend: the hit, and a paper's metadata.

``SearchBackendName`` names the backends (``tools/search_backends/``), in the order the settings accept
them. ``SearchResult`` is one hit as every backend hands it over (title, URL, snippet, date, and the
backend that found it); a scholarly backend's hit also carries ``Paper`` (authors, venue, year, DOI,
abstract and, where the service links one, the PDF). The paper travels on to the run's sources and
evidence records, so a report's Sources line can name its authors, year and DOI.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class SearchBackendName(StrEnum):
    TAVILY = "tavily"
    SEARXNG = "searxng"
    ARXIV = "arxiv"
    WIKIPEDIA = "wikipedia"
    PUBMED = "pubmed"
    OPENALEX = "openalex"


# The backends whose hits are papers (``SearchResult.paper`` set, recorded as ``paper`` evidence).
PAPER_BACKENDS = frozenset({SearchBackendName.ARXIV, SearchBackendName.PUBMED, SearchBackendName.OPENALEX})


class Paper(BaseModel):
    """A scholarly work's metadata, as a Sources line and a reader need it."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    authors: tuple[str, ...] = ()
    venue: str = ""
    year: int | None = None
    doi: str = Field(default="", description="The bare DOI (10.x/…), without a resolver prefix.")
    abstract: str = ""
    full_text_url: str = Field(default="", description="Where the full text can be read: a PDF, or PubMed Central.")

    def citation(self) -> str:
        """``A. Author, B. Author et al. (2024). Venue. doi:10.x/y``: the parts that are known."""
        names = list(self.authors[:3])
        authors = ", ".join(names) + (" et al." if len(self.authors) > 3 else "")
        head = " ".join(part for part in (authors, f"({self.year})" if self.year else "") if part)
        parts = [part for part in (head, self.venue, f"doi:{self.doi}" if self.doi else "") if part]
        return ". ".join(parts)


class SearchResult(BaseModel):
    """One hit of one search, whatever backend found it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str
    url: str
    snippet: str = ""
    date: str = Field(default="", description="When the page or paper was published, as the backend gave it.")
    backend: SearchBackendName
    paper: Paper | None = None


def bare_doi(value: str) -> str:
    """A DOI without its resolver prefix (``https://doi.org/``, ``doi:``), or "" when ``value`` holds none."""
    text = value.strip()
    for prefix in ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/", "doi:"):
        if text.lower().startswith(prefix):
            text = text[len(prefix) :]
            break
    return text if text.startswith("10.") and "/" in text else ""
