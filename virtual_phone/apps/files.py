"""Files (DocumentsUI, com.google.android.documentsui): roots drawer, folder lists, select, delete, rename, move.

The state is the file system itself (/sdcard is /storage/emulated/0): a real phone answers
`ls /sdcard/Download`, `stat -c %s FILE` and the like the same way (toybox). DocumentsUI is
the "Files" app of AOSP and of Google's emulator images (AndroidAppHost's Files tasks use it);
the wording is DocumentsUI's res/values/strings.xml (AOSP packages/apps/DocumentsUI): "Show roots",
"Select all", "Move to…", "Rename", "New folder", "Move", "No items", "N selected", the delete
confirmations and "A file with this name already exists.".
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable
from functools import partial

from ..core import App, AppHost, Dialog, Screen
from ..hierarchy import SCREEN_W, Callback, Node, clip
from .base import (
    BUTTON, EDIT_TEXT, FL, IMAGE_BUTTON, IMAGE_VIEW, LL, NAV_TOP, RECYCLER, STATUS_H, TV, VIEW_GROUP, Scroll,
    alert_dialog, confirm, popup_menu, window_frame,
)

PKG = "com.google.android.documentsui"
C = PKG + ":id/"
STORAGE = "/sdcard"
DOWNLOADS = "/sdcard/Download"
ROW_H = 200


def human_size(n: int) -> str:
    """Formatter.formatShortFileSize style: 0 B, 812 B, 2.1 kB, 3.4 MB (SI units since Android 8)."""
    if n < 1000:
        return f"{n} B"
    for unit in ("kB", "MB", "GB"):
        n_f = n / 1000
        if n_f < 1000 or unit == "GB":
            return f"{n_f:.1f} {unit}" if n_f < 100 else f"{n_f:.0f} {unit}"
        n = int(n_f)
    return f"{n} B"


class Browser(Screen):
    """One folder's contents; `pick_for` turns it into the "Move to" destination picker."""

    pkg = PKG
    activity = "com.android.documentsui.files.FilesActivity"

    def __init__(self, path: str = DOWNLOADS, pick_for: list[str] | None = None) -> None:
        super().__init__()
        self.path = path
        self.pick_for = pick_for
        self.selected: set[str] = set()
        self.scroll = Scroll()
        self.history: list[str] = []

    @property
    def title(self) -> str:
        return self._label(self.path)

    def _label(self, path: str, w: AppHost | None = None) -> str:
        if path == DOWNLOADS:
            return "Downloads"
        if path == STORAGE:
            return w.model if w is not None else "Internal storage"
        return posixpath.basename(path)

    def _go_unless_here(self, path: str) -> None:
        if path != self.path:
            self.go(path)

    def go(self, path: str) -> None:
        self.history.append(self.path)
        self.path = path
        self.selected.clear()
        self.scroll = Scroll()

    def on_back(self, w: AppHost) -> bool:
        if self.selected:
            self.selected.clear()
            return True
        if self.history:
            self.path = self.history.pop()
            self.scroll = Scroll()
            return True
        return False

    def entries(self, w: AppHost) -> list[tuple[str, bool, int, int]]:
        """(name, is_dir, size, mtime): folders first, then files, by name (DocumentsUI's default)."""
        try:
            items = w.fs.listdir(self.path)
        except (FileNotFoundError, NotADirectoryError):
            return []
        out = [(n, s.is_dir, s.size, s.mtime) for n, s in items if not n.startswith(".")]
        return sorted(out, key=lambda e: (not e[1], e[0].lower()))

    def build(self, w: AppHost) -> Node:
        if not w.fs.exists(self.path):
            self.path = DOWNLOADS if w.fs.exists(DOWNLOADS) else STORAGE
        entries = self.entries(w)
        self.selected &= {e[0] for e in entries}
        picking = self.pick_for is not None
        top, bottom = 460, (NAV_TOP - 190) if picking else NAV_TOP
        self.scroll.content_h, self.scroll.viewport_h = len(entries) * ROW_H, bottom - top
        self.scroll.by(0)
        rows: list[Node] = []
        y = top - self.scroll.offset
        for name, is_dir, size, mtime in entries:
            if y + ROW_H > top and y < bottom:
                rows.append(self._row(w, name, is_dir, size, mtime, y))
            y += ROW_H
        can = self.scroll.content_h > self.scroll.viewport_h
        lst = clip(Node(RECYCLER, (0, top, SCREEN_W, bottom), rid=C + "dir_list", focusable=True, scrollable=can,
                        on_scroll=self.scroll.by if can else None, children=rows), (0, top, SCREEN_W, bottom))
        kids: list[Node] = [self._toolbar(w), self._breadcrumb(w)]
        if lst is not None:
            kids.append(lst)
        if not entries:
            kids.append(Node(TV, (300, 1100, 780, 1170), text="No items", rid=C + "message"))
        if picking:
            n = len(self.pick_for or [])
            kids.append(Node(LL, (0, NAV_TOP - 190, SCREEN_W, NAV_TOP), rid=C + "container_save", children=[
                Node(BUTTON, (500, NAV_TOP - 160, 740, NAV_TOP - 40), text="Cancel", rid="android:id/button2",
                     clickable=True, focusable=True, on_click=w.finish),
                Node(BUTTON, (760, NAV_TOP - 160, 1017, NAV_TOP - 40), text="Move", rid="android:id/button1",
                     desc=f"Move {n} item{'s' if n != 1 else ''} here", clickable=True, focusable=True,
                     on_click=lambda: self._move_here(w))]))
        return window_frame([Node(FL, (0, STATUS_H, SCREEN_W, NAV_TOP), children=kids)])

    def _toolbar(self, w: AppHost) -> Node:
        c = C
        if self.selected and self.pick_for is None:
            n = len(self.selected)
            return Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 300), rid=c + "action_mode_bar", children=[
                Node(IMAGE_BUTTON, (0, STATUS_H, 147, 300), desc="Done", clickable=True, focusable=True,
                     on_click=self.selected.clear),
                Node(TV, (189, 180, 600, 260), text=f"{n} selected", rid=c + "action_bar_title"),
                Node(IMAGE_BUTTON, (702, STATUS_H, 828, 300), desc="Share", clickable=True, focusable=True,
                     on_click=lambda: None),
                Node(IMAGE_BUTTON, (828, STATUS_H, 954, 300), desc="Delete", clickable=True, focusable=True,
                     on_click=lambda: self._confirm_delete(w)),
                Node(IMAGE_BUTTON, (954, STATUS_H, 1080, 300), desc="More options", clickable=True, focusable=True,
                     on_click=lambda: self._selection_menu(w))])
        title = "Move to" if self.pick_for is not None else self._label(self.path, w)
        kids = [Node(IMAGE_BUTTON, (0, STATUS_H, 147, 300), desc="Show roots", clickable=True, focusable=True,
                     on_click=lambda: self._roots(w)),
                Node(TV, (189, 180, 700, 260), text=title, rid=c + "toolbar_title")]
        kids.append(Node(IMAGE_BUTTON, (828, STATUS_H, 954, 300), desc="Search", clickable=True, focusable=True,
                         on_click=lambda: None))
        kids.append(Node(IMAGE_BUTTON, (954, STATUS_H, 1080, 300), desc="More options", clickable=True,
                         focusable=True, on_click=lambda: self._folder_menu(w)))
        return Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 300), rid=c + "toolbar", children=kids)

    def _breadcrumb(self, w: AppHost) -> Node:
        """The path under the toolbar: storage name > folder > subfolder, each tappable."""
        parts = [STORAGE]
        if self.path != STORAGE:
            rel = self.path[len(STORAGE) + 1:].split("/")
            parts += [STORAGE + "/" + "/".join(rel[:k + 1]) for k in range(len(rel))]
        crumbs = []
        x = 42
        for p in parts:
            label = w.model if p == STORAGE else posixpath.basename(p)
            wdt = 40 + len(label) * 26
            crumbs.append(Node(TV, (x, 330, x + wdt, 420), text=label, rid=C + "breadcrumb_text", clickable=True,
                               focusable=True, on_click=partial(self._go_unless_here, p)))
            x += wdt + 40
        return Node(RECYCLER, (0, 300, SCREEN_W, 450), rid=C + "horizontal_breadcrumb", children=crumbs)

    def _row(self, w: AppHost, name: str, is_dir: bool, size: int, mtime: int, y: int) -> Node:
        path = posixpath.join(self.path, name)
        sel = name in self.selected
        date = time.strftime("%b %d", time.gmtime(mtime)).replace(" 0", " ")
        summary = date if is_dir else f"{date} · {human_size(size)}"

        def click() -> None:
            if self.selected and self.pick_for is None:
                self.selected.symmetric_difference_update({name})
            elif is_dir:
                if self.pick_for is not None and path in self.pick_for:
                    return  # a folder cannot be moved into itself; DocumentsUI greys it out
                self.go(path)

        def long_click() -> None:
            if self.pick_for is None:
                self.selected.symmetric_difference_update({name})

        enabled = not (self.pick_for is not None and not is_dir)
        return Node(LL, (0, y, SCREEN_W, y + ROW_H), rid=C + "item_root", clickable=True, focusable=True,
                    long_clickable=True, selected=sel, enabled=enabled, on_click=click, on_long_click=long_click,
                    children=[
                        Node(IMAGE_VIEW, (63, y + 50, 163, y + 150), rid=C + "icon_mime",
                             desc="Folder" if is_dir else "File"),
                        Node(TV, (210, y + 40, 1000, y + 110), text=name, rid="android:id/title", enabled=enabled),
                        Node(TV, (210, y + 115, 1000, y + 165), text=summary, rid=C + "details",
                             enabled=enabled)])

    # --- menus and dialogs ---------------------------------------------------------------

    def _roots(self, w: AppHost) -> None:
        def pick(path: str) -> None:
            w.close_dialog()
            self.go(path)

        roots = [("Downloads", DOWNLOADS), (w.model, STORAGE)]
        w.show_dialog(Dialog(build=lambda _w: roots_drawer(roots, pick), pkg=PKG))

    def _folder_menu(self, w: AppHost) -> None:
        def new_folder() -> None:
            w.close_dialog()
            self._name_dialog(w, "New folder", "", lambda name: w.fs.mkdir(posixpath.join(self.path, name)))

        w.show_dialog(Dialog(build=lambda _w: popup_menu([("New folder", new_folder)]), pkg=PKG))

    def _selection_menu(self, w: AppHost) -> None:
        items: list[tuple[str, Callback]] = [("Select all", lambda: self._select_all(w))]
        paths = [posixpath.join(self.path, n) for n in sorted(self.selected)]

        def move() -> None:
            w.close_dialog()
            w.open(Browser(STORAGE, pick_for=paths))

        items.append(("Move to…", move))
        if len(paths) == 1:
            old = posixpath.basename(paths[0])

            def rename() -> None:
                w.close_dialog()

                def done(name: str) -> None:
                    w.fs.move(paths[0], posixpath.join(self.path, name))
                    self.selected.clear()
                self._name_dialog(w, "Rename", old, done)
            items.append(("Rename", rename))
        w.show_dialog(Dialog(build=lambda _w: popup_menu(items), pkg=PKG))

    def _select_all(self, w: AppHost) -> None:
        self.selected = {e[0] for e in self.entries(w)}
        w.close_dialog()

    def _confirm_delete(self, w: AppHost) -> None:
        names = sorted(self.selected)
        stats = [w.fs.stat(posixpath.join(self.path, n)) for n in names]
        dirs = [n for n, st in zip(names, stats) if st is not None and st.is_dir]
        n = len(names)
        if n == 1:
            msg = f'Delete folder "{names[0]}" and its contents?' if dirs else f'Delete "{names[0]}"?'
        elif len(dirs) == n:
            msg = f"Delete {n} folders and their contents?"
        else:
            msg = f"Delete {n} files?" if not dirs else f"Delete {n} items?"

        def delete() -> None:
            for n in names:
                try:
                    w.fs.remove(posixpath.join(self.path, n))
                except FileNotFoundError:
                    pass
            self.selected.clear()
            w.close_dialog()

        confirm(w, msg, "", "OK", delete, pkg=PKG)

    def _name_dialog(self, w: AppHost, title: str, initial: str, done: Callable[[str], object]) -> None:
        box = {"text": initial, "error": ""}

        def setter(text: str) -> None:
            box["text"] = text
            box["error"] = ""

        def ok() -> None:
            name = box["text"].strip()
            if not name or "/" in name:
                box["error"] = "Invalid name"
                w.invalidate()
                return
            if name != initial and w.fs.exists(posixpath.join(self.path, name)):
                box["error"] = "A file with this name already exists."
                w.invalidate()
                return
            w.close_dialog()
            if name != initial:
                done(name)

        def extra(y: int) -> tuple[list[Node], int]:
            kids = [Node(EDIT_TEXT, (147, y, 933, y + 150), text=box["text"] or "Name", hint="Name",
                         rid=C + "input", clickable=True, focusable=True, focused=True, on_text=setter)]
            if box["error"]:
                kids.append(Node(TV, (147, y + 160, 933, y + 220), text=box["error"], rid=C + "textinput_error"))
            return kids, 240

        w.show_dialog(Dialog(build=lambda _w: alert_dialog(title, "", [("OK", "android:id/button1", ok),
                                                                        ("Cancel", "android:id/button2",
                                                                         w.close_dialog)], extra=extra),
                             pkg=PKG))

    def _move_here(self, w: AppHost) -> None:
        for src in self.pick_for or []:
            dst = posixpath.join(self.path, posixpath.basename(src))
            if dst != src and w.fs.exists(src):
                w.fs.move(src, dst)
        w.finish()


def roots_drawer(roots: list[tuple[str, str]], pick: Callable[[str], None]) -> Node:
    """The navigation drawer over the left of the screen: one row per root."""
    rows = [Node(TV, (42, 200, 700, 280), text="Files", rid=C + "drawer_title")]
    y = 320
    for label, path in roots:
        rows.append(Node(LL, (0, y, 840, y + 147), clickable=True, focusable=True,
                         on_click=partial(pick, path), children=[
                             Node(TV, (147, y + 40, 800, y + 107), text=label, rid="android:id/title")]))
        y += 147
    return Node(FL, (0, 0, 840, NAV_TOP), rid=C + "drawer_roots", children=[
        Node(RECYCLER, (0, STATUS_H, 840, NAV_TOP), rid=C + "roots_list", children=rows)])


APP = App(pkg=PKG, label="Files", activity="com.android.documentsui.LauncherActivity", root=Browser)
