"""A small corpus the tests write: one document per format, shaped like the documentation sets users index.

``write_corpus(root)`` creates it and returns ``root``. Its facts (``FACTS``) are each in exactly one
passage, so a test can search for one and check what it read; one of them (``DORMANT_QUOTE``) is meant to
be found by meaning (``PARAPHRASE``), and a Word report and an Excel workbook (``testkit/office.py``) sit
in ``office/``. Besides the documents there is a PDF that
cannot be read, a hidden folder and a Sphinx ``_static`` folder, which indexing must skip or report.
"""

from __future__ import annotations

from pathlib import Path

from testkit.office import docx_bytes, xlsx_bytes
from testkit.web import make_pdf

CORPUS_NAME = "handbook"
CORPUS_TITLE = "Halvorsen Handbook"

FLUX_QUOTE = "The default value is four megabytes (4MB)"
LIMIT_QUOTE = "columns per table | 1,600"
CONNECT_QUOTE = "How many seconds the connection should wait before raising an exception"
PDF_QUOTE = "Installed storage capacity reached 7.4 GWh in the third quarter."
# Found by meaning: PARAPHRASE asks for it in words it does not hold (no word of it but "the" and "it").
DORMANT_QUOTE = (
    "A gauge that has been powered down for more than 72 hours must be recalibrated before it reports again."
)
PARAPHRASE = "How long can the instrument stay switched off until it has to be adjusted anew?"

# A DocBook page (like PostgreSQL's): an appendix with a table, page chrome around it.
LIMITS_HTML = """<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml"><head><title>Appendix K. Halvorsen Limits</title></head>
<body id="docContent"><div class="navheader"><a href="index.html">Prev</a> Up Home Next</div>
<div class="appendix" id="LIMITS"><div class="titlepage"><div><div><h2 class="title">Appendix K. Halvorsen Limits</h2></div></div></div>
<p>Table K.1 describes various hard limits of the Halvorsen engine.</p>
<div class="table" id="LIMITS-TABLE"><p class="title"><strong>Table K.1. Halvorsen Limitations</strong></p>
<table><tr><th>Item</th><th>Upper Limit</th></tr><tr><td>columns per table</td><td>1,600</td></tr>
<tr><td>field size</td><td>1 GB</td></tr></table></div></div>
<div class="navfooter"><a href="next.html">Next page in the navigation footer</a></div></body></html>
"""

# A DocBook configuration page: each setting is a variablelist entry with an id.
CONFIG_HTML = """<!DOCTYPE html><html><head><title>20.4. Resource Consumption</title></head><body>
<div class="sect1" id="RUNTIME-CONFIG-RESOURCE"><div class="titlepage"><h2 class="title">20.4. Resource Consumption</h2></div>
<div class="sect2" id="RUNTIME-CONFIG-RESOURCE-MEMORY"><div class="titlepage"><h3 class="title">20.4.1. Memory</h3></div>
<div class="variablelist"><dl class="variablelist">
<dt id="GUC-FLUX-BUFFER"><span class="term"><code class="varname">flux_buffer</code> (<code class="type">integer</code>)</span></dt>
<dd><p>Sets the base maximum amount of memory used by a flux operation before writing to temporary files.
The default value is four megabytes (<code class="literal">4MB</code>).</p></dd>
<dt id="GUC-TIDE-WORKERS"><span class="term"><code class="varname">tide_workers</code> (<code class="type">integer</code>)</span></dt>
<dd><p>Sets the number of tide workers. The default is eight workers. This parameter can only be set at server start,
and each worker reserves its own share of the flux memory described above for the whole of its lifetime.</p></dd>
</dl></div></div></div></body></html>
"""

# A Sphinx page (like Python's): sections with ids, an object signature, sidebar and pilcrows.
MODULE_HTML = """<!DOCTYPE html><html><head><title>tidal — Tidal gauge access — Halvorsen 2.1 documentation</title></head>
<body><div class="related" role="navigation"><ul><li><a href="index.html">index</a></li><li><a href="modules.html">modules</a></li></ul></div>
<div class="document"><div class="body" role="main">
<section id="module-tidal"><h1>tidal — Tidal gauge access<a class="headerlink" href="#module-tidal">¶</a></h1>
<p>The tidal module reads gauges over the network.</p>
<section id="module-functions"><span id="tidal-functions"></span><h2>Module functions<a class="headerlink" href="#module-functions">¶</a></h2>
<dl class="py function"><dt class="sig sig-object py" id="tidal.connect"><span class="sig-prename">tidal.</span><span class="sig-name">connect</span>(<em>gauge</em>, <em>timeout=5.0</em>)<a class="headerlink" href="#tidal.connect">¶</a></dt>
<dd><p>Open a connection to a tidal gauge.</p><ul><li><p><strong>timeout</strong> (float) – How many seconds the connection should wait before raising an exception, if the gauge is busy. Default five seconds.</p></li></ul></dd></dl>
</section></section></div></div>
<div class="sphinxsidebar" role="navigation"><h3>Navigation</h3><p>Sidebar text that must not be indexed.</p></div>
<div class="footer">© Copyright footer text.</div></body></html>
"""

MARKDOWN = """---
title: Field Guide
---

# Field Guide

Intro paragraph of the field guide.

## Calibration

Calibrate the kelp sensor every 14 days.

```
sensor.calibrate(days=14)
```

## Calibration

A second section with the same heading gets its own anchor.
"""

RST = """History
=======

.. _early-years:

Early years
-----------

The first gauge was installed at Kvam in 1921.

Later years
-----------

Gauges were automated in 1968.
"""

TEXT = "Field notes, day 3.\n\nThe river gauge at Kvam read 2.41 metres at dawn.\n\nWind from the south-west.\n"

FACTS = {
    "flux_buffer": FLUX_QUOTE,
    "limits": LIMIT_QUOTE,
    "connect": CONNECT_QUOTE,
    "pdf": PDF_QUOTE,
    "dormant": DORMANT_QUOTE,
}


def write_corpus(root: Path) -> Path:
    files = {
        "guide/limits.html": LIMITS_HTML,
        "guide/config.html": CONFIG_HTML,
        "api/tidal.html": MODULE_HTML,
        "notes/field-guide.md": MARKDOWN,
        "notes/history.rst": RST,
        "notes/day3.txt": TEXT,
        "notes/maintenance.md": f"# Maintenance\n\n## Recalibration\n\n{DORMANT_QUOTE}\n",
        ".hidden/secret.md": "# Secret\n\nNever indexed: hidden folder.\n",
        "_static/theme.html": "<html><body><h1>Theme</h1><p>Never indexed: a Sphinx asset folder.</p></body></html>",
        "images/logo.png": "not a document",
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "reports").mkdir(parents=True, exist_ok=True)
    (root / "reports/grid.pdf").write_bytes(
        make_pdf(
            [
                ("Quarterly Grid Storage Report", PDF_QUOTE, "Utility-scale sites: 38."),
                ("Outlook", "Operators expect 11.9 GWh by the end of next year."),
            ],
            "Quarterly Grid Storage Report",
        )
    )
    (root / "reports/broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a PDF\n")
    (root / "office").mkdir(parents=True, exist_ok=True)
    (root / "office/kelp-review.docx").write_bytes(docx_bytes())
    (root / "office/harvest.xlsx").write_bytes(xlsx_bytes())
    return root
