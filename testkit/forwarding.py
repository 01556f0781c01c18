"""What the loopback proxies in front of a real server (``bearer_proxy``, ``model_tap``) share: the request
sent on to the upstream and the streamed answer passed back, hop-by-hop headers left out both ways."""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection

import httpx
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import StreamingResponse

HOP_BY_HOP = frozenset({"host", "content-length", "connection", "transfer-encoding", "keep-alive"})


def upstream_request(
    client: httpx.AsyncClient, upstream: str, request: Request, body: bytes, *, drop: Collection[str] = ()
) -> httpx.Request:
    """``request`` addressed to ``upstream`` (same method, path, query and body), without hop-by-hop headers
    and the ones named in ``drop`` (lower case)."""
    left_out = HOP_BY_HOP | set(drop)
    headers = {k: v for k, v in request.headers.items() if k.lower() not in left_out}
    return client.build_request(
        request.method, upstream + request.url.path, params=request.query_params, headers=headers, content=body
    )


def passed_back(answer: httpx.Response, chunks: AsyncIterator[bytes] | None = None) -> StreamingResponse:
    """The upstream's streamed ``answer`` for the client (its body as ``chunks`` when given), closed once sent;
    ``content-encoding`` is left out because httpx's raw chunks are passed as they came."""
    headers = {k: v for k, v in answer.headers.items() if k.lower() not in HOP_BY_HOP | {"content-encoding"}}
    return StreamingResponse(
        chunks if chunks is not None else answer.aiter_raw(),
        status_code=answer.status_code,
        headers=headers,
        background=BackgroundTask(answer.aclose),
    )
