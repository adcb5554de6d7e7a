"""The screen model: what one hierarchy dump shows, as elements (phone/parse.py builds it from
XML, phone/render.py writes it as the text the model reads and reads that text back).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

Bounds = tuple[int, int, int, int]

# Resource ids whose short name says nothing the text does not already say.
_GENERIC_IDS = frozenset(
    {"title", "summary", "text", "text1", "text2", "icon", "content", "message", "label",
     "subtitle", "widget_frame", "icon_frame", "text_frame", "list", "image"}
)


def short_id(rid: str) -> str:
    return rid.split(":id/", 1)[-1] if ":id/" in rid else rid.rsplit("/", 1)[-1]


def informative_id(short: str) -> bool:
    if not short or short in _GENERIC_IDS or "obfuscated" in short:
        return False
    return len(short) >= 3 and any(c.isalpha() for c in short)



@dataclass(slots=True)
class Element:
    index: int
    cls: str  # short class name: Switch, TextView, View, ...
    text: str  # primary text: own text, else the first merged text, else a borrowed row title
    desc: str  # content-desc (own, else the first merged one)
    rid: str  # short resource id ("switch_widget")
    resource_id: str  # full resource id ("android:id/switch_widget")
    bounds: Bounds
    center: tuple[int, int]
    package: str
    checkable: bool = False
    checked: bool = False
    selected: bool = False
    enabled: bool = True
    focused: bool = False
    clickable: bool = False
    long_clickable: bool = False
    scrollable: bool = False
    editable: bool = False
    password: bool = False
    slider: bool = False
    hint: str = ""
    texts: list[str] = field(default_factory=list)  # all texts, primary first
    descs: list[str] = field(default_factory=list)  # all descs not equal to a text
    resource_ids: list[str] = field(default_factory=list)  # full ids of everything merged in
    window: int = 0  # index of the top-level window the element is in
    label_from_row: bool = False  # `text` was borrowed from the row's title
    list_item: bool = False

    @property
    def affordances(self) -> list[str]:
        out = []
        if self.clickable or (self.checkable and not self.editable):
            out.append("tap")
        if self.long_clickable:
            out.append("long-press")
        if self.editable:
            out.append("type")
        if self.scrollable:
            out.append("scroll")
        if self.slider:
            out.append("slide")
        return out

    @property
    def actionable(self) -> bool:
        return bool(self.affordances)

    # Any: asdict's JSON form of the element, read by the viewer and tests
    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["bounds"] = list(self.bounds)
        d["center"] = list(self.center)
        d["affordances"] = self.affordances
        return d


@dataclass(slots=True)
class Window:
    package: str
    bounds: Bounds


@dataclass(slots=True)
class Screen:
    elements: list[Element]
    package: str  # foreground app
    width: int
    height: int
    rotation: int = 0
    windows: list[Window] = field(default_factory=list)
    main_window: int = 0
    size_estimated: bool = False  # no full-screen window: width/height are a best guess

    # Any: the screen's JSON form, free-form for the viewer and tests
    def to_dict(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "width": self.width,
            "height": self.height,
            "rotation": self.rotation,
            "size_estimated": self.size_estimated,
            "windows": [{"package": w.package, "bounds": list(w.bounds)} for w in self.windows],
            "main_window": self.main_window,
            "elements": [e.to_dict() for e in self.elements],
        }
