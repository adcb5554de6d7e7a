"""Google Phone (com.google.android.dialer): Home (recents), Keypad, and the in-call screen.

The keypad's ids, descriptions ("1,", "2,ABC", "backspace", Call "dial") and bounds come from
a real Pixel dump of the dialpad with a number typed, as do the bottom tabs (Home, Keypad,
Voicemail) and the as-you-type formatting ("(555) 010-00"). A call is logged in the call-log
provider when it ends, outgoing, with its duration, as CallLogManager does.
"""

from __future__ import annotations

from functools import partial

from ..core import App, AppHost, Intent, Screen
from ..hierarchy import SCREEN_W, Node
from ..phone_clock import time_text
from ..telephony import CALL_INCOMING, CALL_MISSED, CALL_OUTGOING, CALL_REJECTED, Call, as_you_type, digits, format_us
from .base import (
    BUTTON, EDIT_TEXT, FL, IMAGE_BUTTON, LL, STATUS_H, TV, VIEW_GROUP, Row, Scroll, lay_out_list, window_frame,
)

PKG = "com.google.android.dialer"
D = PKG + ":id/"
MAIN_ACTIVITY = "com.google.android.dialer.extensions.GoogleDialtactsActivity"
TABS = (("Home", "tab_call_history"), ("Keypad", "tab_dialpad"), ("Voicemail", "tab_voicemail"))
KEYS = (("1", "one", ""), ("2", "two", "ABC"), ("3", "three", "DEF"), ("4", "four", "GHI"), ("5", "five", "JKL"),
        ("6", "six", "MNO"), ("7", "seven", "PQRS"), ("8", "eight", "TUV"), ("9", "nine", "WXYZ"),
        ("*", "star", ""), ("0", "zero", "+"), ("#", "pound", ""))
CALL_WORDS = {CALL_INCOMING: "Incoming call", CALL_OUTGOING: "Outgoing call", CALL_MISSED: "Missed call",
              CALL_REJECTED: "Declined call"}
TAB_TOP = 2126


def _ago(ms: int, now: float, h24: bool) -> str:
    mins = max(0, int(now - ms / 1000) // 60)
    if mins < 1:
        return "Just now"
    if mins < 60:
        return f"{mins} min ago"
    return time_text(ms, h24)


def place_call(w: AppHost, number: str) -> None:
    if not digits(number):
        return
    w.state.telephony.dial(number)
    w.launch(PKG)
    w.open(InCall(number))


class Dialer(Screen):
    pkg = PKG
    activity = MAIN_ACTIVITY

    def __init__(self, tab: str = "Home", number: str = "") -> None:
        super().__init__()
        self.tab = tab
        self.number = number  # the keypad's digits, unformatted
        self.scroll = Scroll()

    @property
    def title(self) -> str:
        return self.tab

    def build(self, w: AppHost) -> Node:
        body = self._keypad(w) if self.tab == "Keypad" else self._home(w) if self.tab == "Home" else Node(
            FL, (0, STATUS_H, SCREEN_W, TAB_TOP), children=[
                Node(TV, (200, 1100, 880, 1170), text="No voicemail", rid=D + "empty_content_view_message")])
        tab_w = SCREEN_W // len(TABS)
        tabs = []
        for i, (name, rid) in enumerate(TABS):
            l = i * tab_w
            tabs.append(Node(FL, (l, TAB_TOP, l + tab_w, 2337), rid=D + rid, desc=name, clickable=name != self.tab,
                             focusable=True, selected=name == self.tab, on_click=partial(self._select, name),
                             children=[Node(TV, (l + 100, 2253, l + tab_w - 100, 2295), text=name,
                                            rid=D + "navigation_bar_item_large_label_view")]))
        return window_frame([Node(FL, (0, 0, SCREEN_W, 2400), rid=D + "main_screen_container", children=[
            body, Node(FL, (0, TAB_TOP, SCREEN_W, 2400), rid=D + "navigation_bar_layout", children=tabs)])])

    def _select(self, name: str) -> None:
        self.tab = name

    # --- Home: the call history ----------------------------------------------------------

    def _home(self, w: AppHost) -> Node:
        calls = sorted(w.state.telephony.calls, key=lambda c: (c.date, c.id), reverse=True)
        rows = [Row(height=200, draw=partial(self._call_row, w, c)) for c in calls]
        lst = lay_out_list(rows, 340, TAB_TOP, self.scroll, rid=D + "new_call_log_recycler_view")
        kids = [Node(VIEW_GROUP, (42, STATUS_H + 21, 1038, 300), rid=D + "open_search_bar", clickable=True,
                     focusable=True, on_click=lambda: None, children=[
                         Node(TV, (160, 190, 800, 250), text="Search contacts", rid=D + "open_search_bar_text_view")]),
                lst]
        if not calls:
            kids.append(Node(TV, (200, 1100, 880, 1170), text="No recent calls", rid=D + "empty_content_view_message"))
        return Node(FL, (0, STATUS_H, SCREEN_W, TAB_TOP), rid=D + "tab_fragment_container", children=kids)

    def _call_row(self, w: AppHost, c: Call, y: int) -> Node:
        name = w.state.name_for_number(c.number) or c.name or format_us(c.number)
        sub = f"{CALL_WORDS.get(c.type, 'Call')} · {_ago(c.date, w.state.clock.now(), w.state.time_24h)}"
        return Node(VIEW_GROUP, (0, y, SCREEN_W, y + 200), rid=D + "call_log_entry", clickable=True, focusable=True,
                    on_click=lambda: place_call(w, c.number), children=[
                        Node(TV, (200, y + 35, 850, y + 100), text=name, rid=D + "primary_text"),
                        Node(TV, (200, y + 105, 850, y + 160), text=sub, rid=D + "secondary_text"),
                        Node(IMAGE_BUTTON, (900, y + 37, 1026, y + 163), desc=f"Call {name}", rid=D + "call_button",
                             clickable=True, focusable=True, on_click=lambda: place_call(w, c.number))])

    # --- Keypad ------------------------------------------------------------------------

    def _keypad(self, w: AppHost) -> Node:
        kids: list[Node] = []
        if self.number:
            actions = [("Create new contact", lambda: w.start(Intent(action="android.intent.action.INSERT",
                                                                    mime="vnd.android.cursor.dir/contact"))),
                       ("Add to a contact", lambda: None),
                       ("Send a message", lambda: w.start(Intent(action="android.intent.action.SENDTO",
                                                                data=f"smsto:{self.number}")))]
            name = w.state.name_for_number(self.number)
            y = STATUS_H + 63
            if name:
                kids.append(Node(LL, (0, y, SCREEN_W, y + 150), clickable=True, focusable=True,
                                 on_click=lambda: place_call(w, self.number), children=[
                                     Node(TV, (210, y + 20, 900, y + 80), text=name, rid=D + "primary"),
                                     Node(TV, (210, y + 85, 900, y + 135), text=format_us(self.number),
                                          rid=D + "secondary")]))
                y += 150
            for text, act in actions:
                kids.append(Node(LL, (0, y, SCREEN_W, y + 126), clickable=True, focusable=True, on_click=act,
                                 children=[Node(TV, (210, y + 31, 900, y + 95), text=text,
                                                rid=D + "search_action_text")]))
                y += 126
        shown = as_you_type(self.number)
        digits_row = Node(VIEW_GROUP, (0, 988, SCREEN_W, 1132), rid=D + "digits_container", children=[
            Node(IMAGE_BUTTON, (0, 988, 147, 1132), desc="More options", rid=D + "dialpad_overflow", clickable=True,
                 focusable=True, on_click=lambda: None),
            Node(EDIT_TEXT, (147, 988, 933, 1132), text=shown, hint="Phone Number", rid=D + "digits", clickable=True,
                 focusable=True, focused=True, long_clickable=True, on_text=self._set),
            Node(IMAGE_BUTTON, (933, 988, 1080, 1132), desc="backspace", rid=D + "deleteButton", clickable=True,
                 focusable=True, long_clickable=True, on_click=self.delete_char, on_long_click=self._clear)])
        keys = []
        for k, (digit, rid, letters) in enumerate(KEYS):
            col, row = k % 3, k // 3
            l, t = 32 + col * 345, 1164 + row * 190
            keys.append(Node(FL, (l, t, l + 323, t + 168), rid=D + rid,
                             desc=f"{digit},{letters}" if letters and digit != "0" else digit,
                             clickable=True, focusable=True, on_click=partial(self.type_text, digit),
                             children=[Node(TV, (l + 140, t + 20, l + 185, t + 90), text=digit,
                                            rid=D + "dialpad_key_number"),
                                       *([Node(TV, (l + 130, t + 110, l + 195, t + 135), text=letters,
                                               rid=D + "dialpad_key_letters")] if letters else [])]))
        pad = Node(LL, (0, 988, SCREEN_W, TAB_TOP), rid=D + "dialpad_view", children=[
            digits_row, Node(LL, (0, 1153, SCREEN_W, 2110), rid=D + "dialpad", children=keys),
            Node(VIEW_GROUP, (0, 1947, SCREEN_W, TAB_TOP), rid=D + "dialpad_call_buttons", children=[
                Node(BUTTON, (413, 1947, 667, 2094), text="Call", desc="dial", rid=D + "dialpad_voice_call_button",
                     clickable=True, focusable=True, on_click=lambda: place_call(w, self.number))])])
        return Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, TAB_TOP), rid=D + "dialpad_search_root",
                    children=[*kids, pad])

    def _set(self, text: str) -> None:
        self.number = "".join(ch for ch in text if ch.isdigit() or ch in "+*#")

    def _clear(self) -> None:
        self.number = ""

    def type_text(self, text: str) -> None:
        if self.tab == "Keypad":
            self._set(self.number + text)

    def delete_char(self) -> None:
        self.number = self.number[:-1]


class InCall(Screen):
    pkg = PKG
    activity = "com.android.incallui.InCallActivity"
    call_screen = True

    def __init__(self, number: str) -> None:
        super().__init__()
        self.number = number

    @property
    def title(self) -> str:
        return "Call"

    def build(self, w: AppHost) -> Node:
        name = w.state.name_for_number(self.number)
        kids = [Node(TV, (63, 500, 1017, 620), text=name or format_us(self.number), rid=D + "contactgrid_contact_name"),
                Node(TV, (63, 640, 1017, 700), text="Calling…", rid=D + "contactgrid_status_text")]
        if name:
            kids.append(Node(TV, (63, 710, 1017, 770), text=f"Mobile {format_us(self.number)}",
                             rid=D + "contactgrid_location"))
        kids.append(Node(IMAGE_BUTTON, (414, 1990, 666, 2200), desc="End call", rid=D + "incall_end_call",
                         clickable=True, focusable=True, on_click=w.end_call))
        return window_frame([Node(FL, (0, STATUS_H, SCREEN_W, 2337), rid=D + "incall_screen", children=kids)])


def _dial(w: AppHost, intent: Intent) -> bool:
    """ACTION_DIAL tel:N: the keypad with the number entered, not yet called."""
    scheme, _, number = intent.data.partition(":")
    if intent.data and scheme != "tel":
        return False
    w.launch(PKG)
    w.open(Dialer("Keypad", digits(number)))
    return True


def _call(w: AppHost, intent: Intent) -> bool:
    """ACTION_CALL tel:N: the call starts at once (the shell holds CALL_PHONE)."""
    scheme, _, number = intent.data.partition(":")
    if scheme != "tel" or not digits(number):
        return False
    place_call(w, number)
    return True


APP = App(pkg=PKG, label="Phone", activity=MAIN_ACTIVITY, root=Dialer, hotseat=True,
          intents={"android.intent.action.DIAL": _dial, "android.intent.action.CALL": _call})
