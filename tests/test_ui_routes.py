"""routes.py serves the web UI: one page for /ui and every thread URL, its bundle, and a clear 503 when unbuilt."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.testclient import TestClient

from deep_research_agent.routes import make_app
from testkit import corpus as corpus_fixture

PAGE = (
    '<!doctype html><meta name="dra-root" content="__ROOT__">'
    '<script type="module" src="__ROOT__/ui/assets/app.js?v=__VERSION__"></script>'
)


@pytest.fixture
def dist(tmp_path: Path) -> Path:
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text(PAGE)
    (tmp_path / "assets" / "app.js").write_text("console.log('ui');\n")
    return tmp_path


def no_store():
    raise AssertionError("the UI routes never read the store")


@pytest.mark.parametrize("path", ["/ui", "/ui/", "/ui/threads/01a2313b-6f60-70e8-a4c7-1c64f846e61c"])
def test_the_page_is_served_for_the_ui_and_every_thread_url(dist: Path, path: str):
    answer = TestClient(make_app(no_store, ui_dist=dist)).get(path)

    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    assert answer.headers["cache-control"] == "no-cache"
    policy = answer.headers["content-security-policy"]
    assert "connect-src 'self'" in policy and "script-src 'self'" in policy
    assert "img-src 'self';" in policy, "an image from elsewhere would tell its host who reads the report"
    version = str(int((dist / "index.html").stat().st_mtime))
    assert answer.text == PAGE.replace("__ROOT__", "").replace("__VERSION__", version)


def test_the_page_carries_the_servers_mount_prefix(dist: Path):
    answer = TestClient(make_app(no_store, ui_dist=dist), root_path="/research").get("/ui")

    assert '<meta name="dra-root" content="/research">' in answer.text
    assert 'src="/research/ui/assets/app.js?v=' in answer.text


def test_the_bundle_is_served_under_ui_assets(dist: Path):
    client = TestClient(make_app(no_store, ui_dist=dist))

    assert client.get("/ui/assets/app.js").text == "console.log('ui');\n"
    assert client.get("/ui/assets/missing.js").status_code == 404


def test_an_unbuilt_ui_answers_503_with_how_to_build_it(tmp_path: Path):
    client = TestClient(make_app(no_store, ui_dist=tmp_path / "dist"))

    answer = client.get("/ui")

    assert answer.status_code == 503
    assert "The web UI is not built" in answer.text and "npm run build" in answer.text and "./run.sh" in answer.text
    assert client.get("/ui/assets/app.js").status_code == 404


def test_no_asset_path_reaches_outside_the_bundle(dist: Path):
    (dist.parent / "secret.txt").write_text("not for the web\n")
    client = TestClient(make_app(no_store, ui_dist=dist))

    for path in (
        "/ui/assets/../../secret.txt",
        "/ui/assets/%2e%2e/%2e%2e/secret.txt",
        "/ui/assets/..%2F..%2Fsecret.txt",
    ):
        answer = client.get(path)
        assert answer.status_code == 404 and "not for the web" not in answer.text, path


def test_a_corpus_is_searched_by_meaning_from_the_web_routes(test_corpus, monkeypatch):
    for key, value in test_corpus.env().items():
        monkeypatch.setenv(key, value)
    client = TestClient(make_app(no_store))

    found = client.get("/corpora/search", params={"corpus": "handbook", "q": corpus_fixture.PARAPHRASE, "k": 3})

    assert found.status_code == 200, found.text
    body = found.json()
    assert body["method"] == "hybrid" and body["note"] == ""
    top = body["hits"][0]
    assert (
        top["url"] == "corpus://handbook/notes/maintenance.md#recalibration" and top["path"] == "notes/maintenance.md"
    )
    assert top["title"].startswith("Halvorsen Handbook — Maintenance")
    assert corpus_fixture.DORMANT_QUOTE in top["text"]
    missing = client.get("/corpora/search", params={"corpus": "atlas", "q": "x"})
    assert missing.status_code == 404 and "handbook" in missing.json()["detail"]
    assert client.get("/corpora/search", params={"corpus": "handbook", "q": " "}).status_code == 422


def test_the_web_routes_list_the_searchable_corpora_with_their_sizes(test_corpus, monkeypatch):
    for key, value in test_corpus.env().items():
        monkeypatch.setenv(key, value)
    client = TestClient(make_app(no_store))

    [listed] = client.get("/corpora").json()["corpora"]

    assert (listed["name"], listed["title"]) == ("handbook", "Halvorsen Handbook")
    assert listed["documents"] >= 5 and listed["passages"] >= listed["documents"]


def test_the_search_page_is_the_ui_page(dist: Path):
    client = TestClient(make_app(no_store, ui_dist=dist))

    assert client.get("/ui/search", params={"corpus": "handbook", "q": "gauge"}).text == client.get("/ui").text
