"""Specification of indexing a corpus and searching it: what is read, what changes on a reindex, ranking basics."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from deep_research_agent.corpora.catalog import index_path
from deep_research_agent.corpora.fts5 import Fts5Index
from deep_research_agent.corpora.indexer import CorpusError, IndexSummary, index_corpus
from deep_research_agent.settings.corpora import CorpusSpec
from testkit import corpus as fixture


class Recorder:
    """A progress sink that records what indexing reported."""

    def __init__(self) -> None:
        self.started: tuple[int, int] | None = None
        self.advanced = 0
        self.passages = 0
        self.skipped: list[tuple[str, str]] = []
        self.finished = False

    def start(self, files: int, total_bytes: int) -> None:
        self.started = (files, total_bytes)

    def advance(self, *, passages: int, size: int) -> None:
        self.advanced += 1
        self.passages += passages

    def unreadable(self, path: str, reason: str) -> None:
        self.skipped.append((path, reason))

    def finish(self) -> None:
        self.finished = True


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    return fixture.write_corpus(tmp_path / "docs")


def reindex(spec: CorpusSpec, data: Path, progress: Recorder | None = None, workers: int | None = 1) -> IndexSummary:
    index = Fts5Index(spec.name, index_path(data, spec.name), writable=True)
    try:
        return index_corpus(spec, index, progress=progress, workers=workers)
    finally:
        index.close()


def reader(spec: CorpusSpec, data: Path) -> Fts5Index:
    return Fts5Index(spec.name, index_path(data, spec.name))


def all_ids(spec: CorpusSpec, data: Path) -> dict[str, str]:
    index = reader(spec, data)
    try:
        return {passage_id: path for passage_id, path, _ in index.passages_in_order()}
    finally:
        index.close()


def touch(path: Path, text: str) -> None:
    stat = path.stat()
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_indexing_reads_every_supported_file_skips_hidden_and_excluded_ones_and_reports_the_unreadable(
    corpus_dir, tmp_path
):
    spec = CorpusSpec(name="handbook", root=str(corpus_dir), title=fixture.CORPUS_TITLE)
    progress = Recorder()

    summary = reindex(spec, tmp_path / "data", progress)

    assert summary.files == 11, (
        "seven documents, a Word and an Excel file and two PDFs; .hidden, _static and the PNG are not corpus files"
    )
    assert summary.added == 10 and summary.unreadable == [
        ("reports/broken.pdf", "is a PDF that could not be read (PdfStreamError)")
    ]
    assert progress.started is not None and progress.started[0] == 11 and progress.advanced == 11 and progress.finished
    assert progress.skipped == summary.unreadable
    assert summary.passages == progress.passages == summary.passages_written > 0
    paths = set(all_ids(spec, tmp_path / "data").values())
    assert ".hidden/secret.md" not in paths and "_static/theme.html" not in paths and "reports/grid.pdf" in paths


def test_worker_processes_index_the_same_passages_as_one_process(corpus_dir, tmp_path):
    spec = CorpusSpec(name="handbook", root=str(corpus_dir))
    for n in range(30):  # enough files for the pool to start
        (corpus_dir / "many").mkdir(exist_ok=True)
        (corpus_dir / "many" / f"note{n}.md").write_text(
            f"# Note {n}\n\nGauge {n} read {n}.5 metres.\n", encoding="utf-8"
        )

    reindex(spec, tmp_path / "one", workers=1)
    reindex(spec, tmp_path / "two", workers=2)

    assert all_ids(spec, tmp_path / "one") == all_ids(spec, tmp_path / "two")


def test_a_reindex_reads_only_changed_files_drops_deleted_ones_and_keeps_the_ids_of_the_rest(corpus_dir, tmp_path):
    spec = CorpusSpec(name="handbook", root=str(corpus_dir))
    data = tmp_path / "data"
    reindex(spec, data)
    before = all_ids(spec, data)

    unchanged = reindex(spec, data)
    assert (unchanged.added, unchanged.updated, unchanged.removed, unchanged.unchanged) == (0, 0, 0, 10)
    assert unchanged.still_unreadable == 1 and unchanged.unreadable == [], "an unchanged broken file is not retried"
    assert unchanged.bytes_read == 0, "no unchanged file is opened"

    touch(corpus_dir / "notes/day3.txt", fixture.TEXT + "\nRain by noon.\n")
    (corpus_dir / "notes/history.rst").unlink()
    (corpus_dir / "notes/new.md").write_text("# New\n\nA gauge was added at Bergen.\n", encoding="utf-8")
    changed = reindex(spec, data)

    assert (changed.added, changed.updated, changed.removed, changed.unchanged) == (1, 1, 1, 8)
    after = all_ids(spec, data)
    assert "notes/history.rst" not in after.values() and "notes/new.md" in after.values()
    kept = {pid: path for pid, path in before.items() if path not in ("notes/history.rst", "notes/day3.txt")}
    assert kept.items() <= after.items(), "passages of untouched files keep their ids"
    index = reader(spec, data)
    try:
        assert all(
            hit.passage.path != "notes/history.rst" for hit in index.search("Kvam 1921 first gauge installed", 5)
        )
        assert any("Rain by noon" in hit.passage.text for hit in index.search("rain noon", 3))
    finally:
        index.close()


def test_a_broken_file_that_changes_is_read_again(corpus_dir, tmp_path):
    spec = CorpusSpec(name="handbook", root=str(corpus_dir))
    reindex(spec, tmp_path / "data")
    from testkit.web import make_pdf

    broken = corpus_dir / "reports/broken.pdf"
    stat = broken.stat()
    broken.write_bytes(make_pdf([("Repaired", "The repaired report lists 12 gauges.")], "Repaired report"))
    os.utime(broken, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))

    summary = reindex(spec, tmp_path / "data")

    assert summary.unreadable == [] and summary.added == 1


def test_indexing_from_another_directory_rebuilds_the_index(corpus_dir, tmp_path):
    data = tmp_path / "data"
    reindex(CorpusSpec(name="handbook", root=str(corpus_dir)), data)
    other = tmp_path / "other"
    other.mkdir()
    (other / "only.md").write_text("# Only\n\nThe only document.\n", encoding="utf-8")

    summary = reindex(CorpusSpec(name="handbook", root=str(other)), data)

    assert summary.rebuilt.startswith("the directory changed") and summary.documents == 1
    assert set(all_ids(CorpusSpec(name="handbook", root=str(other)), data).values()) == {"only.md"}


def test_a_missing_directory_is_a_corpus_error(tmp_path):
    with pytest.raises(CorpusError, match="does not exist"):
        reindex(CorpusSpec(name="handbook", root=str(tmp_path / "nowhere")), tmp_path / "data")


def test_exclude_patterns_match_names_and_relative_paths(corpus_dir, tmp_path):
    spec = CorpusSpec(name="handbook", root=str(corpus_dir), exclude=("notes/*.md", "*.pdf"))

    reindex(spec, tmp_path / "data")

    paths = set(all_ids(spec, tmp_path / "data").values())
    assert "notes/field-guide.md" not in paths and "reports/grid.pdf" not in paths
    assert "_static/theme.html" in paths, "a corpus's own exclude list replaces the default one"


# --- search ---------------------------------------------------------------------------------------


@pytest.fixture
def indexed(corpus_dir, tmp_path) -> Fts5Index:
    spec = CorpusSpec(name="handbook", root=str(corpus_dir), title=fixture.CORPUS_TITLE)
    reindex(spec, tmp_path / "data")
    index = reader(spec, tmp_path / "data")
    yield index
    index.close()


def test_an_identifier_is_found_whole_and_ranks_its_own_definition_first(indexed):
    hits = indexed.search("What is the default value of flux_buffer?", 5)

    top = hits[0].passage
    assert (top.path, top.anchor) == ("guide/config.html", "GUC-FLUX-BUFFER")
    assert top.title_path[-1] == "flux_buffer (integer)" and len(top.file_sha256) == 64
    assert "**flux_buffer**" in hits[0].snippet and hits[0].score > 0
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_dotted_name_is_searched_as_a_phrase(indexed):
    assert indexed.search("tidal.connect timeout", 3)[0].passage.path == "api/tidal.html"


@pytest.mark.parametrize("query", ['foo"', "AND", "col:bar", "-x", "NEAR(a b)", "*", '"', "   ", "what is the"])
def test_odd_query_text_never_raises(indexed, query):
    assert isinstance(indexed.search(query, 5), list)


def test_a_passage_is_read_back_whole_with_its_neighbours(indexed):
    flux = indexed.search("flux_buffer", 1)[0].passage

    assert indexed.passage(flux.id) == flux
    around = indexed.neighbours(flux.id, 1)
    assert [p.anchor for p in around] == ["GUC-FLUX-BUFFER", "GUC-TIDE-WORKERS"]
    assert indexed.passage("handbook:000000000000") is None and indexed.neighbours("handbook:000000000000", 1) == []


def test_the_index_describes_its_corpus(indexed):
    meta = indexed.meta()

    assert (meta.name, meta.title, meta.documents, meta.unreadable) == ("handbook", fixture.CORPUS_TITLE, 10, 1)
    assert meta.passages > 10 and meta.source_bytes > 0 and meta.indexed_at.endswith("Z")


def test_a_reader_sees_a_reindex_that_commits_while_it_is_open(indexed, corpus_dir, tmp_path):
    (corpus_dir / "notes/late.md").write_text(
        "# Late\n\nThe storm gauge at Florø was installed late.\n", encoding="utf-8"
    )
    time.sleep(0.01)

    reindex(CorpusSpec(name="handbook", root=str(corpus_dir), title=fixture.CORPUS_TITLE), tmp_path / "data")

    assert indexed.search("storm gauge Florø", 1)[0].passage.path == "notes/late.md"
