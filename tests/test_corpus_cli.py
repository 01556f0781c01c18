"""Specification of ``./run.sh corpus …`` as a user runs it: a real process, the environment run.sh gives it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testkit import corpus as fixture

ROOT = Path(__file__).resolve().parents[1]
JSON_KEYS = ["corpus", "path", "anchor", "title", "score", "text"]


def corpus_cli(*args: str, data: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The command with keyword search only, unless ``env`` turns embeddings on (the model costs seconds per call)."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DRA_")}
    environ.update({"DRA_DATA_DIR": str(data), "DRA_EMBEDDINGS": "off", **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", "corpus", *args],
        cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    return fixture.write_corpus(tmp_path / "docs")


def test_add_indexes_a_directory_and_prints_a_summary_naming_the_unreadable_file(docs, tmp_path):
    result = corpus_cli("add", "handbook", str(docs), "--title", fixture.CORPUS_TITLE, data=tmp_path / "data")

    assert result.returncode == 0, result.stderr
    summary = result.stdout
    assert summary.startswith("handbook: 10 documents, ") and "11 files seen, 10 added" in summary
    assert (
        "1 file(s) could not be read and were skipped:\n    reports/broken.pdf: is a PDF that could not be read"
        in summary
    )
    assert (tmp_path / "data/corpora/handbook.sqlite").is_file()


def test_search_json_prints_exactly_one_object_per_hit_with_the_agreed_keys(docs, tmp_path):
    data = tmp_path / "data"
    corpus_cli("add", "handbook", str(docs), data=data)

    result = corpus_cli("search", "handbook", "default flux_buffer", "--k", "3", "--json", data=data)

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert 1 <= len(lines) <= 3
    hits = [json.loads(line) for line in lines]
    assert all(list(hit) == JSON_KEYS for hit in hits)
    top = hits[0]
    assert (top["corpus"], top["path"], top["anchor"]) == ("handbook", "guide/config.html", "GUC-FLUX-BUFFER")
    assert top["title"] == "20.4. Resource Consumption › 20.4.1. Memory › flux_buffer (integer)"
    assert fixture.FLUX_QUOTE.replace("4MB", "`4MB`") in top["text"] and isinstance(top["score"], float)
    pdf = json.loads(
        corpus_cli("search", "handbook", "storage capacity GWh quarter", "--k", "1", "--json", data=data).stdout
    )
    assert (pdf["path"], pdf["anchor"]) == ("reports/grid.pdf", "page=1")


def test_search_without_json_shows_readable_titles_and_snippets(docs, tmp_path):
    data = tmp_path / "data"
    corpus_cli("add", "handbook", str(docs), "--title", fixture.CORPUS_TITLE, data=data)

    result = corpus_cli("search", "handbook", "flux_buffer", "--k", "1", data=data)

    assert (
        "1. Halvorsen Handbook — 20.4. Resource Consumption › 20.4.1. Memory › flux_buffer (integer) (guide/config.html)"
        in " ".join(result.stdout.split())
    )
    assert "**flux_buffer**" in result.stdout


SECRET = "Quarterly salaries of the board: 918,000 kroner."


def with_links_outside(docs: Path, tmp_path: Path) -> Path:
    """``docs`` with two symlinks leading outside it (a file and a folder) and one leading inside."""
    outside = tmp_path / "private"
    (outside / "hr").mkdir(parents=True)
    (outside / "board.md").write_text(f"# Board\n\n{SECRET}\n", encoding="utf-8")
    (outside / "hr" / "pay.md").write_text(f"# Pay\n\n{SECRET}\n", encoding="utf-8")
    (docs / "notes" / "board.md").symlink_to(outside / "board.md")
    (docs / "shared").symlink_to(outside / "hr", target_is_directory=True)
    (docs / "guide" / "field-guide-link.md").symlink_to(docs / "notes" / "field-guide.md")
    return docs


def test_add_stays_inside_its_directory_and_names_each_link_it_did_not_follow(docs, tmp_path):
    data = tmp_path / "data"
    with_links_outside(docs, tmp_path)

    added = corpus_cli("add", "handbook", str(docs), data=data)
    found = corpus_cli("search", "handbook", "salaries board kroner", "--json", data=data)
    reindexed = corpus_cli("reindex", "handbook", data=data)

    assert added.returncode == 0, added.stderr
    assert "11 added" in added.stdout, "the link that stays inside the directory is followed"
    assert (
        "2 symbolic link(s) lead outside the directory and were not followed (corpus add --follow-links follows "
        "them):\n    notes/board.md\n    shared" in added.stdout
    )
    assert found.returncode == 0
    assert not [line for line in found.stdout.splitlines() if "kroner" in line], (
        "nothing behind the links is searchable"
    )
    assert "0 added" in reindexed.stdout and "2 symbolic link(s) lead outside" in reindexed.stdout


def test_add_follow_links_indexes_what_links_lead_to_and_reindex_keeps_that_rule(docs, tmp_path):
    data = tmp_path / "data"
    with_links_outside(docs, tmp_path)

    added = corpus_cli("add", "handbook", str(docs), "--follow-links", data=data)
    (tmp_path / "private" / "hr" / "bonus.md").write_text(f"# Bonus\n\n{SECRET}\n", encoding="utf-8")
    reindexed = corpus_cli("reindex", "handbook", data=data)
    found = corpus_cli("search", "handbook", "salaries board kroner", "--json", data=data)

    assert added.returncode == 0 and "13 added" in added.stdout and "symbolic link" not in added.stdout
    assert "1 added" in reindexed.stdout
    paths = sorted(json.loads(line)["path"] for line in found.stdout.splitlines() if "kroner" in line)
    assert paths == ["notes/board.md", "shared/bonus.md", "shared/pay.md"]


def test_reindex_reports_what_changed(docs, tmp_path):
    data = tmp_path / "data"
    corpus_cli("add", "handbook", str(docs), data=data)
    (docs / "notes/day3.txt").unlink()

    result = corpus_cli("reindex", data=data)

    assert result.returncode == 0, result.stderr
    assert "0 added, 0 updated, 9 unchanged, 1 removed" in result.stdout
    assert "1 unchanged file(s) still cannot be read" in result.stdout


def test_a_declared_corpus_is_listed_before_it_is_indexed_and_reindex_builds_it(docs, tmp_path):
    data = tmp_path / "data"
    declared = {"DRA_CORPORA": json.dumps({"handbook": {"path": str(docs), "title": fixture.CORPUS_TITLE}})}

    listed = corpus_cli("list", data=data, env=declared)
    built = corpus_cli("reindex", "handbook", data=data, env=declared)

    assert "handbook (declared) Halvorsen Handbook" in listed.stdout and "not indexed yet" in listed.stdout
    assert built.returncode == 0 and "10 added" in built.stdout
    assert "10 documents" in corpus_cli("list", data=data, env=declared).stdout


def test_bad_input_gets_a_clear_message_and_a_nonzero_exit(docs, tmp_path):
    data = tmp_path / "data"

    bad_name = corpus_cli("add", "Hand Book", str(docs), data=data)
    no_dir = corpus_cli("add", "handbook", str(tmp_path / "nowhere"), data=data)
    not_indexed = corpus_cli("search", "handbook", "x", data=data)
    unknown = corpus_cli("reindex", "nope", data=data)
    bad_k = corpus_cli("search", "handbook", "x", "--k", "0", data=data)

    assert bad_name.returncode == 2 and "lower-case letters" in bad_name.stderr
    assert no_dir.returncode == 2 and "is not a directory" in no_dir.stderr
    assert not_indexed.returncode == 1 and "not indexed yet" in not_indexed.stderr
    assert unknown.returncode == 2 and "unknown corpus 'nope'" in unknown.stderr
    assert bad_k.returncode == 2 and "--k must be between 1 and 100" in bad_k.stderr


def test_adding_a_declared_name_from_another_directory_is_refused(docs, tmp_path):
    declared = {"DRA_CORPORA": json.dumps({"handbook": str(docs)})}

    result = corpus_cli("add", "handbook", str(tmp_path), data=tmp_path / "data", env=declared)

    assert result.returncode == 2 and "declared in DRA_CORPORA" in result.stderr


def test_remove_deletes_the_index(docs, tmp_path):
    data = tmp_path / "data"
    corpus_cli("add", "handbook", str(docs), data=data)

    removed = corpus_cli("remove", "handbook", data=data)

    assert removed.returncode == 0 and not (data / "corpora/handbook.sqlite").exists()
    assert corpus_cli("remove", "handbook", data=data).returncode == 1


def test_doctor_lists_the_corpora_and_warns_about_one_that_is_not_indexed(docs, tmp_path):
    data = tmp_path / "data"
    corpus_cli("add", "handbook", str(docs), "--title", fixture.CORPUS_TITLE, data=data)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("DRA_")}
    environ.update(
        {
            "DRA_DATA_DIR": str(data),
            "DRA_CORPORA": json.dumps({"later": str(docs)}),
            "DRA_URL": "http://127.0.0.1:9",
            "COLUMNS": "300",
        }
    )

    result = subprocess.run(
        [sys.executable, "-m", "deep_research_agent.cli", "doctor"],
        cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip

    lines = result.stdout.splitlines()
    assert any("corpora" in line and "handbook: Halvorsen Handbook (10 documents" in line for line in lines), (
        result.stdout
    )
    assert any(line.strip().startswith("!") and "corpus 'later' is not indexed yet" in line for line in lines)


def test_on_a_terminal_indexing_shows_files_passages_megabytes_and_rate(docs, tmp_path):
    import io

    from rich.console import Console

    from deep_research_agent.cli.corpus import TerminalProgress
    from deep_research_agent.corpora.catalog import index_path
    from deep_research_agent.corpora.fts5 import Fts5Index
    from deep_research_agent.corpora.indexer import index_corpus
    from deep_research_agent.settings.corpora import CorpusSpec

    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=160, color_system=None)
    index = Fts5Index("handbook", index_path(tmp_path / "data", "handbook"), writable=True)
    try:
        index_corpus(
            CorpusSpec(name="handbook", root=str(docs)),
            index,
            progress=TerminalProgress("handbook", console),
            workers=1,
        )
    finally:
        index.close()

    shown = screen.getvalue()
    assert "handbook" in shown and "/11 files" in shown and "passages" in shown and "MB/s" in shown
    assert "skipped reports/broken.pdf: is a PDF that could not be read" in shown


def test_reindex_declared_updates_only_the_declared_corpora_and_is_quiet_without_any(docs, tmp_path):
    data = tmp_path / "data"
    corpus_cli("add", "added", str(docs), data=data)
    declared = {"DRA_CORPORA": json.dumps({"handbook": str(docs)})}

    result = corpus_cli("reindex", "--declared", data=data, env=declared)
    nothing = corpus_cli("reindex", "--declared", data=data)

    assert result.returncode == 0 and result.stdout.startswith("handbook: ") and "added:" not in result.stdout
    assert nothing.returncode == 0 and nothing.stdout == ""
