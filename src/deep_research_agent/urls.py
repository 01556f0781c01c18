"""URL identity: when two URLs name the same source, and the domain a reader sees."""

from __future__ import annotations

from urllib.parse import urlsplit


def normalise_url(url: str) -> str:
    """Scheme and host case, a trailing slash and the fragment do not make a different source."""
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/") or "/"
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}" + (f"?{parts.query}" if parts.query else "")


def domain_of(url: str) -> str:
    host = urlsplit(url).hostname or ""
    return host.removeprefix("www.")
