"""``./run.sh corpus add|reindex|search|list|remove``: build, update, inspect and query the local corpora.

Contract:
- ``add NAME DIR [--title T] [--description D] [--html docs|web] [--follow-links]`` indexes a directory under
  a name and records the directory, title, description and link rule in the index, so the server offers the
  corpus with no declaration; a name declared in ``DRA_CORPORA`` keeps its declared directory (adding it
  elsewhere is refused). A symlink leading outside the directory is not followed (the summary names each
  one) unless ``--follow-links`` says so; ``reindex`` keeps the rule the corpus was added with.
- ``reindex [NAME ...]`` (every corpus when no name is given; ``--declared``: those ``DRA_CORPORA`` declares)
  reads again only the files whose size or mtime changed and drops deleted ones.
- After the keyword index, ``add`` and ``reindex`` embed the passages that have no vector yet with the
  deployment's embedder (``DRA_EMBEDDINGS``; nothing with ``off``), in batches, each committed, so the
  corpus is searchable by keywords at once and by meaning as it goes; ``--background`` leaves that pass to
  a detached ``corpus embed`` process (its output in ``<data_dir>/corpora/<name>.embedding.log``) and
  returns once the keyword index is written. ``embed [NAME ...]`` runs that pass alone. A failing embedder
  is reported and leaves keyword search working; the command still succeeds.
- Indexing shows progress on a terminal (files, passages, MB, MB/s; then passages embedded per second) on
  stderr and ends with a summary per corpus, naming each file that could not be read and why; an
  unreadable file never fails the command.
- ``search NAME QUERY [--k 10] [--json]`` prints the best passages (hybrid when the corpus is embedded with
  the deployment's embedder, whose model then loads for the query alone); with ``--json`` exactly one JSON object
  per hit and line, ``{"corpus", "path", "anchor", "title", "score", "text"}``, ``path`` relative to the
  corpus directory, ``title`` the passage's title path joined with `` › ``, ``text`` the whole passage, and
  nothing else on stdout (this output is what retrieval is evaluated on, keep it exactly).
- ``list`` shows every corpus with its counts or what is wrong with it; ``remove NAME`` deletes an index.
- Exit status: 0 on success, 1 when a corpus cannot be indexed or searched (its directory is missing, no
  index yet), 2 for unusable arguments.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, Task, TextColumn, TimeElapsedColumn
from rich.text import Text

from ..corpora.catalog import index_path, load_catalog, read_meta
from ..corpora.fts5 import Fts5Index, IndexUnavailable
from ..corpora.locator import title_of
from ..corpora.search import search_corpus
from ..corpora.vectors import EmbeddingSummary, embed_passages
from ..embeddings import Embedder, embedder_for, embedding_problem
from ..settings import CorporaSettings, EmbeddingSettings, ResearchConfig
from ..settings.corpora import CorpusSpec, name_problem
from .arguments import MAX_K

if TYPE_CHECKING:
    from ..corpora.indexer import IndexSummary

EMBEDDING_LOG = "{name}.embedding.log"


def _settings() -> tuple[CorporaSettings, EmbeddingSettings, tuple[str, ...]]:
    """The corpora and embedding settings, and the resolution's warnings about them."""
    # The run settings' warnings about other keys (a model key, a tier) are not this command's business.
    logging.getLogger("deep_research_agent.settings.resolve").setLevel(logging.ERROR)
    settings = ResearchConfig.resolve(None)
    embedding = settings.part(EmbeddingSettings)
    warnings = [w for w in settings.warnings if "DRA_CORPORA" in w or "DRA_EMBEDDING" in w]
    if problem := embedding_problem(embedding):
        warnings.append(problem)
    return settings.part(CorporaSettings), embedding, tuple(warnings)


def cmd_corpus(args: argparse.Namespace, console: Console) -> int:
    # soft_wrap: a message or a path is never broken across lines, so it can be read and searched whole.
    errors = Console(stderr=True, highlight=False, soft_wrap=True)
    console = Console(file=console.file, highlight=False, soft_wrap=True)
    settings, embedding, warnings = _settings()
    for warning in warnings:
        errors.print(f"[yellow]warning:[/] {warning}")
    declared = {spec.name: spec for spec in settings.corpora}
    data_dir = Path(settings.data_dir)
    # A search embeds one question and exits: the model loads without the optimisation that pays off over many.
    embedder = embedder_for(embedding, one_shot=args.verb == "search")
    verb = args.verb
    if verb == "add":
        return _add(args, declared, data_dir, _Embedding(embedder, args.background), errors)
    if verb == "reindex":
        return _reindex(args, declared, data_dir, _Embedding(embedder, args.background), errors)
    if verb == "embed":
        return _embed_named(args.names, declared, data_dir, embedder, errors)
    if verb == "search":
        return _search(args, declared, data_dir, embedder, console, errors)
    if verb == "list":
        return _list(declared, data_dir, console)
    return _remove(args, declared, data_dir, errors)


# --- indexing -------------------------------------------------------------------------------------


class _Rate(ProgressColumn):
    def render(self, task: Task) -> Text:
        elapsed = task.elapsed or 0.0
        read = task.fields.get("bytes", 0) / 1_048_576
        rate = read / elapsed if elapsed > 0 else 0.0
        return Text(f"{task.fields.get('passages', 0):,} passages · {read:,.1f} MB · {rate:,.1f} MB/s")


class TerminalProgress:
    """Indexing progress as a live bar on a terminal; on anything else, nothing until the summary."""

    def __init__(self, name: str, console: Console) -> None:
        self.name = name
        self.console = console
        self.live = console.is_terminal
        self.progress: Progress | None = None
        self.task = None
        self.passages = 0
        self.bytes = 0

    def start(self, files: int, total_bytes: int) -> None:
        if not self.live or not files:
            return
        self.progress = Progress(
            TextColumn(f"[bold]{self.name}[/]"),
            BarColumn(),
            TextColumn("{task.completed:,}/{task.total:,} files"),
            _Rate(),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self.progress.start()
        self.task = self.progress.add_task(self.name, total=files, passages=0, bytes=0)

    def advance(self, *, passages: int, size: int) -> None:
        self.passages += passages
        self.bytes += size
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, advance=1, passages=self.passages, bytes=self.bytes)

    def unreadable(self, path: str, reason: str) -> None:
        if self.progress is not None:
            self.progress.console.print(f"  [yellow]skipped[/] {path}: {reason}", highlight=False)

    def finish(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def start_embedding(self, passages: int) -> None:
        if not self.live or not passages:
            return
        self.progress = Progress(
            TextColumn(f"[bold]{self.name}[/] embedding"),
            BarColumn(),
            TextColumn("{task.completed:,}/{task.total:,} passages"),
            _EmbeddingRate(),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self.progress.start()
        self.task = self.progress.add_task(self.name, total=passages)

    def embedded(self, passages: int) -> None:
        if self.progress is not None and self.task is not None:
            self.progress.update(self.task, advance=passages)

    def finish_embedding(self) -> None:
        self.finish()


class _EmbeddingRate(ProgressColumn):
    def render(self, task: Task) -> Text:
        elapsed = task.elapsed or 0.0
        return Text(f"{task.completed / elapsed if elapsed > 0 else 0.0:,.1f} passages/s")


def embedding_text(name: str, summary: EmbeddingSummary) -> str:
    """The line that says what the embedding pass did."""
    if summary.failure:
        return (
            f"{name}: embedding stopped after {summary.embedded:,} passages: {summary.failure}. Keyword search works; "
            f"`./run.sh corpus embed {name}` continues where it stopped."
        )
    if not summary.embedded:
        return f"{name}: every passage is embedded ({summary.identity})."
    dropped = f" (the {summary.dropped:,} vectors of another model dropped)" if summary.dropped else ""
    return (
        f"{name}: embedded {summary.embedded:,} passages with {summary.identity} in {summary.elapsed_s:.1f} s "
        f"({summary.rate:,.1f} passages/s){dropped}."
    )


def summary_text(summary: IndexSummary) -> str:
    """The lines ``corpus add``/``reindex`` end with."""
    rate = summary.bytes_read / 1_048_576 / summary.elapsed_s if summary.elapsed_s > 0 else 0.0
    lines = [
        f"{summary.name}: {summary.documents:,} documents, {summary.passages:,} passages. This run: {summary.files:,} files "
        f"seen, {summary.added:,} added, {summary.updated:,} updated, {summary.unchanged:,} unchanged, {summary.removed:,} "
        f"removed, {summary.passages_written:,} passages written from {summary.bytes_read / 1_048_576:,.1f} MB in "
        f"{summary.elapsed_s:.1f} s ({rate:,.1f} MB/s)."
    ]
    if summary.rebuilt:
        lines.append(f"  Rebuilt from scratch: {summary.rebuilt}.")
    if summary.empty:
        lines.append(f"  {summary.empty:,} file(s) held no text beyond navigation.")
    if summary.unreadable:
        lines.append(f"  {len(summary.unreadable):,} file(s) could not be read and were skipped:")
        lines += [f"    {path}: {reason}" for path, reason in summary.unreadable]
    if summary.links_outside:
        lines.append(
            f"  {len(summary.links_outside):,} symbolic link(s) lead outside the directory and were not followed "
            "(corpus add --follow-links follows them):"
        )
        lines += [f"    {path}" for path in sorted(summary.links_outside)]
    if summary.still_unreadable:
        lines.append(f"  {summary.still_unreadable:,} unchanged file(s) still cannot be read (see an earlier run).")
    return "\n".join(lines)


@dataclass(frozen=True)
class _Embedding:
    """How ``add``/``reindex`` embed after indexing: with which embedder (None: not at all), here or detached."""

    embedder: Embedder | None
    background: bool


def _index(spec: CorpusSpec, data_dir: Path, workers: int | None, embedding: _Embedding, errors: Console) -> int:
    # Loaded here: the document readers (trafilatura, pypdf) serve indexing only, never search or list.
    from ..corpora.indexer import CorpusError, index_corpus

    try:
        index = Fts5Index(spec.name, index_path(data_dir, spec.name), writable=True)
    except IndexUnavailable as exc:
        errors.print(f"[red]error:[/] {exc}", highlight=False)
        return 1
    progress = TerminalProgress(spec.name, errors)
    try:
        summary = index_corpus(spec, index, progress=progress, workers=workers)
        print(summary_text(summary), flush=True)
        if embedding.embedder is not None and embedding.background:
            print(_embed_in_background(spec.name, data_dir), flush=True)
        elif embedding.embedder is not None:
            print(embedding_text(spec.name, embed_passages(index, embedding.embedder, progress=progress)))
    except CorpusError as exc:
        errors.print(f"[red]error:[/] {exc}", highlight=False)
        return 1
    finally:
        index.close()
    return 0


def _embed_in_background(name: str, data_dir: Path) -> str:
    """Start ``corpus embed NAME`` detached from this command, its output in the corpus's embedding log."""
    log = index_path(data_dir, name).with_name(EMBEDDING_LOG.format(name=name))
    with open(log, "ab") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "deep_research_agent.cli", "corpus", "embed", name],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return (
        f"{name}: embedding in the background (process {process.pid}, log {log}); keyword search works now, "
        "search by meaning covers more passages as it goes."
    )


def _embed_named(
    names: list[str], declared: dict[str, CorpusSpec], data_dir: Path, embedder: Embedder | None, errors: Console
) -> int:
    known = _known_specs(declared, data_dir)
    unknown = [name for name in names if name not in known]
    if unknown:
        errors.print(f"[red]error:[/] unknown corpus {', '.join(map(repr, unknown))}.", highlight=False)
        return 2
    if embedder is None:
        errors.print("[red]error:[/] no embedder: DRA_EMBEDDINGS is off (or incomplete).", highlight=False)
        return 1
    status = 0
    for name in names or list(known):
        path = index_path(data_dir, name)
        try:
            index = Fts5Index(name, path, writable=True)
        except IndexUnavailable as exc:
            errors.print(f"[red]error:[/] {exc}", highlight=False)
            status = 1
            continue
        try:
            print(
                embedding_text(name, embed_passages(index, embedder, progress=TerminalProgress(name, errors))),
                flush=True,
            )
        finally:
            index.close()
    return status


def _add(
    args: argparse.Namespace, declared: dict[str, CorpusSpec], data_dir: Path, embedding: _Embedding, errors: Console
) -> int:
    if problem := name_problem(args.name):
        errors.print(f"[red]error:[/] {problem}.", highlight=False)
        return 2
    root = Path(args.directory).expanduser().resolve()
    if not root.is_dir():
        errors.print(f"[red]error:[/] {args.directory} is not a directory.", highlight=False)
        return 2
    spec = CorpusSpec(
        name=args.name,
        root=str(root),
        title=args.title.strip(),
        description=args.description.strip(),
        html=args.html,
        follow_links=args.follow_links,
    )
    existing = declared.get(args.name)
    if existing is not None:
        if Path(existing.root) != root:
            errors.print(
                f"[red]error:[/] {args.name!r} is declared in DRA_CORPORA at {existing.root}; change the "
                "declaration or add the directory under another name.",
                highlight=False,
            )
            return 2
        spec = replace(
            existing,
            title=spec.title or existing.title,
            description=spec.description or existing.description,
            follow_links=spec.follow_links or existing.follow_links,
        )
    return _index(spec, data_dir, args.workers, embedding, errors)


def _known_specs(declared: dict[str, CorpusSpec], data_dir: Path) -> dict[str, CorpusSpec]:
    return {entry.spec.name: entry.spec for entry in load_catalog(data_dir, declared.values()).entries}


def _reindex(
    args: argparse.Namespace, declared: dict[str, CorpusSpec], data_dir: Path, embedding: _Embedding, errors: Console
) -> int:
    known = _known_specs(declared, data_dir)
    names = args.names or list(declared if args.declared else known)
    if args.declared and not names:
        return 0
    if not names:
        errors.print("No corpora yet: add one with `./run.sh corpus add NAME DIR` or declare them in DRA_CORPORA.")
        return 1
    unknown = [name for name in names if name not in known]
    if unknown:
        errors.print(
            f"[red]error:[/] unknown corpus {', '.join(map(repr, unknown))}; known: {', '.join(sorted(known)) or 'none'}.",
            highlight=False,
        )
        return 2
    status = 0
    for name in names:
        spec = known[name]
        if not spec.root:
            errors.print(
                f"[red]error:[/] the index of {name!r} records no directory; add it again with `corpus add`.",
                highlight=False,
            )
            status = 1
            continue
        status = max(status, _index(spec, data_dir, args.workers, embedding, errors))
    return status


# --- reading --------------------------------------------------------------------------------------


def _search(
    args: argparse.Namespace,
    declared: dict[str, CorpusSpec],
    data_dir: Path,
    embedder: Embedder | None,
    console: Console,
    errors: Console,
) -> int:
    if not 1 <= args.k <= MAX_K:
        errors.print(f"[red]error:[/] --k must be between 1 and {MAX_K}.")
        return 2
    path = index_path(data_dir, args.name)
    meta, problem = read_meta(args.name, path)
    if meta is None or problem:
        errors.print(f"[red]error:[/] {problem}", highlight=False)
        return 1
    index = Fts5Index(args.name, path)
    try:
        found = search_corpus(index, args.query, args.k, embedder)
    finally:
        index.close()
    hits = found.hits
    if found.note:
        errors.print(f"[yellow]note:[/] {found.note}", highlight=False)
    if args.json:
        for hit in hits:
            passage = hit.passage
            record = {
                "corpus": passage.corpus,
                "path": passage.path,
                "anchor": passage.anchor
                if passage.anchor is not None
                else (f"page={passage.page}" if passage.page else None),
                "title": " › ".join(passage.title_path),
                "score": hit.score,
                "text": passage.text,
            }
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
        return 0
    if not hits:
        console.print(f"No passage of {args.name} matches. Try other words or an exact identifier.")
        return 0
    spec = declared.get(args.name) or CorpusSpec(name=args.name, root=meta.root, title=meta.title)
    for rank, hit in enumerate(hits, 1):
        passage = hit.passage
        console.print(
            f"[bold]{rank}. {title_of(spec.display_title, passage)}[/]  [dim]score {hit.score:.2f} · {passage.id}[/]",
            highlight=False,
        )
        console.print(f"   {hit.snippet}", highlight=False, markup=False)
    embedded = f"; the query embedded in {found.embed_ms:.0f} ms" if found.method == "hybrid" else ""
    errors.print(f"[dim]{len(hits)} passages in {found.search_ms:.1f} ms ({found.method}{embedded})[/]")
    return 0


def _list(declared: dict[str, CorpusSpec], data_dir: Path, console: Console) -> int:
    catalog = load_catalog(data_dir, declared.values())
    if not catalog.entries:
        console.print(f"No corpora in {data_dir}. Add one with `./run.sh corpus add NAME DIR`.")
        return 0
    for entry in catalog.entries:
        origin = "declared" if entry.spec.name in declared else "added"
        console.print(
            f"[bold]{entry.spec.name}[/] ({origin}) {entry.spec.display_title} — {entry.spec.root or '?'}",
            highlight=False,
        )
        if entry.meta is not None:
            meta = entry.meta
            console.print(
                f"   {meta.documents:,} documents, {meta.passages:,} passages, {meta.source_bytes / 1_048_576:,.1f} MB, "
                f"indexed {meta.indexed_at or 'never'}"
                + (f", {meta.unreadable} unreadable" if meta.unreadable else ""),
                highlight=False,
            )
        if entry.problem:
            console.print(f"   [yellow]{entry.problem}[/]", highlight=False)
    return 0


def _remove(args: argparse.Namespace, declared: dict[str, CorpusSpec], data_dir: Path, errors: Console) -> int:
    path = index_path(data_dir, args.name)
    if not path.is_file():
        errors.print(f"[red]error:[/] there is no index of {args.name!r} in {data_dir}.", highlight=False)
        return 1
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    print(f"Removed the index of {args.name}.")
    if args.name in declared:
        print(f"{args.name} is still declared in DRA_CORPORA; `./run.sh corpus reindex {args.name}` builds it again.")
    return 0
