"""Small PDF files with a text layer, built with pypdf, for tests that read documents."""

from __future__ import annotations

from pathlib import Path

from pypdf import PdfWriter
from pypdf.generic import DictionaryObject, NameObject, StreamObject


def write_pdf(path: Path, *pages: str) -> None:
    """A PDF with one page per text of `pages`, each drawn with a standard font."""
    writer = PdfWriter()
    font = writer._add_object(  # a Type1 base font needs no embedding
        _dictionary(Type="/Font", Subtype="/Type1", BaseFont="/Helvetica")
    )
    for text in pages:
        page = writer.add_blank_page(width=300, height=100)
        page[NameObject("/Resources")] = _dictionary(Font=_dictionary(F1=font))
        content = StreamObject()
        content.set_data(f"BT /F1 12 Tf 20 50 Td ({text}) Tj ET".encode())
        page[NameObject("/Contents")] = writer._add_object(content)
    with path.open("wb") as out:
        writer.write(out)


def _dictionary(**items: object) -> DictionaryObject:
    return DictionaryObject(
        {
            NameObject(f"/{key}"): value if not isinstance(value, str) else NameObject(value)
            for key, value in items.items()
        }
    )
