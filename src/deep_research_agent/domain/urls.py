"""URL identity: when two URLs name the same source, and the domain a reader sees."""

from __future__ import annotations

from urllib.parse import urlsplit


def normalise_url(url: str) -> str:
    """Scheme and host case, a trailing slash and the fragment do not make a different source, except in
    a ``corpus://`` URL, whose fragment names the section or page of a local document that was read."""
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/") or "/"
    base = f"{parts.scheme.lower()}://{parts.netloc.lower()}{path}" + (f"?{parts.query}" if parts.query else "")
    if parts.scheme.lower() == "corpus" and parts.fragment:
        return f"{base}#{parts.fragment}"
    return base


def domain_of(url: str) -> str:
    host = urlsplit(url).hostname or ""
    return host.removeprefix("www.")
