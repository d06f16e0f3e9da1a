"""SVG made safe to inline in the HTML report: parsed, stripped of anything active, serialised again.

Graphviz and matplotlib both escape the text they are given (graphviz writes `&lt;` for a `<` in a DOT
label, matplotlib's SVG writer escapes text and attributes), and the report never asks them for links or
scripts. This pass makes that a property of the report rather than of two programs' versions: an element
that could run code or load anything (`script`, `foreignObject`, `image`, `a`, `iframe`, `style` with
`@import`, ...), every `on*` attribute, and every `href` that does not point inside the document are
removed, and ElementTree writes the rest with its own escaping. Standard library only.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

SVG_NS = "http://www.w3.org/2000/svg"
XLINK_NS = "http://www.w3.org/1999/xlink"
_DROP = frozenset({"script", "foreignObject", "image", "a", "iframe", "object", "embed", "audio", "video",
                   "animate", "set", "animateMotion", "animateTransform", "use-remote", "metadata", "handler",
                   "listener"})
_URL = re.compile(r"url\(\s*['\"]?(?!#)", re.I)

ET.register_namespace("", SVG_NS)
ET.register_namespace("xlink", XLINK_NS)


class UnsafeSvg(ValueError):
    """The input is not a well-formed SVG document."""


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def clean_svg(text: str | bytes, *, element_id: str | None = None, prefix: str | None = None) -> str:
    """The `<svg>` element of `text` (no XML declaration or DOCTYPE), safe to inline; `element_id` replaces
    the root's id, `prefix` is put before every inner id (and the references to it), so several SVGs in one
    page (graphviz numbers its nodes `node1`, ... in every diagram) keep distinct ids. Raises UnsafeSvg for
    input that does not parse or whose root is not `svg`."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    # DOCTYPEs (graphviz writes one) may declare entities; ElementTree does not expand external ones, but the
    # declaration is useless inline, so it goes before parsing.
    text = re.sub(r"<!DOCTYPE[^>\[]*(\[[^\]]*\])?\s*>", "", text, count=1)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise UnsafeSvg(f"not well-formed SVG: {exc}") from None
    if _local(root.tag) != "svg":
        raise UnsafeSvg(f"root element is <{_local(root.tag)}>, not <svg>")
    _clean(root)
    if prefix:
        _prefix_ids(root, prefix)
    if element_id is not None:
        root.set("id", element_id)
    return ET.tostring(root, encoding="unicode", short_empty_elements=True)


def _clean(element: ET.Element) -> None:
    index = 0
    while index < len(element):
        child = element[index]
        if isinstance(child.tag, str) and _local(child.tag) == "a":
            # A link (graphviz wraps a node with a tooltip in <a xlink:title=...>): keep what it holds, not it.
            element.remove(child)
            for k, grandchild in enumerate(list(child)):
                element.insert(index + k, grandchild)
            continue
        if not isinstance(child.tag, str) or _local(child.tag) in _DROP:
            element.remove(child)  # comments and processing instructions, and active elements
            continue
        _clean(child)
        index += 1
    for name in list(element.attrib):
        local = _local(name).lower()
        value = element.attrib[name]
        if local.startswith("on") or (local == "href" and not value.startswith("#")) or _URL.search(value):
            del element.attrib[name]
    if _local(element.tag) == "style" and element.text and ("@import" in element.text or _URL.search(element.text)):
        element.text = ""


def _prefix_ids(root: ET.Element, prefix: str) -> None:
    ids = {e.get("id") for e in root.iter() if e.get("id")}
    if not ids:
        return
    ref = re.compile(r"url\(#([^)\s]+)\)")
    for e in root.iter():
        for name, value in list(e.attrib.items()):
            local = _local(name)
            if local == "id":
                e.set(name, f"{prefix}-{value}")
            elif local == "href" and value.startswith("#") and value[1:] in ids:
                e.set(name, f"#{prefix}-{value[1:]}")
            elif "url(#" in value:
                e.set(name, ref.sub(lambda m: f"url(#{prefix}-{m.group(1)})" if m.group(1) in ids else m.group(0),
                                    value))
