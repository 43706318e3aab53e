"""What the model is told about each file a person sent: where it is, what it is, how big,
and, for small text files and PDFs, what it says.

PDF text comes from pypdf (pure Python, maintained by the py-pdf project, no system
libraries), page by page, up to the inline limit.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from pathlib import Path
from typing import IO

from harness.agent.media.inbox import InboxFile
from harness.agent.untrusted import wrap
from harness.workspace_files import read_bytes, read_text

log = logging.getLogger(__name__)
TEXT_SUFFIXES = frozenset(
    ".txt .md .markdown .csv .tsv .json .jsonl .yaml .yml .toml .ini .cfg .log .xml .html .htm "
    ".py .js .ts .tsx .jsx .java .go .rs .rb .php .c .h .cpp .hpp .cs .sh .sql .css .swift .kt "
    ".ics .vcf .srt .tex".split()
)
_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/x-yaml")


def human_size(size: int) -> str:
    """`size` bytes as a short human figure: 812 B, 45 KB, 3.2 MB."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size // 1024} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def is_text(file: InboxFile) -> bool:
    """True for files worth inlining as text, by type or by extension."""
    return file.mime_type.startswith(_TEXT_TYPES) or Path(file.path).suffix.lower() in TEXT_SUFFIXES


def describe(
    file: InboxFile, workspace: Path, inline_chars: int, *, wrapper_id: Callable[[], str]
) -> str:
    """The note about one kept file for the user message: its kind, path, type and size, then
    its text when it is a text file or a PDF whose text fits in `inline_chars` (longer text is
    cut there, with a note to read the rest with the tools). The file is read without
    following a link (`harness.workspace_files`). The text is outside content, wrapped with an
    id from `wrapper_id`, called only then (`harness.agent.untrusted`). Never raises."""
    head = f"[{file.kind} saved at {file.path} ({file.mime_type or 'unknown type'}, "
    head += f"{human_size(file.size)})"
    text: str | None = None
    try:
        if is_text(file):
            text = read_text(workspace, file.path)
        elif file.mime_type == "application/pdf" or file.path.lower().endswith(".pdf"):
            text = pdf_text(io.BytesIO(read_bytes(workspace, file.path)), inline_chars + 1)
    except OSError as exc:
        log.warning("could not read %s: %s", file.path, exc)
    if not text or not text.strip() or inline_chars == 0:
        return head + "]"
    kind = "text" if is_text(file) else "extracted text"
    source = f"{file.kind} {file.path}"
    if len(text) > inline_chars:
        note = f"first {inline_chars} characters of its {kind}; read the file for the rest"
        excerpt = wrap(text[:inline_chars], source, wrapper_id())
        return f"{head}; {note}:\n{excerpt}\n[end of excerpt]"
    return f"{head}; its {kind}:\n{wrap(text, source, wrapper_id())}\n[end of {file.path}]"


def pdf_text(path: Path | IO[bytes], limit: int) -> str:
    """The text of the PDF at `path` (or in a binary stream), pages joined by blank lines,
    stopping once `limit` characters are collected. Empty for a PDF without a text layer (a
    scan) or one pypdf cannot read; never raises for a bad file."""
    # Imported here: pypdf holds ~10 MB in every worker, and only a PDF needs it.
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(path)
        parts: list[str] = []
        total = 0
        for page in reader.pages:
            chunk = page.extract_text() or ""
            parts.append(chunk)
            total += len(chunk)
            if total >= limit:
                break
        return "\n\n".join(parts)
    except (PyPdfError, OSError, ValueError, KeyError) as exc:
        log.warning("no text from PDF %s: %s", path, exc)
        return ""
