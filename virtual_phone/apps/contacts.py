"""Google Contacts (com.google.android.contacts): list, "Create contact" editor, contact view."""

from __future__ import annotations

from functools import partial

from ..core import App, AppHost, Intent, Screen
from ..hierarchy import SCREEN_W, Node, clip
from .base import (
    BUTTON, EDIT_TEXT, FL, IMAGE_BUTTON, LL, NAV_TOP, RECYCLER, STATUS_H, TV, VIEW_GROUP, Scroll,
    confirm, window_frame,
)


PKG = "com.google.android.contacts"
C = PKG + ":id/"
FIELDS = ("First name", "Last name", "Company", "Phone", "Email")



def _open_contact(w: AppHost, rid: int) -> None:
    w.open(ContactView(rid))   # a fresh view per tap, as a phone opens the contact anew

class ContactsList(Screen):
    pkg = PKG
    activity = "com.android.contacts.activities.PeopleActivity"

    def __init__(self) -> None:
        super().__init__()
        self.scroll = Scroll()

    @property
    def title(self) -> str:
        return "Contacts"

    def build(self, w: AppHost) -> Node:
        st = w.state
        people = sorted(((st.display_name(r.id) or "(No name)", r.id) for r in st.raw_contacts),
                        key=lambda p: p[0].lower())
        top, bottom, h = 500, 2127, 168
        self.scroll.content_h, self.scroll.viewport_h = len(people) * h, bottom - top
        self.scroll.by(0)
        rows = []
        y = top - self.scroll.offset
        for name, rid in people:
            if y + h > top and y < bottom:
                rows.append(Node(VIEW_GROUP, (0, y, SCREEN_W, y + h), clickable=True, focusable=True,
                                 on_click=partial(_open_contact, w, rid), children=[
                                     Node("android.widget.QuickContactBadge", (63, y + 21, 189, y + 147),
                                          desc=f"Quick contact for {name}"),
                                     Node(TV, (231, y + 50, 1017, y + 118), text=name, rid=C + "cliv_name_textview")]))
            y += h
        can = self.scroll.content_h > self.scroll.viewport_h
        lst = clip(Node(RECYCLER, (0, top, SCREEN_W, bottom), rid=C + "contact_list", focusable=True, scrollable=can,
                        on_scroll=self.scroll.by if can else None, children=rows), (0, top, SCREEN_W, bottom))
        kids: list[Node] = [
            Node(VIEW_GROUP, (42, 174, 1038, 321), rid=C + "open_search_bar", clickable=True, focusable=True,
                 on_click=lambda: None, children=[
                     Node(TV, (189, 210, 700, 285), text="Search contacts", rid=C + "open_search_bar_text_view")]),
        ]
        if lst is not None:
            kids.append(lst)
        if not people:
            kids.append(Node(TV, (200, 1100, 880, 1170), text="No contacts yet", rid=C + "empty_list_title"))
        kids.append(Node(IMAGE_BUTTON, (807, 1908, 1017, 2085), rid=C + "floating_action_button",
                         desc="Create contact", clickable=True, focusable=True,
                         on_click=lambda: w.open(ContactEditor())))
        return window_frame([Node(FL, (0, STATUS_H, SCREEN_W, NAV_TOP), children=kids)])


class ContactEditor(Screen):
    pkg = PKG
    activity = "com.android.contacts.activities.ContactEditorActivity"

    def __init__(self) -> None:
        super().__init__()
        self.values = {f: "" for f in FIELDS}
        self.focus: str | None = None

    @property
    def title(self) -> str:
        return "Create contact"

    def build(self, w: AppHost) -> Node:
        bar = Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 300), rid=C + "toolbar", children=[
            Node(IMAGE_BUTTON, (0, STATUS_H, 147, 300), desc="Cancel", clickable=True, focusable=True,
                 on_click=w.back),
            Node(TV, (189, 180, 600, 260), text="Create contact", rid=C + "title"),
            Node(BUTTON, (800, 160, 1017, 280), text="Save", rid=C + "toolbar_button", clickable=True,
                 focusable=True, on_click=lambda: self.save(w))])
        kids: list[Node] = []
        y = 620
        for f in FIELDS:
            val = self.values[f]

            def setter(text: str, f: str = f) -> None:
                self.values[f] = text
                self.focus = f

            def focus(f: str = f) -> None:
                self.focus = f

            kids.append(Node(FL, (63, y, 1017, y + 190), rid=C + "text_input_layout", children=[
                Node(EDIT_TEXT, (63, y + 21, 1017, y + 169), text=val or f, hint=f, clickable=True,
                     focusable=True, focused=self.focus == f, long_clickable=True, on_click=focus, on_text=setter)]))
            y += 210
        form = Node(RECYCLER, (0, 300, SCREEN_W, NAV_TOP), rid=C + "editors", focusable=True, children=[
            Node(LL, (0, 340, SCREEN_W, 580), children=[
                Node("android.widget.ImageView", (420, 340, 660, 580), rid=C + "photo", desc="Add contact photo",
                     clickable=True, on_click=lambda: None)]),
            *kids])
        return window_frame([Node(FL, (0, STATUS_H, SCREEN_W, NAV_TOP), children=[bar, form])])

    def type_text(self, text: str) -> None:
        if self.focus is not None:
            self.values[self.focus] += text

    def on_enter(self) -> None:
        """The IME's Next action: focus moves to the following field."""
        if self.focus is not None and self.focus != FIELDS[-1]:
            self.focus = FIELDS[FIELDS.index(self.focus) + 1]

    def delete_char(self) -> None:
        if self.focus is not None:
            self.values[self.focus] = self.values[self.focus][:-1]

    def save(self, w: AppHost) -> None:
        v = self.values
        if any(v[f].strip() for f in FIELDS):
            rid = w.state.add_contact(v["First name"], v["Last name"], v["Phone"])
            w.finish()
            w.open(ContactView(rid))
        else:
            w.finish()

    def on_back(self, w: AppHost) -> bool:
        if not any(self.values.values()):
            return False

        def discard() -> None:
            w.close_dialog()
            w.finish()

        confirm(w, "Discard your changes?", "", "Discard", discard, negative="Keep editing", pkg=PKG)
        return True


class ContactView(Screen):
    pkg = PKG
    activity = "com.android.contacts.quickcontact.QuickContactActivity"

    def __init__(self, raw_id: int) -> None:
        super().__init__()
        self.raw_id = raw_id

    @property
    def title(self) -> str:
        return "Contact"

    def build(self, w: AppHost) -> Node:
        st = w.state
        name = st.display_name(self.raw_id) or "(No name)"
        phones = st.phones(self.raw_id)
        kids: list[Node] = [
            Node(IMAGE_BUTTON, (0, STATUS_H, 147, 279), desc="Navigate up", clickable=True, focusable=True,
                 on_click=w.back),
            Node(TV, (63, 700, 1017, 800), text=name, rid=C + "large_title"),
        ]
        first = phones[0] if phones else ""

        def intent(action: str, uri: str) -> None:
            if first:
                w.start(Intent(action=action, data=uri + first))

        # Google Contacts' action row under the name: Call, Text, Video, Email.
        for k, (label, act) in enumerate((("Call", lambda: intent("android.intent.action.CALL", "tel:")),
                                          ("Text", lambda: intent("android.intent.action.SENDTO", "smsto:")),
                                          ("Video", lambda: None), ("Email", lambda: None))):
            x = 63 + k * 246
            kids.append(Node(BUTTON, (x, 830, x + 210, 960), text=label, desc=label, rid=C + "action_button",
                             clickable=bool(first), enabled=bool(first), focusable=True, on_click=act))
        y = 1000
        for p in phones:
            kids.append(Node(LL, (0, y, SCREEN_W, y + 190), clickable=True, focusable=True,
                             on_click=partial(w.start, Intent(action="android.intent.action.CALL", data="tel:" + p)),
                             children=[Node(TV, (189, y + 40, 900, y + 110), text=p, rid=C + "header"),
                                       Node(TV, (189, y + 110, 600, y + 160), text="Mobile", rid=C + "sub_header")]))
            y += 190
        return window_frame([Node(FL, (0, STATUS_H, SCREEN_W, NAV_TOP), children=kids)])


def _insert(w: AppHost, intent: Intent) -> bool:
    """ContactsContract.Intents.Insert: ACTION_INSERT of a contact MIME type opens the editor."""
    if "contact" not in intent.mime:
        return False
    w.launch(PKG)
    w.open(ContactEditor())
    return True


APP = App(pkg=PKG, label="Contacts", activity="com.android.contacts.activities.PeopleActivity", root=ContactsList,
          intents={"android.intent.action.INSERT": _insert})
