"""The `web_fetch` tool: one web page as readable text. The only module here touching HTTP."""

from __future__ import annotations

import ipaddress
import socket
import time

import httpx2
from pydantic import Field

from harness.tools.base import Tool, ToolContext, ToolParams
from harness.tools.errors import ToolError
from harness.tools.files import SNIFF_BYTES, looks_binary

MAX_BODY_BYTES = 2 * 1024 * 1024
DEFAULT_MAX_CHARS = 50_000
USER_AGENT = "Mozilla/5.0 (compatible; Harness/0.1; agent web_fetch)"
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/ecmascript",
        "application/x-yaml",
        "application/yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/graphql",
        "application/x-ndjson",
    }
)


class WebFetchParams(ToolParams):
    """Arguments of the web_fetch tool."""

    url: str = Field(description="The http:// or https:// URL to fetch.")
    max_chars: int = Field(
        default=DEFAULT_MAX_CHARS,
        ge=100,
        le=200_000,
        description="Most characters of page text to return.",
    )


class WebFetchTool(Tool[WebFetchParams]):
    """GET a URL (redirects followed) and return its text: HTML made readable, text as is.

    Only http/https. The body is read up to 2 MB, then cut with a note; the text is cut at
    `max_chars`. A non-2xx status, a binary content type, a network failure and a timeout are
    `ToolError`s. Bounded in time by httpx2's per-operation timeout and a total deadline, as
    the registry cannot stop a thread. Unless `allow_private`, every request (redirects too)
    to a host that resolves to a loopback, private, link-local or otherwise non-public
    address is refused, so a page the model reads cannot steer it into the fleet's own
    network (Redis, cloud metadata). A DNS answer that changes between the check and the
    connection is not caught.
    """

    name = "web_fetch"
    description = (
        "Fetch a web page or text document over http(s) and return it as readable text "
        "(HTML is converted; scripts and navigation dropped). Binary content is refused."
    )
    parameters = WebFetchParams
    timeout = 60.0
    outside_content = True

    def __init__(
        self,
        request_timeout: float = 30.0,
        total_seconds: float = 45.0,
        max_body_bytes: int = MAX_BODY_BYTES,
        *,
        allow_private: bool = False,
    ) -> None:
        self.allow_private = allow_private
        self.request_timeout = request_timeout
        self.total_seconds = total_seconds
        self.max_body_bytes = max_body_bytes

    def run(self, params: WebFetchParams, ctx: ToolContext) -> str:
        """Fetch the page; see the class docstring."""
        url = params.url.strip()
        try:
            scheme = httpx2.URL(url).scheme
        except httpx2.InvalidURL as exc:
            raise ToolError(f"invalid URL {url!r}: {exc}") from None
        if scheme not in ("http", "https"):
            raise ToolError(f"only http and https URLs can be fetched, not {url!r}")
        try:
            with (
                httpx2.Client(
                    timeout=self.request_timeout,
                    follow_redirects=True,
                    headers={"User-Agent": USER_AGENT},
                    event_hooks={"request": [] if self.allow_private else [_refuse_private]},
                ) as client,
                client.stream("GET", url) as response,
            ):
                return self._read(response, params.max_chars, ctx)
        except httpx2.TimeoutException:
            raise ToolError(f"fetching {url} timed out") from None
        except httpx2.TooManyRedirects:
            raise ToolError(f"fetching {url} failed: too many redirects") from None
        except httpx2.HTTPError as exc:
            raise ToolError(f"fetching {url} failed: {type(exc).__name__}: {exc}") from None

    def _read(self, response: httpx2.Response, max_chars: int, ctx: ToolContext) -> str:
        url = str(response.url)
        if not response.is_success:
            reason = f" {response.reason_phrase}" if response.reason_phrase else ""
            raise ToolError(f"HTTP {response.status_code}{reason} from {url}")
        mime = response.headers.get("content-type", "").split(";")[0].strip().lower()
        kind = _kind(mime)
        if kind == "binary":
            raise ToolError(f"{url} is {mime}, not text; web_fetch only reads HTML and text")
        body, cut = self._body(response, ctx)
        if kind == "unknown" and looks_binary(body[:SNIFF_BYTES]):
            raise ToolError(f"{url} looks like binary data; web_fetch only reads HTML and text")
        header = f"URL: {url}\n"
        if kind == "html":
            # Imported here: BeautifulSoup (~0.1 s) is for a page fetched, not for every
            # process that lists the tools (`harness agents`)
            from harness.tools.html_text import html_to_text

            title, text = html_to_text(body, response.charset_encoding)
            header += f"Title: {title}\n" if title else ""
        else:
            text = _decode(body, response.charset_encoding)
        notes = []
        if cut:
            notes.append(
                f"the response is larger than {self.max_body_bytes // 1024} KB; "
                "only its beginning was read"
            )
        if len(text) > max_chars:
            notes.append(f"text cut at {max_chars} of {len(text)} characters")
            text = text[:max_chars]
        footer = "".join(f"\n\n[{note}]" for note in notes)
        return f"{header}\n{text or '(no text content)'}{footer}"

    def _body(self, response: httpx2.Response, ctx: ToolContext) -> tuple[bytes, bool]:
        """Read at most `max_body_bytes`; return them and whether the body was longer."""
        deadline = time.monotonic() + self.total_seconds
        body = bytearray()
        for chunk in response.iter_bytes():
            if ctx.cancelled():
                raise ToolError("web_fetch was cancelled")
            if time.monotonic() > deadline:
                raise ToolError(
                    f"fetching {response.url} took longer than {self.total_seconds:g} s"
                )
            body += chunk
            if len(body) > self.max_body_bytes:
                return bytes(body[: self.max_body_bytes]), True
        return bytes(body), False


def _kind(mime: str) -> str:
    if not mime:
        return "unknown"
    if mime in ("text/html", "application/xhtml+xml"):
        return "html"
    if mime.startswith("text/") or mime in _TEXT_TYPES or mime.endswith(("+json", "+xml")):
        return "text"
    return "binary"


def _decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")


def _addresses(host: str, port: int) -> list[str]:
    """The IP addresses `host` resolves to. Raises `ToolError` when it does not resolve."""
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except OSError as exc:
        raise ToolError(f"cannot resolve {host!r}: {exc}") from None
    return [str(info[4][0]) for info in infos]


def _refuse_private(request: httpx2.Request) -> None:
    """Raise `ToolError` when the request's host resolves to a non-public address."""
    host = request.url.host
    for raw in _addresses(host, request.url.port or 80):
        address = ipaddress.ip_address(raw)
        if not address.is_global:
            raise ToolError(
                f"refusing to fetch {request.url}: {host} is a private or local address "
                f"({address}); set AGENT_FETCH_PRIVATE_NETWORKS=true to allow it"
            )
