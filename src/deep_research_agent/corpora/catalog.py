"""Which corpora exist: the operator's declarations, the indexes in the data directory, and what a run sees.

Contract:
- the declarations (``DRA_CORPORA``) are the settings' (``settings/corpora.py``: ``CorpusSpec``,
  ``parse_declarations``, ``name_problem``);
- Each corpus's index is ``<data_dir>/corpora/<name>.sqlite`` (``index_path``). ``./run.sh corpus add``
  writes one and records the directory, title and description in it, so a corpus added from the command
  line needs no declaration; a declaration of the same name wins for its directory, title and description.
- ``load_catalog(data_dir, declared)`` lists every declared or indexed corpus with its index's counts
  (``CorpusEntry``); a declared corpus with no index yet, or an index that cannot be opened, is listed with
  the ``problem`` to fix. ``catalog_for(settings)`` is the same, cached for ``CATALOG_TTL_S`` and read in a
  worker thread, for the graph factory; ``Catalog.select`` narrows it to a run's ``corpora`` names.
"""

from __future__ import annotations

import asyncio
import hashlib
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..settings.corpora import DEFAULT_EXCLUDE, CorpusSpec, name_problem
from ..settings.features import CorporaSettings
from .backend import CorpusMeta
from .fts5 import Fts5Index, IndexUnavailable

INDEX_DIR = "corpora"
INDEX_SUFFIX = ".sqlite"
CATALOG_TTL_S = 5.0


def index_path(data_dir: str | Path, name: str) -> Path:
    return Path(data_dir) / INDEX_DIR / f"{name}{INDEX_SUFFIX}"


@dataclass(frozen=True)
class CorpusEntry:
    """A corpus a run could search: its spec, its index's counts, or why it cannot be searched."""

    spec: CorpusSpec
    index: Path
    meta: CorpusMeta | None = None
    problem: str | None = None

    @property
    def ready(self) -> bool:
        return self.meta is not None and self.problem is None and self.meta.passages > 0

    def describe(self) -> str:
        """One line for the orchestrator's prompt: name, title, description, size."""
        spec, meta = self.spec, self.meta
        about = f" — {spec.description}" if spec.description else ""
        size = (
            f"{meta.documents:,} documents, {meta.passages:,} passages, {meta.source_bytes / 1_048_576:.1f} MB"
            f"{', indexed ' + meta.indexed_at[:10] if meta.indexed_at else ''}"
            if meta
            else "not indexed"
        )
        return f"`{spec.name}`: {spec.display_title}{about} ({size})"


@dataclass(frozen=True)
class Catalog:
    entries: tuple[CorpusEntry, ...] = ()
    warnings: tuple[str, ...] = field(default=())

    def ready(self) -> tuple[CorpusEntry, ...]:
        return tuple(entry for entry in self.entries if entry.ready)

    def get(self, name: str) -> CorpusEntry | None:
        return next((entry for entry in self.entries if entry.spec.name == name), None)

    def select(self, names: Iterable[str]) -> Catalog:
        """The corpora a run asked for by name (all when it named none), with a warning per unknown name."""
        wanted = [name.strip() for name in names if name.strip()]
        if not wanted:
            return self
        known = {entry.spec.name for entry in self.entries}
        unknown = [name for name in wanted if name not in known]
        warnings = list(self.warnings)
        if unknown:
            warnings.append(
                f"configurable.corpora names {', '.join(map(repr, unknown))}, which this server does not have; "
                f"known corpora: {', '.join(sorted(known)) or 'none'}."
            )
        return Catalog(tuple(e for e in self.entries if e.spec.name in wanted), tuple(warnings))

    def digest(self) -> str:
        """What about the corpora shapes a graph: names, titles, descriptions, counts and index times."""
        payload = [
            (e.spec, e.problem, e.meta and (e.meta.documents, e.meta.passages, e.meta.source_bytes, e.meta.indexed_at))
            for e in self.entries
        ]
        return hashlib.sha256(repr((payload, self.warnings)).encode()).hexdigest()[:16]


def _recorded_spec(meta: CorpusMeta) -> CorpusSpec:
    return CorpusSpec(
        name=meta.name,
        root=meta.root,
        title=meta.title,
        description=meta.description,
        html=meta.html or "docs",
        exclude=meta.exclude or DEFAULT_EXCLUDE,
        follow_links=meta.follow_links,
    )


def read_meta(name: str, path: Path) -> tuple[CorpusMeta | None, str | None]:
    """The index's description of itself, or the problem that keeps it from being read."""
    if not path.is_file():
        return None, f"corpus {name!r} is not indexed yet: run `./run.sh corpus reindex {name}`."
    try:
        index = Fts5Index(name, path)
    except (IndexUnavailable, OSError) as exc:
        return None, str(exc)
    except Exception as exc:  # noqa: BLE001 - a damaged file must not stop the others
        return (
            None,
            f"the index of corpus {name!r} cannot be read ({type(exc).__name__}); run `./run.sh corpus reindex {name}`.",
        )
    try:
        return index.meta(), None
    finally:
        index.close()


def load_catalog(data_dir: str | Path, declared: Iterable[CorpusSpec]) -> Catalog:
    """Every declared or indexed corpus, declared ones first (in declaration order), then indexed by name."""
    entries: list[CorpusEntry] = []
    seen: set[str] = set()
    for spec in declared:
        path = index_path(data_dir, spec.name)
        meta, problem = read_meta(spec.name, path)
        if meta is not None and problem is None and meta.root and Path(meta.root) != Path(spec.root):
            problem = (
                f"corpus {spec.name!r} is declared at {spec.root} but indexed from {meta.root}: "
                f"run `./run.sh corpus reindex {spec.name}`."
            )
        entries.append(CorpusEntry(spec=spec, index=path, meta=meta, problem=problem))
        seen.add(spec.name)
    folder = Path(data_dir) / INDEX_DIR
    recorded = sorted(folder.glob(f"*{INDEX_SUFFIX}")) if folder.is_dir() else []
    for path in recorded:
        name = path.name.removesuffix(INDEX_SUFFIX)
        if name in seen or name_problem(name):
            continue
        meta, problem = read_meta(name, path)
        spec = _recorded_spec(meta) if meta else CorpusSpec(name=name, root="")
        entries.append(CorpusEntry(spec=replace(spec, name=name), index=path, meta=meta, problem=problem))
    warnings = tuple(entry.problem for entry in entries if entry.problem)
    return Catalog(tuple(entries), warnings)


_cache: dict[tuple[str, tuple[CorpusSpec, ...]], tuple[float, Catalog]] = {}
_cache_lock = threading.Lock()


def cached_catalog(data_dir: str, declared: tuple[CorpusSpec, ...], *, ttl: float = CATALOG_TTL_S) -> Catalog:
    key = (data_dir, declared)
    now = time.monotonic()
    with _cache_lock:
        hit = _cache.get(key)
        if hit and now - hit[0] < ttl:
            return hit[1]
    catalog = load_catalog(data_dir, declared)
    with _cache_lock:
        _cache[key] = (now, catalog)
        while len(_cache) > 16:
            _cache.pop(next(iter(_cache)))
    return catalog


async def catalog_for(settings: CorporaSettings) -> Catalog:
    """The corpora of a run's settings (``corpora`` declared, ``data_dir``, ``corpus_names`` chosen),
    read off the event loop: listing and opening index files is blocking I/O."""
    declared = tuple(settings.corpora)
    data_dir = str(settings.data_dir)
    with _cache_lock:
        hit = _cache.get((data_dir, declared))
    if hit and time.monotonic() - hit[0] < CATALOG_TTL_S:
        catalog = hit[1]
    else:
        catalog = await asyncio.to_thread(cached_catalog, data_dir, declared)
    return catalog.select(settings.corpus_names)
