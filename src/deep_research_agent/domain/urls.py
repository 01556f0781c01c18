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


def http_url_problem(url: str, what: str = "URLs") -> str | None:
    """Why ``url`` is not an http(s) URL with a host, naming ``what`` it should have been, or None."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        return "it is not a valid URL"
    if parts.scheme.lower() not in ("http", "https"):
        return f"only http and https {what} are allowed"
    if not parts.hostname:
        return "the URL has no host"
    return None
