"""Google Messages (com.google.android.apps.messaging): conversations, new conversation, a thread.

Labels and ids follow a real Pixel dump of a new SMS thread ("Texting with N (SMS/MMS)",
compose_message_text with "Text message", Compose:Draft:Send, toolbar "Back" / "Call" /
"More"). Messages live in the SMS provider (telephony.py), so `content query --uri
content://sms/sent` sees a sent message the moment Send is tapped, as on a phone.
"""

from __future__ import annotations

import re
from functools import partial

from ..core import App, AppHost, Intent, Screen
from ..hierarchy import SCREEN_W, Node
from ..phone_clock import time_text
from ..telephony import SMS_INBOX, SMS_SENT, Sms, digits, format_us
from .base import (
    EDIT_TEXT, FL, IMAGE_BUTTON, NAV_TOP, STATUS_H, TV, VIEW_GROUP, Row, Scroll, confirm, lay_out_list,
    toolbar_button, window_frame,
)

PKG = "com.google.android.apps.messaging"
M = PKG + ":id/"
LIST_ACTIVITY = "com.google.android.apps.messaging.ui.ConversationListActivity"


def _when(w: AppHost, ms: int) -> str:
    return time_text(ms, w.state.time_24h)


def who(w: AppHost, address: str) -> str:
    return w.state.name_for_number(address) or format_us(address)


class ConversationList(Screen):
    pkg = PKG
    activity = LIST_ACTIVITY

    def __init__(self) -> None:
        super().__init__()
        self.scroll = Scroll()
        self.selected: int | None = None  # thread id picked by a long press

    @property
    def title(self) -> str:
        return "Messages"

    def build(self, w: AppHost) -> Node:
        threads = w.state.telephony.conversations()
        if self.selected not in {t[-1].thread_id for t in threads}:
            self.selected = None
        rows = [Row(height=210, draw=partial(self._row, w, t)) for t in threads]
        lst = lay_out_list(rows, 320, NAV_TOP, self.scroll, rid=M + "conversation_list")
        if self.selected is None:
            bar = [Node(TV, (63, 180, 600, 270), text="Messages", rid=M + "toolbar_title"),
                   toolbar_button("Search", 798, lambda: None), toolbar_button("More options", 924, lambda: None)]
        else:
            bar = [toolbar_button("Back", 21, self._clear),
                   Node(TV, (189, 180, 600, 270), text="1 selected", rid=M + "selection_title"),
                   toolbar_button("Archive", 672, lambda: None), toolbar_button("Delete", 798, lambda: self._ask(w)),
                   toolbar_button("More options", 924, lambda: None)]
        kids = [Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 320), rid=M + "toolbar", children=bar), lst]
        if not threads:
            kids.append(Node(TV, (120, 1100, 960, 1170), text="Once you start a new conversation, you'll see it "
                             "listed here", rid=M + "empty_state_title"))
        kids.append(Node(IMAGE_BUTTON, (600, 2050, 1017, 2220), text="Start chat", desc="Start chat",
                         rid=M + "start_chat_fab", clickable=True, focusable=True,
                         on_click=lambda: w.open(NewConversation())))
        return window_frame([Node(FL, (0, 0, SCREEN_W, NAV_TOP), children=kids)])

    def _row(self, w: AppHost, thread: list[Sms], y: int) -> Node:
        last = thread[-1]
        unread = any(m.type == SMS_INBOX and not m.read for m in thread)
        snippet = ("You: " if last.type == SMS_SENT else "") + last.body
        name = who(w, last.address)

        def open_() -> None:
            if self.selected is not None:
                self.selected = None
                return
            open_thread(w, last.address)

        def select() -> None:
            self.selected = last.thread_id

        return Node(VIEW_GROUP, (0, y, SCREEN_W, y + 210), rid=M + "swipeableContainer", clickable=True,
                    long_clickable=True, focusable=True, selected=self.selected == last.thread_id,
                    on_click=open_, on_long_click=select, children=[
                        Node(FL, (42, y + 42, 168, y + 168), rid=M + "conversation_icon", desc=name),
                        Node(TV, (210, y + 40, 820, y + 100), text=name, rid=M + "conversation_name"),
                        Node(TV, (210, y + 110, 900, y + 170), text=snippet, rid=M + "conversation_snippet"),
                        Node(TV, (840, y + 40, 1038, y + 100), text=_when(w, last.date),
                             rid=M + "conversation_timestamp"),
                        *([Node("android.view.View", (990, y + 120, 1020, y + 150), desc="Unread")] if unread else [])])

    def _clear(self) -> None:
        self.selected = None

    def _ask(self, w: AppHost) -> None:
        tid = self.selected

        def delete() -> None:
            if tid is not None:
                w.state.telephony.delete_thread(tid)
            self.selected = None
            w.close_dialog()

        confirm(w, "Delete 1 conversation?", "", "Delete", delete, pkg=PKG)

    def on_back(self, w: AppHost) -> bool:
        if self.selected is not None:
            self.selected = None
            return True
        return False


class NewConversation(Screen):
    pkg = PKG
    activity = "com.google.android.apps.messaging.ui.conversation.NewConversationActivity"

    def __init__(self) -> None:
        super().__init__()
        self.query = ""
        self.scroll = Scroll()
        self._host: AppHost | None = None  # for the keyboard's Enter, which comes without one

    @property
    def title(self) -> str:
        return "New conversation"

    def _matches(self, w: AppHost) -> list[tuple[str, str]]:
        st = w.state
        q = self.query.strip().lower()
        people = []
        for r in st.raw_contacts:
            name = st.display_name(r.id) or ""
            for number in st.phones(r.id):
                if not q or q in name.lower() or (digits(q) and digits(q) in digits(number)):
                    people.append((name, number))
        return sorted(people, key=lambda p: p[0].lower())

    def build(self, w: AppHost) -> Node:
        self._host = w
        rows: list[Row] = []
        if len(digits(self.query)) >= 3 and re.fullmatch(r"[\d\s()+.-]+", self.query):
            number = self.query.strip()
            rows.append(Row(height=190, draw=lambda y: self._row(w, f"Send to {format_us(number)}", "", number, y)))
        for name, number in self._matches(w):
            rows.append(Row(height=190, draw=partial(self._row, w, name, format_us(number), number)))
        lst = lay_out_list(rows, 480, NAV_TOP, self.scroll, rid=M + "contact_picker_list")
        hint = "Type a name, phone number, or email"
        bar = Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 320), rid=M + "toolbar", children=[
            toolbar_button("Back", 21, w.back),
            Node(TV, (189, 180, 800, 270), text="New conversation", rid=M + "toolbar_title")])
        to = Node(VIEW_GROUP, (0, 320, SCREEN_W, 480), children=[
            Node(TV, (42, 360, 130, 440), text="To"),
            Node(EDIT_TEXT, (150, 340, 1038, 460), text=self.query or hint, hint=hint, rid=M + "recipient_text_view",
                 clickable=True, focusable=True, focused=True, long_clickable=True, on_text=self._set)])
        return window_frame([Node(FL, (0, 0, SCREEN_W, NAV_TOP), children=[bar, to, lst])])

    def _row(self, w: AppHost, title: str, sub: str, number: str, y: int) -> Node:
        def pick() -> None:
            w.finish()
            open_thread(w, number)

        kids = [Node(TV, (210, y + 35, 1000, y + 100), text=title, rid=M + "contact_name")]
        if sub:
            kids.append(Node(TV, (210, y + 105, 1000, y + 160), text=sub, rid=M + "contact_details"))
        return Node(VIEW_GROUP, (0, y, SCREEN_W, y + 190), clickable=True, focusable=True, on_click=pick,
                    children=kids)

    def _set(self, text: str) -> None:
        self.query = text

    def type_text(self, text: str) -> None:
        self.query += text

    def delete_char(self) -> None:
        self.query = self.query[:-1]

    def on_enter(self) -> None:
        """The keyboard's Enter on a typed number picks it, as the top suggestion would."""
        if len(digits(self.query)) >= 3 and self._host is not None:
            self._host.finish()
            open_thread(self._host, self.query.strip())


class Conversation(Screen):
    pkg = PKG
    activity = "com.google.android.apps.messaging.ui.conversation.ConversationActivity"

    def __init__(self, address: str, draft: str = "") -> None:
        super().__init__()
        self.address = address
        self.draft = draft
        self.focused = bool(draft)
        self.scroll = Scroll(offset=10**6)  # a thread opens scrolled to its newest message

    @property
    def title(self) -> str:
        return self.address

    def build(self, w: AppHost) -> Node:
        tel = w.state.telephony
        name = who(w, self.address)
        msgs = tel.thread(self.address)
        rows = [Row(height=60 * (1 + len(m.body) // 32) + 120, draw=partial(self._bubble, m, w.state.time_24h)) for m in msgs]
        lst = lay_out_list(rows, 320, 2150, self.scroll, rid=M + "messages_list")
        bar = Node(VIEW_GROUP, (0, STATUS_H - 48, SCREEN_W, 320), rid=M + "toolbar", children=[
            toolbar_button("Back", 13, w.back, y=85),
            Node(TV, (296, 116, 780, 179), text=name, rid=M + "conversation_title"),
            toolbar_button("Call", 818, lambda: self._call(w), y=85),
            toolbar_button("More", 944, lambda: None, y=85)])
        kids: list[Node] = [bar, lst]
        if not msgs:
            kids.append(Node(TV, (200, 2074, 880, 2116), text=f"Texting with {name} (SMS/MMS)", rid=M + "message_text"))
        typed = bool(self.draft)
        send_desc = "Send SMS" if typed else "Show record a voice message screen"
        compose = Node(VIEW_GROUP, (0, 2150, SCREEN_W, NAV_TOP), rid=M + "compose_row", children=[
            toolbar_button("Show attach content screen", 21, lambda: None, y=2169),
            Node(EDIT_TEXT, (147, 2169, 765, 2316), text=self.draft or "Text message", hint="Text message",
                 rid=M + "compose_message_text", clickable=True, focusable=True, focused=self.focused,
                 long_clickable=True, on_click=self._focus, on_text=self._set),
            Node(VIEW_GROUP, (912, 2169, 1059, 2316), rid="Compose:Draft:Send", clickable=True, focusable=True,
                 on_click=lambda: self._send(w), children=[
                     Node("android.view.View", (954, 2211, 1017, 2274), desc=send_desc)])])
        kids.append(compose)
        return window_frame([Node(FL, (0, 0, SCREEN_W, NAV_TOP), rid=M + "conversation_root_container",
                                  children=kids)])

    def _bubble(self, m: Sms, h24: bool, y: int) -> Node:
        mine = m.type == SMS_SENT
        h = 60 * (1 + len(m.body) // 32) + 60
        l, r = (300, 1038) if mine else (42, 780)
        return Node(VIEW_GROUP, (0, y, SCREEN_W, y + h + 60), children=[
            Node(TV, (l, y + 20, r, y + 20 + h), text=m.body, rid=M + "message_text"),
            Node(TV, (l, y + 20 + h, r, y + 60 + h), text=("Sent · " if mine else "") + time_text(m.date, h24),
                 rid=M + "message_status")])

    def _focus(self) -> None:
        self.focused = True

    def _set(self, text: str) -> None:
        self.draft = text
        self.focused = True

    def type_text(self, text: str) -> None:
        if self.focused:
            self.draft += text

    def delete_char(self) -> None:
        if self.focused:
            self.draft = self.draft[:-1]

    def _send(self, w: AppHost) -> None:
        body = self.draft
        if body.strip():
            w.state.telephony.add_sms(self.address, body, SMS_SENT)
            self.draft = ""
            self.scroll.offset = 10**6

    def _call(self, w: AppHost) -> None:
        w.start(Intent(action="android.intent.action.CALL", data=f"tel:{self.address}"))


def open_thread(w: AppHost, address: str, draft: str = "") -> None:
    """Showing a thread is what marks its messages read (there is no Mark as read button)."""
    w.state.telephony.mark_read(address)
    w.open(Conversation(address, draft))


def _sendto(w: AppHost, intent: Intent) -> bool:
    """ACTION_SENDTO sms:/smsto: NUMBER (extra sms_body): the thread opens with the text as a draft."""
    scheme, _, number = intent.data.partition(":")
    if scheme not in ("sms", "smsto") or not number:
        return False
    w.launch(PKG)
    open_thread(w, number, intent.extras.get("sms_body", ""))
    return True


APP = App(pkg=PKG, label="Messages", activity=LIST_ACTIVITY, root=ConversationList, hotseat=True,
          intents={"android.intent.action.SENDTO": _sendto})
