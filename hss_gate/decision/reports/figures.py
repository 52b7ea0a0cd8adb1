"""The reports' pictures as inline SVG, drawn with matplotlib: the same inputs give the same
bytes on any machine, and a page that shows them fetches nothing.

`picture` draws one matplotlib `Figure` (never pyplot: no global figure registry, nothing kept
between calls) inside one style context, and makes its SVG fit to sit in an HTML page:

- matplotlib's own defaults, not a user's matplotlibrc, plus the few settings in `STYLE`;
- `svg.hashsalt` fixed: the ids matplotlib writes (clip paths, markers) are hashes of it and
  of the content, random without it;
- no metadata: no date, and no creator (its URL), title or RDF namespaces;
- `svg.fonttype` "none": text stays text (`<text>` elements), so a reader can select and
  search it, a screen reader reads it and no glyph outline of any machine's font file enters
  the bytes; the layout measures it with DejaVu Sans as matplotlib bundles it (a bundled font
  is found before a system copy of the same name), and the browser draws it with DejaVu Sans
  or its own sans-serif. "path" would embed the outlines (the same look everywhere) at
  several times the size, as unselectable shapes;
- `text.parse_math` off: a "$" in a category or a model id is text, never mathtext.

Then: the XML prolog and the namespace declarations go (the HTML parser puts an inline `<svg>`
in the SVG namespace itself), `xlink:href` becomes `href`, the indentation goes, an id that
nothing refers to goes and the others take the picture's name as a prefix (several pictures in
one page never share an id), matplotlib's one style rule is scoped to the picture, and the root
gets `role="img"`, an `aria-label`, a `<title>` and a `<desc>` (the text alternative; the
reports keep the numbers in a table beside each picture). The page needs no script, font or
style sheet from anywhere.
"""

from __future__ import annotations

import html
import io
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Any

HASH_SALT = "hss-gate"
STYLE: dict[str, Any] = {
    "svg.hashsalt": HASH_SALT,
    "svg.fonttype": "none",
    "font.family": ["sans-serif"],
    "font.sans-serif": ["DejaVu Sans"],
    "font.size": 9,
    "text.parse_math": False,
    "text.usetex": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": "#e3e3e3",
    "legend.frameon": False,
}
NO_METADATA = {"Date": None, "Creator": None, "Format": None, "Type": None}

# colours told apart without colour vision too (each also has its own marker or line style)
CANDIDATE = "#d55e00"
PRODUCTION = "#0072b2"
GOOD = "#176f2c"
BAD = "#b00020"
NEUTRAL = "#555555"

_NAME = re.compile(r"[a-z][a-z0-9-]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f\s]+")


def label(text: Any, limit: int = 36) -> str:
    """A text as a picture shows it: on one line, control characters as spaces, at most `limit`
    characters (cut with an ellipsis; the table beside the picture has it whole)."""
    flat = _CONTROL.sub(" ", str(text)).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def picture(
    name: str,
    size: tuple[float, float],
    draw: Callable[[Any], None],
    title: str,
    description: str,
) -> str:
    """The figure `draw(figure)` draws (`size` in inches), as an inline `<svg>` element with
    the id `name` and its text alternative: `title` (short) and `description` (the numbers)."""
    from matplotlib import rc_context, style
    from matplotlib.figure import Figure

    if not _NAME.fullmatch(name):
        raise ValueError(f"a picture's name is lower-case letters, digits and '-': {name!r}")
    buffer = io.StringIO()
    with (
        style.context("default"),
        rc_context(STYLE | {"svg.id": name}),
        warnings.catch_warnings(),
    ):
        # a character DejaVu Sans lacks is measured as a box; the browser draws it
        warnings.filterwarnings("ignore", r"Glyph \d+ .*missing from font", UserWarning)
        figure = Figure(figsize=size, layout="constrained")
        draw(figure)
        figure.savefig(buffer, format="svg", metadata=NO_METADATA)
    return inline(buffer.getvalue(), name, title, description)


def rows_picture(
    name: str,
    rows: Sequence[Any],
    height: tuple[float, float],
    draw: Callable[[Any, Sequence[Any]], None],
    title: str,
    describe: Callable[[Sequence[Any]], str],
) -> str:
    """A `picture` with a row per item of `rows`, 6.4 inches wide and `height` (inches at
    least, inches a row) tall, drawn by `draw(figure, rows)` and described by `describe(rows)`;
    "" without rows."""
    if not rows:
        return ""
    base, per_row = height
    size = (6.4, base + per_row * len(rows))
    return picture(name, size, lambda figure: draw(figure, rows), title, describe(rows))


def inline(svg: str, name: str, title: str, description: str) -> str:
    """matplotlib's SVG document as an element for an HTML page (see the module's docstring)."""
    body = svg[svg.index("<svg") :].strip()
    used = set(re.findall(r'href="#([^"]+)"|url\(#([^)]+)\)', body))
    referenced = {a or b for a, b in used}
    # only tags are rewritten: a text's own characters (escaped by matplotlib) stay as they are
    body = re.sub(r"<[^<>]+>", lambda m: _tag(m.group(0), name, referenced), body)
    body = re.sub(r">\s+<", "><", body)  # the indentation between elements
    body = body.replace('<style type="text/css">*{', f'<style type="text/css">#{name} *{{')
    esc = html.escape
    head_end = body.index(">") + 1
    head = body[: head_end - 1] + f' role="img" aria-label="{esc(title)}">'
    alternative = f"<title>{esc(title)}</title><desc>{esc(description)}</desc>"
    return head + alternative + body[head_end:]


def _tag(tag: str, name: str, referenced: set[str]) -> str:
    """One tag: no namespace declarations, `href` for `xlink:href`, whitespace collapsed; the
    root keeps its id `name`, an inner id that something refers to takes the picture's name as
    a prefix (as do the references), any other inner id goes."""
    tag = re.sub(r'\s+xmlns(?::\w+)?="[^"]*"', "", tag).replace("xlink:href=", "href=")
    tag = re.sub(r'\s+"', '"', re.sub(r"\s+", " ", tag))  # a path's points on one line

    def identifier(match: re.Match[str]) -> str:
        value = match.group(1)
        if value == name:
            return match.group(0)
        return f' id="{name}-{value}"' if value in referenced else ""

    tag = re.sub(r' id="([^"]+)"', identifier, tag)
    tag = re.sub(r'\bhref="#([^"]+)"', lambda m: f'href="#{name}-{m.group(1)}"', tag)
    return re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{name}-{m.group(1)})", tag)
