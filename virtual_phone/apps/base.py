"""Screens, dialogs and the AOSP-style widgets they are made of (bounds measured on real dumps)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypedDict, Unpack

from ..core import AppHost, Dialog, Screen
from ..hierarchy import Callback, Node, SCREEN_H, SCREEN_W, clip

STATUS_H = 132
NAV_TOP = 2337  # gesture navigation handle area; app content ends here
FL, LL, RL, TV = (
    "android.widget.FrameLayout",
    "android.widget.LinearLayout",
    "android.widget.RelativeLayout",
    "android.widget.TextView",
)
SWITCH, SEEKBAR, RADIO = "android.widget.Switch", "android.widget.SeekBar", "android.widget.RadioButton"
IMAGE_BUTTON, IMAGE_VIEW, BUTTON = "android.widget.ImageButton", "android.widget.ImageView", "android.widget.Button"
EDIT_TEXT, RECYCLER, SCROLL_VIEW = "android.widget.EditText", "androidx.recyclerview.widget.RecyclerView", "android.widget.ScrollView"
VIEW_GROUP = "android.view.ViewGroup"


def text_width(text: str, px_per_char: int) -> int:
    return len(text) * px_per_char


class TextFlags(TypedDict, total=False):
    """What `tv` passes on to its Node besides text and id."""
    desc: str
    enabled: bool
    clickable: bool
    focusable: bool
    selected: bool


def tv(text: str, x: int, y: int, h: int, *, rid: str = "", px: int = 24, right: int = 1038,
       **kw: Unpack[TextFlags]) -> Node:
    return Node(TV, (x, y, min(right, x + max(1, text_width(text, px))), y + h), text=text, rid=rid, **kw)


@dataclass
class Scroll:
    offset: int = 0
    content_h: int = 0
    viewport_h: int = 0

    def by(self, dy: int) -> None:
        self.offset = max(0, min(self.offset + dy, max(0, self.content_h - self.viewport_h)))


def alert_dialog(
    title: str,
    message: str,
    buttons: list[tuple[str, str, Callback]],
    *,
    extra: Callable[[int], tuple[list[Node], int]] | None = None,
) -> Node:
    """Material AlertDialog: title, message, optional custom rows, buttons at the bottom right.

    `buttons` are (text, resource id, action) from right to left, as button1 (positive) first.
    """
    left, right = 84, 996
    inner_l, inner_r = left + 63, right - 63
    y = 0
    kids: list[Node] = []
    y += 84
    kids.append(Node(TV, (inner_l, y, inner_r, y + 82), text=title, rid="android:id/alertTitle"))
    y += 82 + 42
    body: list[Node] = []
    if message:
        lines = max(1, (len(message) * 22) // (inner_r - inner_l) + 1)
        body.append(Node(TV, (inner_l, y, inner_r, y + 60 * lines), text=message, rid="android:id/message"))
        y += 60 * lines + 42
    if extra is not None:
        ex, h = extra(y)
        body.extend(ex)
        y += h
    btn_y = y + 21
    btns: list[Node] = []
    x = inner_r
    for text, rid, action in buttons:
        wdt = max(210, text_width(text, 28) + 84)
        btns.append(Node(BUTTON, (x - wdt, btn_y, x, btn_y + 126), text=text, rid=rid, clickable=True,
                         focusable=True, on_click=action))
        x -= wdt + 21
    y = btn_y + 126 + 42
    height = y
    top = (SCREEN_H - height) // 2
    def shift(n: Node) -> Node:
        l, t, r, b = n.bounds
        n.bounds = (l, t + top, r, b + top)
        for c in n.children:
            shift(c)
        return n
    panel = Node(FL, (left, 0, right, height), rid="android:id/parentPanel", children=[
        Node(LL, (left, 0, right, 250), rid="android:id/topPanel", children=kids),
        *([Node(FL, (left, 250, right, btn_y), rid="android:id/contentPanel", children=body)] if body else []),
        Node(LL, (left, btn_y - 21, right, height), rid="android:id/buttonPanel", children=list(reversed(btns))),
    ])
    shift(panel)
    return Node(FL, (left, top, right, top + height), children=[
        Node(FL, (left, top, right, top + height), rid="android:id/content", children=[panel])])


# --- Settings-style preference list ---------------------------------------------------------

@dataclass
class Item:
    """A row of a preference list; `render` lays it out at absolute y."""

    height: int

    def render(self, y: int) -> Node:
        raise NotImplementedError


@dataclass
class Pref(Item):
    title: str = ""
    summary: str = ""
    on_click: Callback | None = None
    switch: bool | None = None  # a SwitchPreference when not None
    icon: bool = False
    enabled: bool = True
    height: int = 0

    def __post_init__(self) -> None:
        if not self.height:
            self.height = 231 if self.icon else (206 if self.summary else 168)

    def render(self, y: int) -> Node:
        h = self.height
        x = 189 if self.icon else 63
        text_r = 870 if self.switch is not None else 1038
        frame_kids = [tv(self.title, x, y + (54 if self.icon else 42) if self.summary else y + (h - 71) // 2, 71,
                         rid="android:id/title", right=text_r, enabled=self.enabled)]
        if self.summary:
            ty = frame_kids[0].bounds[3]
            frame_kids.append(tv(self.summary, x, ty, 51, rid="android:id/summary", px=17, right=text_r,
                                 enabled=self.enabled))
        kids: list[Node] = []
        if self.icon:
            kids.append(Node(LL, (0, y + h // 2 - 42, 147, y + h // 2 + 43), rid="com.android.settings:id/icon_frame",
                             children=[Node(IMAGE_VIEW, (84, y + h // 2 - 31, 147, y + h // 2 + 32), rid="android:id/icon")]))
        kids.append(Node(RL, (x - (42 if self.icon else 0), y + 12 if self.icon else y, text_r, y + h - 13 if self.icon else y + h),
                         rid="com.android.settings:id/text_frame" if self.icon else "", children=frame_kids))
        if self.switch is not None:
            sw = Node(SWITCH, (912, y + h // 2 - 45, 1017, y + h // 2 + 45), rid="android:id/switch_widget",
                      checkable=True, checked=self.switch, focusable=False, enabled=self.enabled)
            kids.append(Node(LL, (891, y, 1038, y + h), rid="android:id/widget_frame", children=[sw]))
        return Node(LL, (0, y, SCREEN_W, y + h), clickable=self.on_click is not None and self.enabled,
                    focusable=True, enabled=self.enabled, children=kids,
                    on_click=self.on_click if self.enabled else None)


@dataclass
class Category(Item):
    title: str = ""
    height: int = 135

    def render(self, y: int) -> Node:
        return Node(LL, (0, y, SCREEN_W, y + self.height), children=[
            Node(RL, (63, y + 42, 1038, y + self.height), children=[
                tv(self.title, 63, y + 63, 51, rid="android:id/title", px=17)])])


@dataclass
class SeekPref(Item):
    title: str = ""
    fraction: float = 0.0
    on_set: Callable[[float], None] | None = None
    summary: str = ""
    height: int = 290

    def render(self, y: int) -> Node:
        l, r = 189, 1038
        pad = 42  # the thumb's inset: the track ends short of the view's edges, as on Android

        def tap(x: int, _y: int) -> None:
            if self.on_set is not None:
                self.on_set(min(1.0, max(0.0, (x - l - pad) / (r - l - 2 * pad))))
        bar = Node(SEEKBAR, (l, y + 164, r, y + 290), text=f"{self.fraction * 100:.1f}", rid="android:id/seekbar",
                   desc=self.title, focusable=True, on_tap_at=tap)
        title_box = [tv(self.title, 189, y + 42, 71, rid="android:id/title")]
        if self.summary:
            title_box.append(tv(self.summary, 189, y + 113, 51, rid="android:id/summary", px=17))
        return Node(LL, (0, y, SCREEN_W, y + self.height), children=[
            Node(LL, (63, y + 118, 189, y + 203), rid="com.android.settings:id/icon_frame",
                 children=[Node(IMAGE_VIEW, (63, y + 129, 126, y + 192), rid="android:id/icon")]),
            Node(LL, (189, y, 1038, y + self.height), children=[
                Node(LL, (189, y + 42, 1038, y + 164), children=title_box),
                Node(LL, (189, y + 164, 1038, y + 290), children=[bar])])])


@dataclass
class MainSwitch(Item):
    """SettingsLib MainSwitchBar ("Use location", "Use Bluetooth", "Use Battery Saver")."""

    text: str = ""
    checked: bool = False
    on_click: Callback | None = None
    enabled: bool = True
    height: int = 242

    def render(self, y: int) -> Node:
        t, b = y + 42, y + 200
        return Node(FL, (0, y, SCREEN_W, y + self.height), children=[
            Node(LL, (42, t, 1038, b), rid="com.android.settings:id/frame", clickable=self.enabled, focusable=True,
                 enabled=self.enabled, on_click=self.on_click if self.enabled else None, children=[
                     tv(self.text, 105, t + 47, 64, rid="com.android.settings:id/switch_text", px=26, right=870,
                        enabled=self.enabled),
                     Node(SWITCH, (891, t + 34, 996, t + 124), rid="android:id/switch_widget", checkable=True,
                          checked=self.checked, enabled=self.enabled)])])


@dataclass
class RadioPref(Item):
    title: str = ""
    checked: bool = False
    on_click: Callback | None = None
    height: int = 168

    def render(self, y: int) -> Node:
        h = self.height
        return Node(LL, (0, y, SCREEN_W, y + h), clickable=True, focusable=True, on_click=self.on_click, children=[
            Node(LL, (0, y, 189, y + h), rid="android:id/widget_frame", children=[
                Node(RADIO, (63, y + h // 2 - 32, 126, y + h // 2 + 32), rid="android:id/checkbox",
                     checkable=True, checked=self.checked)]),
            Node(RL, (189, y, 1038, y + h), children=[tv(self.title, 189, y + (h - 71) // 2, 71, rid="android:id/title")])])


@dataclass
class ButtonRow(Item):
    text: str = ""
    rid: str = ""
    on_click: Callback | None = None
    height: int = 210

    def render(self, y: int) -> Node:
        wdt = text_width(self.text, 26) + 126
        return Node(LL, (0, y, SCREEN_W, y + self.height), children=[
            Node(BUTTON, (63, y + 42, 63 + wdt, y + 168), text=self.text, rid=self.rid, clickable=True,
                 focusable=True, on_click=self.on_click)])


@dataclass
class Note(Item):
    text: str = ""
    height: int = 200

    def render(self, y: int) -> Node:
        return Node(LL, (0, y, SCREEN_W, y + self.height), children=[
            Node(RL, (63, y, 1038, y + self.height), children=[
                Node(TV, (63, y + 42, 1038, y + self.height - 42), text=self.text, rid="android:id/title")])])


def lay_out_list(items: Sequence[Item], top: int, bottom: int, scroll: Scroll, **rv: str) -> Node:
    """A scrollable RecyclerView showing only the rows in its viewport (rows are clipped)."""
    scroll.content_h = sum(i.height for i in items)
    scroll.viewport_h = bottom - top
    scroll.by(0)
    y = top - scroll.offset
    kids: list[Node] = []
    for it in items:
        if y + it.height > top and y < bottom:
            kids.append(it.render(y))
        y += it.height
    can_scroll = scroll.content_h > scroll.viewport_h
    node = Node(RECYCLER, (0, top, SCREEN_W, bottom), rid=rv.get("rid", "com.android.settings:id/recycler_view"),
                focusable=True, scrollable=can_scroll, children=kids, on_scroll=scroll.by if can_scroll else None)
    clipped = clip(node, node.bounds)
    assert clipped is not None
    return clipped


def settings_page(w: AppHost, screen: Screen, title: str, items: list[Item], scroll: Scroll) -> Node:
    """A Settings sub-page: collapsing toolbar with the title, then the preference list."""
    header = Node(LL, (0, 0, SCREEN_W, 602), rid="com.android.settings:id/app_bar", children=[
        Node(FL, (0, 0, SCREEN_W, 602), rid="com.android.settings:id/collapsing_toolbar", desc=title, children=[
            Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 279), rid="com.android.settings:id/action_bar", children=[
                Node(IMAGE_BUTTON, (0, STATUS_H, 147, 279), desc="Navigate up", clickable=True, focusable=True,
                     on_click=lambda: w.back()),
                Node("android.view.View", (189, STATUS_H, SCREEN_W, 279))])])])
    lst = lay_out_list(items, 602, NAV_TOP, scroll)
    content = Node(FL, (0, 602, SCREEN_W, NAV_TOP), rid="com.android.settings:id/content_frame", children=[
        Node(LL, (0, 602, SCREEN_W, NAV_TOP), children=[
            Node(FL, (0, 602, SCREEN_W, NAV_TOP), rid="com.android.settings:id/main_content", children=[
                Node(LL, (0, 602, SCREEN_W, NAV_TOP), rid="com.android.settings:id/container_material", children=[
                    Node(FL, (0, 602, SCREEN_W, NAV_TOP), rid="android:id/list_container", children=[lst])])])])])
    return window_frame([
        Node(SCROLL_VIEW, (0, 0, SCREEN_W, NAV_TOP), rid="com.android.settings:id/content_parent",
             children=[header, content])])


def window_frame(content: list[Node], bottom: int = NAV_TOP) -> Node:
    """DecorView > LinearLayout > android:id/content, as every activity window starts."""
    return Node(FL, (0, 0, SCREEN_W, SCREEN_H), children=[
        Node(LL, (0, 0, SCREEN_W, bottom), children=[
            Node(FL, (0, 0, SCREEN_W, bottom), rid="android:id/content", children=content)])])


def confirm(w: AppHost, title: str, message: str, positive: str, on_positive: Callback, *,
            pkg: str, negative: str = "Cancel",
            extra: Callable[[int], tuple[list[Node], int]] | None = None) -> None:
    """Show a two-button AlertDialog whose negative button (button2) only closes it."""
    w.show_dialog(Dialog(build=lambda _w: alert_dialog(
        title, message, [(positive, "android:id/button1", on_positive),
                         (negative, "android:id/button2", w.close_dialog)], extra=extra), pkg=pkg))


def popup_menu(items: Sequence[tuple[str, Callback]]) -> Node:
    """An overflow menu at the top right (ListPopupWindow); items are (title, action)."""
    l, r, t = 560, 1038, 160
    rows = []
    y = t + 21
    for title, action in items:
        rows.append(Node(LL, (l, y, r, y + 147), clickable=True, focusable=True, on_click=action, children=[
            Node(TV, (l + 42, y + 40, r - 42, y + 107), text=title, rid="android:id/title")]))
        y += 147
    return Node(FL, (l, t, r, y + 21), children=[
        Node("android.widget.ListView", (l, t, r, y + 21), children=rows)])


@dataclass
class Row(Item):
    """A list row drawn by a function of its top y (app lists that are not preference rows)."""

    draw: Callable[[int], Node] | None = None

    def render(self, y: int) -> Node:
        assert self.draw is not None
        return self.draw(y)


def toolbar_button(desc: str, x: int, on_click: Callback, y: int = STATUS_H + 21) -> Node:
    """A toolbar icon: Compose-style View with the description on its icon child, as Messages draws them."""
    return Node(VIEW_GROUP, (x, y, x + 126, y + 126), clickable=True, focusable=True, on_click=on_click, children=[
        Node("android.view.View", (x + 31, y + 31, x + 94, y + 94), desc=desc)])
