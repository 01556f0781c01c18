"""Specification of which corpora a server and a run have: declarations, indexes, per-run choice, settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deep_research_agent.corpora.catalog import index_path, load_catalog
from deep_research_agent.corpora.fts5 import Fts5Index
from deep_research_agent.corpora.indexer import index_corpus
from deep_research_agent.settings import ResearchConfig
from deep_research_agent.settings.corpora import DEFAULT_EXCLUDE, CorpusSpec, parse_declarations
from deep_research_agent.settings.resolve import PROJECT_ROOT
from testkit import corpus as fixture

KEY = {"OPENAI_API_KEY": "sk-test"}


def test_a_declaration_maps_names_to_directories_or_to_objects_with_a_title_and_description(tmp_path):
    specs, warnings = parse_declarations(
        json.dumps(
            {
                "pg15": str(tmp_path),
                "notes": {"path": str(tmp_path), "title": "Team notes", "description": "Our wiki", "html": "web"},
                "shared": {"path": str(tmp_path), "follow_links": True},
            }
        )
    )

    assert warnings == []
    assert specs == (
        CorpusSpec(name="pg15", root=str(tmp_path.resolve())),
        CorpusSpec(name="notes", root=str(tmp_path.resolve()), title="Team notes", description="Our wiki", html="web"),
        CorpusSpec(name="shared", root=str(tmp_path.resolve()), follow_links=True),
    )
    assert specs[0].exclude == DEFAULT_EXCLUDE and specs[0].display_title == "pg15"
    assert not specs[0].follow_links, "a corpus stays inside its directory unless its declaration says otherwise"


def test_a_declaration_can_live_in_a_file_whose_relative_paths_start_at_the_file(tmp_path):
    (tmp_path / "docs").mkdir()
    declarations = tmp_path / "corpora.json"
    declarations.write_text(json.dumps({"docs": "docs"}), encoding="utf-8")

    specs, warnings = parse_declarations(str(declarations))

    assert warnings == [] and specs[0].root == str((tmp_path / "docs").resolve())


@pytest.mark.parametrize(
    "raw, warning",
    [
        ("{not json", "is not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('["a"]', "must be a JSON object"),
        ('{"Bad Name": "/tmp"}', "is not usable: use lower-case letters"),
        ('{"docs": {"title": "no path"}}', "has no path"),
        ('{"docs": {"path": "/tmp", "html": "pdf"}}', "use 'docs' (documentation sites) or 'web'"),
        ('{"docs": 3}', "must be a directory or an object with a path"),
        ('{"docs": {"path": "/tmp", "follow_links": "yes"}}', "follow_links must be true or false"),
        ("/no/such/corpora.json", "cannot be read"),
    ],
)
def test_an_unusable_declaration_is_dropped_with_a_warning_that_says_what_to_fix(raw, warning):
    specs, warnings = parse_declarations(raw)

    assert specs == () and len(warnings) == 1 and warning in warnings[0]


def test_the_settings_carry_the_declared_corpora_the_data_dir_and_a_runs_choice():
    settings = ResearchConfig.resolve(
        {"configurable": {"corpora": ["pg15"], "corpus_max_results": 4}},
        {**KEY, "DRA_CORPORA": json.dumps({"pg15": "/usr/share/doc"}), "DRA_DATA_DIR": "var/corpora-data"},
    )

    assert [spec.name for spec in settings.corpora] == ["pg15"]
    assert settings.corpus_names == ("pg15",) and settings.corpus_max_results == 4
    assert settings.data_dir == str((PROJECT_ROOT / "var/corpora-data").resolve())


def test_a_run_cannot_declare_a_corpus_directory_and_a_bad_choice_warns():
    settings = ResearchConfig.resolve({"configurable": {"corpora": {"evil": "/etc"}, "DRA_CORPORA": "{}"}}, KEY)

    assert settings.corpora == () and settings.corpus_names == ()
    assert any("configurable.corpora must be a list of corpus names" in w for w in settings.warnings)


def test_the_graph_cache_key_changes_with_the_declared_corpora():
    plain = ResearchConfig.resolve(None, KEY)
    with_corpus = ResearchConfig.resolve(None, {**KEY, "DRA_CORPORA": json.dumps({"pg15": "/usr/share/doc"})})

    assert plain.cache_key() != with_corpus.cache_key()


def index_fixture(tmp_path: Path, name: str = "handbook", **spec) -> CorpusSpec:
    root = fixture.write_corpus(tmp_path / f"docs-{name}")
    corpus = CorpusSpec(name=name, root=str(root), **spec)
    index = Fts5Index(name, index_path(tmp_path / "data", name), writable=True)
    index_corpus(corpus, index, workers=1)
    index.close()
    return corpus


def test_the_catalog_lists_declared_corpora_and_those_added_from_the_command_line(tmp_path):
    added = index_fixture(tmp_path, "handbook", title=fixture.CORPUS_TITLE, description="Engine manuals")
    declared = CorpusSpec(name="later", root=str(tmp_path))

    catalog = load_catalog(tmp_path / "data", [declared])

    later, handbook = catalog.entries
    assert (
        later.spec == declared
        and not later.ready
        and "not indexed yet: run `./run.sh corpus reindex later`" in later.problem
    )
    assert handbook.ready and handbook.spec.title == fixture.CORPUS_TITLE and handbook.spec.root == added.root
    assert catalog.ready() == (handbook,) and catalog.warnings == (later.problem,)
    line = handbook.describe()
    assert line.startswith("`handbook`: Halvorsen Handbook — Engine manuals (10 documents, ") and "passages" in line


def test_a_declared_corpus_indexed_from_another_directory_asks_for_a_reindex(tmp_path):
    index_fixture(tmp_path, "handbook")

    entry = load_catalog(tmp_path / "data", [CorpusSpec(name="handbook", root=str(tmp_path / "elsewhere"))]).entries[0]

    assert not entry.ready and "run `./run.sh corpus reindex handbook`" in entry.problem


def test_a_run_narrows_the_catalog_by_name_and_unknown_names_warn(tmp_path):
    index_fixture(tmp_path, "handbook")
    index_fixture(tmp_path, "atlas")
    catalog = load_catalog(tmp_path / "data", [])

    chosen = catalog.select(["atlas", "nope"])

    assert [e.spec.name for e in chosen.entries] == ["atlas"]
    assert any("'nope'" in w and "known corpora: atlas, handbook" in w for w in chosen.warnings)
    assert catalog.select([]) is catalog
    assert chosen.digest() != catalog.digest()


def test_a_damaged_index_file_is_listed_with_its_problem_and_does_not_hide_the_others(tmp_path):
    index_fixture(tmp_path, "handbook")
    (tmp_path / "data/corpora/broken.sqlite").write_bytes(b"not a database at all" * 100)

    catalog = load_catalog(tmp_path / "data", [])

    broken = catalog.get("broken")
    assert broken is not None and not broken.ready and "reindex broken" in broken.problem
    assert catalog.get("handbook").ready
