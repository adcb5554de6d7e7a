"""Markor (net.gsantner.markor): a notebook of plain files, the note editor, new file/folder, delete, rename.

Notes are files under /sdcard/Documents/Markor (AndroidAppHost's MARKOR_DATA is the same folder,
/storage/emulated/0/Documents/Markor), so a real phone answers `ls`, `cat` and `stat` on them
exactly as the virtual one does. A new Markdown note gets the `.md` extension; the editor saves
on Save, on back, and when it leaves the screen (Home, another app: Markor saves in onPause).
Wording and ids are Markor's (gsantner/markor res/values/strings.xml, main__activity.xml,
new_file_dialog.xml, filesystem__menu.xml): "Create a new file or folder", the dialog's Name
field (hint "Title") with OK / Cancel / Folder, "Rename" and "Delete" on a selection, "Confirm
Delete", and the Files / To-Do / QuickNote / More tabs.
"""

from __future__ import annotations

import posixpath
import time

from ..core import App, AppHost, Dialog, Screen
from ..hierarchy import SCREEN_W, Node, clip
from .base import (
    EDIT_TEXT, FL, IMAGE_BUTTON, IMAGE_VIEW, LL, NAV_TOP, RECYCLER, STATUS_H, TV, VIEW_GROUP, Scroll,
    alert_dialog, confirm, popup_menu, window_frame,
)
from .files import human_size

PKG = "net.gsantner.markor"
C = PKG + ":id/"
NOTEBOOK = "/sdcard/Documents/Markor"
ROW_H = 190


class Notebook(Screen):
    pkg = PKG
    activity = "net.gsantner.markor.activity.MainActivity"

    def __init__(self, path: str = NOTEBOOK) -> None:
        super().__init__()
        self.path = path
        self.selected: set[str] = set()
        self.scroll = Scroll()

    @property
    def title(self) -> str:
        return "Notebook"

    def on_back(self, w: AppHost) -> bool:
        if self.selected:
            self.selected.clear()
            return True
        if self.path != NOTEBOOK:
            self.path = posixpath.dirname(self.path)
            return True
        return False

    def build(self, w: AppHost) -> Node:
        w.fs.mkdir(NOTEBOOK)  # Markor creates its notebook folder on first start
        if not w.fs.exists(self.path):
            self.path = NOTEBOOK
        items = sorted(((n, s) for n, s in w.fs.listdir(self.path) if not n.startswith(".")),
                       key=lambda e: (not e[1].is_dir, e[0].lower()))
        self.selected &= {n for n, _ in items}
        top, bottom = 300, 2127
        self.scroll.content_h, self.scroll.viewport_h = len(items) * ROW_H + 240, bottom - top
        self.scroll.by(0)
        rows: list[Node] = []
        y = top - self.scroll.offset
        for name, st in items:
            if y + ROW_H > top and y < bottom:
                rows.append(self._row(w, name, st.is_dir, st.size, st.mtime, y))
            y += ROW_H
        can = self.scroll.content_h > self.scroll.viewport_h
        lst = clip(Node(RECYCLER, (0, top, SCREEN_W, bottom), rid=C + "ui__filesystem_dialog__list", focusable=True,
                        scrollable=can, on_scroll=self.scroll.by if can else None, children=rows),
                   (0, top, SCREEN_W, bottom))
        kids: list[Node] = [self._toolbar(w)]
        if lst is not None:
            kids.append(lst)
        if not items:
            kids.append(Node(TV, (300, 1100, 780, 1170), text="Empty folder", rid=C + "empty_hint"))
        kids.append(Node(IMAGE_BUTTON, (807, 1900, 1017, 2110), rid=C + "fab_add_new_item",
                         desc="Create a new file or folder",
                         clickable=True, focusable=True, on_click=lambda: self._new_dialog(w)))
        tabs = []
        names = ("Files", "To-Do", "QuickNote", "More")
        tw = SCREEN_W // len(names)
        for k, n in enumerate(names):
            tabs.append(Node(FL, (k * tw, 2127, (k + 1) * tw, NAV_TOP), desc=n, clickable=True, focusable=True,
                             selected=n == "Files", on_click=lambda: None, children=[
                                 Node(TV, (k * tw + 20, 2250, (k + 1) * tw - 20, 2310), text=n,
                                      rid=C + "navigation_bar_item_large_label_view")]))
        kids.append(Node(FL, (0, 2127, SCREEN_W, NAV_TOP), rid=C + "bottom_navigation_bar", children=tabs))
        return window_frame([Node(FL, (0, STATUS_H, SCREEN_W, NAV_TOP), children=kids)])

    def _toolbar(self, w: AppHost) -> Node:
        if self.selected:
            kids = [Node(TV, (63, 180, 450, 260), text=f"{len(self.selected)} selected", rid=C + "toolbar_title")]
            if len(self.selected) == 1:
                kids.append(Node(IMAGE_BUTTON, (576, STATUS_H, 702, 300), desc="Rename", clickable=True,
                                 focusable=True, on_click=lambda: self._rename_dialog(w, next(iter(self.selected)))))
            kids += [Node(IMAGE_BUTTON, (828, STATUS_H, 954, 300), desc="Delete", clickable=True, focusable=True,
                          on_click=lambda: self._confirm_delete(w)),
                     Node(IMAGE_BUTTON, (954, STATUS_H, 1080, 300), desc="More options", clickable=True,
                          focusable=True, on_click=lambda: self._selection_menu(w))]
            return Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 300), rid=C + "toolbar", children=kids)
        title = "Markor" if self.path == NOTEBOOK else posixpath.basename(self.path)
        return Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 300), rid=C + "toolbar", children=[
            Node(TV, (63, 180, 600, 260), text=title, rid=C + "toolbar_title"),
            Node(IMAGE_BUTTON, (954, STATUS_H, 1080, 300), desc="Search", clickable=True, focusable=True,
                 on_click=lambda: None)])

    def _row(self, w: AppHost, name: str, is_dir: bool, size: int, mtime: int, y: int) -> Node:
        path = posixpath.join(self.path, name)

        def click() -> None:
            if self.selected:
                self.selected.symmetric_difference_update({name})
            elif is_dir:
                self.path = path
            else:
                w.open(Editor(path))

        def long_click() -> None:
            self.selected.symmetric_difference_update({name})

        when = time.strftime("%d.%m.%y %H:%M", time.gmtime(mtime))
        return Node(LL, (0, y, SCREEN_W, y + ROW_H), clickable=True, focusable=True, long_clickable=True,
                    selected=name in self.selected, on_click=click, on_long_click=long_click, children=[
                        Node(IMAGE_VIEW, (42, y + 45, 142, y + 145), rid=C + "opoc_filesystem_item__image",
                             desc="Folder" if is_dir else "File"),
                        Node(TV, (189, y + 35, 1000, y + 105), text=name, rid=C + "opoc_filesystem_item__title"),
                        Node(TV, (189, y + 110, 1000, y + 160),
                             text=when if is_dir else f"{when}   {human_size(size)}",
                             rid=C + "opoc_filesystem_item__description")])

    def _new_dialog(self, w: AppHost) -> None:
        box = {"name": "", "error": ""}

        def setter(text: str) -> None:
            box["name"] = text
            box["error"] = ""

        def make(folder: bool) -> None:
            name = box["name"].strip()
            if not name or "/" in name:
                box["error"] = "Please enter a name"
                w.invalidate()
                return
            if not folder and "." not in name:
                name += ".md"  # the dialog's type is Markdown
            path = posixpath.join(self.path, name)
            if w.fs.exists(path):
                box["error"] = "File already exists"
                w.invalidate()
                return
            w.close_dialog()
            if folder:
                w.fs.mkdir(path)
            else:
                w.fs.write(path, b"")
                w.open(Editor(path))

        def extra(y: int) -> tuple[list[Node], int]:
            kids = [Node(TV, (147, y, 933, y + 60), text="Name"),
                    Node(EDIT_TEXT, (147, y + 60, 760, y + 210), text=box["name"] or "Title", hint="Title",
                         rid=C + "new_file_dialog__name", clickable=True, focusable=True, focused=True,
                         on_text=setter),
                    Node(TV, (780, y + 60, 933, y + 210), text=".md", rid=C + "new_file_dialog__ext"),
                    Node(TV, (147, y + 230, 933, y + 300), text="Markdown", rid=C + "new_file_dialog__type")]
            if box["error"]:
                kids.append(Node(TV, (147, y + 310, 933, y + 370), text=box["error"], rid=C + "textinput_error"))
            return kids, 390

        w.show_dialog(Dialog(build=lambda _w: alert_dialog(
            "", "", [("OK", "android:id/button1", lambda: make(False)),
                                      ("Cancel", "android:id/button2", w.close_dialog),
                                      ("Folder", "android:id/button3", lambda: make(True))], extra=extra), pkg=PKG))

    def _confirm_delete(self, w: AppHost) -> None:
        names = sorted(self.selected)

        def delete() -> None:
            for n in names:
                p = posixpath.join(self.path, n)
                if w.fs.exists(p):
                    w.fs.remove(p)
            self.selected.clear()
            w.close_dialog()

        confirm(w, "Confirm Delete", "\n".join(names), "OK", delete, pkg=PKG)

    def _selection_menu(self, w: AppHost) -> None:
        def select_all() -> None:
            self.selected = {n for n, _ in w.fs.listdir(self.path) if not n.startswith(".")}
            w.close_dialog()

        w.show_dialog(Dialog(build=lambda _w: popup_menu([("Select all", select_all)]), pkg=PKG))

    def _rename_dialog(self, w: AppHost, old: str) -> None:
        box = {"name": old, "error": ""}

        def setter(text: str) -> None:
            box["name"] = text
            box["error"] = ""

        def ok() -> None:
            name = box["name"].strip()
            dst = posixpath.join(self.path, name)
            if not name or "/" in name or (name != old and w.fs.exists(dst)):
                box["error"] = "Invalid name"
                w.invalidate()
                return
            w.close_dialog()
            if name != old:
                w.fs.move(posixpath.join(self.path, old), dst)
            self.selected.clear()

        def extra(y: int) -> tuple[list[Node], int]:
            kids = [Node(EDIT_TEXT, (147, y, 933, y + 150), text=box["name"] or "Name", hint="Name",
                         rid=C + "new_name", clickable=True, focusable=True, focused=True, on_text=setter)]
            if box["error"]:
                kids.append(Node(TV, (147, y + 160, 933, y + 220), text=box["error"], rid=C + "textinput_error"))
            return kids, 240

        confirm(w, "Rename", "", "OK", ok, extra=extra, pkg=PKG)


class Editor(Screen):
    """DocumentActivity: one EditText with the whole file; saved on Save and on leaving."""

    pkg = PKG
    activity = "net.gsantner.markor.activity.DocumentActivity"

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        self.text: str | None = None
        self.loaded: str | None = None
        self.focused = False

    @property
    def title(self) -> str:
        return posixpath.basename(self.path)

    def _load(self, w: AppHost) -> str:
        if self.text is None:
            try:
                self.text = w.fs.read(self.path).decode("utf-8", errors="replace")
            except (FileNotFoundError, IsADirectoryError):
                self.text = ""
            self.loaded = self.text
        return self.text

    def build(self, w: AppHost) -> Node:
        text = self._load(w)

        def setter(t: str) -> None:
            self.text = t
            self.focused = True

        def focus() -> None:
            self.focused = True

        bar = Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 300), rid=C + "toolbar", children=[
            Node(IMAGE_BUTTON, (0, STATUS_H, 147, 300), desc="Navigate up", clickable=True, focusable=True,
                 on_click=w.back),
            Node(TV, (189, 180, 700, 260), text=posixpath.basename(self.path),
                 rid=C + "note__activity__text_note_title"),
            Node(IMAGE_BUTTON, (828, STATUS_H, 954, 300), desc="Save", rid=C + "action_save", clickable=True,
                 focusable=True, on_click=lambda: self.save(w)),
            Node(IMAGE_BUTTON, (954, STATUS_H, 1080, 300), desc="More options", clickable=True, focusable=True,
                 on_click=lambda: None)])
        body = Node(EDIT_TEXT, (0, 300, SCREEN_W, 2127), text=text, hint="",
                    rid=C + "document__fragment__edit__highlighting_editor",
                    clickable=True, focusable=True, focused=self.focused, long_clickable=True, on_click=focus,
                    on_text=setter)
        return window_frame([Node(FL, (0, STATUS_H, SCREEN_W, NAV_TOP), children=[bar, body])])

    def type_text(self, text: str) -> None:
        if self.focused:
            self.text = (self.text or "") + text

    def on_enter(self) -> None:
        if self.focused:
            self.text = (self.text or "") + "\n"

    def delete_char(self) -> None:
        if self.focused and self.text:
            self.text = self.text[:-1]

    def save(self, w: AppHost) -> None:
        if self.text is not None and self.text != self.loaded:
            w.fs.write(self.path, self.text.encode())
            self.loaded = self.text

    def on_back(self, w: AppHost) -> bool:
        self.save(w)
        return False

    def on_pause(self, w: AppHost) -> None:
        """Home or another app: Markor saves the note when its editor leaves the screen."""
        self.save(w)


APP = App(pkg=PKG, label="Markor", activity="net.gsantner.markor.activity.MainActivity", root=Notebook)
