"""Specification of ``retry_after_s``: the one reading of an answer's Retry-After headers.

``NOW`` is 2015-10-21 07:28:00 UTC, so a date header's wait is its distance from that instant.
"""

from __future__ import annotations

import httpx
import pytest

from deep_research_agent.domain.retry_after import retry_after_s

NOW = 1445412480.0


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        # Milliseconds first, then seconds, then a date.
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after-ms": "0"}, 0.0),
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": " 1.5 "}, 1.5),
        ({"retry-after": "0"}, 0.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, 30.0),
        ({"retry-after": "Wed, 21 Oct 2015 09:28:30 +0200"}, 30.0),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:30 -0000"}, 30.0),
        # A date already past means: now.
        ({"retry-after": "Wed, 21 Oct 2015 07:00:00 GMT"}, 0.0),
        # Header names match in any case.
        ({"Retry-After-Ms": "500"}, 0.5),
        ({"RETRY-AFTER": "3"}, 3.0),
        # A header that does not parse is skipped for the next one.
        ({"retry-after-ms": "soon", "retry-after": "9"}, 9.0),
        # Nothing usable: the caller keeps its own backoff.
        (None, None),
        ({}, None),
        ({"content-type": "text/html"}, None),
        ({"retry-after": ""}, None),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, None),
        ({"retry-after-ms": "-250"}, None),
        ({"retry-after": "nan"}, None),
        ({"retry-after": "inf"}, None),
        ({"retry-after": "1e999"}, None),
        ({"retry-after": "Wed, 32 Oct 2015 07:28:30 GMT"}, None),
        ({"retry-after": "Wed, 21 Oct 2015"}, None),
    ],
)
def test_the_wait_an_answer_asks_for(headers, wait):
    assert retry_after_s(headers, now=NOW) == wait


def test_httpx_response_headers_are_read_as_they_come():
    response = httpx.Response(503, headers={"Retry-After": "Wed, 21 Oct 2015 07:29:00 GMT"})

    assert retry_after_s(response.headers, now=NOW) == 60.0


def test_a_date_is_measured_from_the_wall_clock_by_default():
    assert retry_after_s({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
