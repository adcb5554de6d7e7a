"""The virtual phone's UI: installed apps, tasks and back stacks, windows, touch and key input.

Shell, RPC and screenshots are layered on top (world.py); the transport calls them from
executor threads, and one re-entrant lock serialises them so UI and shell never see half a change.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .apps import interruptions
from .apps.base import FL, IMAGE_VIEW, LL, STATUS_H, TV, alert_dialog
from .apps.launcher import PKG as LAUNCHER_PKG
from .apps.launcher import Launcher
from .apps.systemui import internet_dialog, shade
from .core import App, Dialog, Intent, Package, Screen
from .display import PHYSICAL_DENSITY, shown, to_logical
from .fs import VirtualFS
from .hierarchy import SCREEN_H, SCREEN_W, Node, Window, contains, deepest_at, set_package, to_xml
from .logbuf import LogBuffer
from .phone_clock import clock_text
from .state import DeviceState
from .touch import Touch


@dataclass
class Task:
    id: int
    pkg: str
    stack: list[Screen] = field(default_factory=list)


class Ui:
    def __init__(self, fs: VirtualFS, packages: list[Package], *, model: str = "VirtualPhone",
                 seed: int = 0) -> None:
        self.fs = fs
        self.model = model
        self.seed = seed
        self.serialno: str | None = None   # the phone sets its own (real phones differ in ro.serialno)
        self.sim = True                    # a SIM on a network (`phone start --no-sim`: none)
        self.lock = threading.RLock()
        self.u2_running = False
        self.state = DeviceState()
        self.packages = {p.pkg: p for p in packages}
        self.apps: dict[str, App] = {p.pkg: p for p in packages if isinstance(p, App)}
        self.launcher = Launcher()
        self.tasks: dict[str, Task] = {}
        self.fg: str = LAUNCHER_PKG
        self.system_dialog: Dialog | None = None
        self.shade_open = False  # Quick Settings pulled down over everything
        self.internet_dialog = False  # the Internet tile's panel, over the shade
        self.next_task_id = 42
        self._windows: list[Window] | None = None
        self._shown: tuple[list[Window], list[Window]] | None = None   # (windows, as shown)
        self._windows_minute = 0
        self._record_ids: dict[tuple[str, object], str] = {}
        self.user_packages: dict[str, list[str]] = {}   # installed by `pm install`: its input methods
        self.log = LogBuffer(now_ms=self.state.clock.now_ms)   # what `log` writes and `logcat` reads
        self.touch = Touch()   # the finger of injectInputEvent between its down and up
        self.rpc_objects: dict[str, Callable[[Ui], Node | None]] = {}   # childByText's UiObject ids
        # `cmd vphone interrupt KIND AFTER`: the kind armed and the inputs left before it shows,
        # then (kind, app label) while it is on screen.
        self.interrupt_armed: tuple[str, int] | None = None
        self.interruption: tuple[str, str] | None = None
        # `cmd vphone suggestions N SEED`: suggestion cards above Settings' home list, as a real
        # phone shows "Finish setting up", "Add fingerprint"... (they move every row below them)
        self.suggestions: tuple[int, int] = (0, 0)

    def wait_unlocked(self, event: threading.Event, seconds: float) -> bool:
        """Wait up to `seconds` for `event` with this thread's hold on the lock let go, so RPC and
        other shells go on meanwhile (a phone's sleep blocks nobody else); True if it was set."""
        try:
            self.lock.release()
        except RuntimeError:       # not held (a direct call from a test)
            return event.wait(seconds)
        try:
            return event.wait(seconds)
        finally:
            self.lock.acquire()

    # --- system dialogs and properties -------------------------------------------------------------------

    def show_system_dialog(self, title: str, message: str) -> None:
        with self.lock:
            def ok() -> None:
                self.system_dialog = None
            self.system_dialog = Dialog(build=lambda _w: alert_dialog(title, message, [("OK", "android:id/button1", ok)]),
                                        pkg="com.android.systemui", cancelable=True, on_cancel=ok)
            self.invalidate()

    def props(self) -> dict[str, str]:
        serial = self.serialno or f"VPHONE{self.seed:08d}"
        return {
            "ro.product.model": self.model,
            "ro.product.name": "vphone",
            "ro.product.device": "vphone",
            "ro.product.brand": "google",
            "ro.product.manufacturer": "Google",
            "ro.product.cpu.abi": "arm64-v8a",
            "ro.build.version.release": "14",
            "ro.build.version.sdk": "34",
            "ro.build.id": "UQ1A.240205.004",
            "ro.build.type": "user",
            "ro.build.tags": "release-keys",
            "ro.build.characteristics": "nosdcard",
            "ro.build.fingerprint": "google/vphone/vphone:14/UQ1A.240205.004/11269751:user/release-keys",
            "ro.serialno": serial,
            "ro.boot.serialno": serial,
            "ro.sf.lcd_density": "420",
            "ro.debuggable": "0",
            "ro.secure": "1",
            "sys.boot_completed": "1",
            "persist.sys.timezone": "GMT",
            "persist.sys.locale": "en-US",
            "gsm.operator.alpha": "T-Mobile" if self.sim else "",
            "gsm.sim.state": "READY" if self.sim else "ABSENT",
        }

    # --- interruptions (cmd vphone interrupt) ---------------------------------------------------

    def arm_interruption(self, kind: str, after: int) -> None:
        """`kind` appears after `after` more user inputs (at once for 0); one per arming."""
        self.interruption = None
        self.interrupt_armed = (kind, after)
        if after <= 0:
            self._show_interruption()
        self.invalidate()

    def disarm_interruption(self) -> None:
        self.interrupt_armed = self.interruption = None
        self.invalidate()

    def note_input(self) -> None:
        """One user input (tap, long press, swipe, key press, text) has been handled."""
        if self.interrupt_armed is not None:
            kind, left = self.interrupt_armed
            self.interrupt_armed = (kind, left - 1)
            if left - 1 <= 0:
                self._show_interruption()

    def _show_interruption(self) -> None:
        if self.interrupt_armed is None:
            return
        app = self.apps.get(self.fg)
        self.interruption = (self.interrupt_armed[0], app.label if app is not None else "Pixel Launcher")
        self.interrupt_armed = None
        self.invalidate()

    def _modal_interruption(self) -> bool:
        """A permission dialog or review sheet is up: it has the keyboard focus, not the app."""
        return self.interruption is not None and self.interruption[0] != "headsup" and not self.shade_open

    def dismiss_interruption(self) -> None:
        """Any way out of an interruption: it goes, and nothing else changes."""
        self.interruption = None
        self.invalidate()

    def _interruption_window(self) -> Window | None:
        if self.interruption is None:
            return None
        kind, label = self.interruption
        if kind == "permission":
            root = interruptions.permission_dialog(label, self.dismiss_interruption)
            set_package(root, interruptions.PERMISSION_PKG)
            return Window(root, modal=True, on_outside=None, kind="dialog")
        if kind == "rate":
            root = interruptions.rate_sheet(label, self.dismiss_interruption)
            set_package(root, interruptions.REVIEW_PKG)
            return Window(root, modal=True, on_outside=self.dismiss_interruption, kind="dialog")
        root = interruptions.heads_up(label, self.dismiss_interruption)
        set_package(root, interruptions.SYSTEMUI_PKG)
        return Window(root, kind="overlay")

    # --- navigation -------------------------------------------------------------------------

    def invalidate(self) -> None:
        self._windows = None
        self._shown = None

    @property
    def top(self) -> Screen:
        if self.fg == LAUNCHER_PKG:
            return self.launcher
        return self.tasks[self.fg].stack[-1]

    def launch(self, pkg: str, fresh: bool = False) -> bool:
        """Launcher icon / monkey / am start: resume the app's task, or start its root activity."""
        app = self.apps.get(pkg)
        if pkg == LAUNCHER_PKG:
            self.home()
            return True
        if app is None:
            return False
        self.shade_open = self.internet_dialog = False
        if pkg != self.fg:
            self._pause_top()
        if fresh or pkg not in self.tasks:
            self.tasks.pop(pkg, None)
            self.tasks[pkg] = Task(self.next_task_id, pkg, [app.root()])
            self.next_task_id += 1
        else:  # bring to front: most recent last
            self.tasks[pkg] = self.tasks.pop(pkg)
        self.fg = pkg
        self.log.write("I", "ActivityTaskManager", f"START u0 {{flg=0x10000000 cmp={pkg}/{app.activity}}} "
                       "with LAUNCH_MULTIPLE from uid 2000 (BAL_ALLOW_PERMISSION) result code=0", pid=600)
        self.invalidate()
        return True

    def start(self, intent: Intent) -> bool:
        """startActivity(intent) by action: the first app (registration order) that takes it."""
        for app in self.apps.values():
            handler = app.intents.get(intent.action)
            if handler is not None and handler(self, intent):
                self.invalidate()
                return True
        return False

    def open(self, screen: Screen) -> None:
        """startActivity inside the foreground app."""
        if self.fg == LAUNCHER_PKG:
            return
        self.tasks[self.fg].stack.append(screen)
        self.invalidate()

    def finish(self) -> None:
        """The top activity finishes itself (e.g. Save): like back without dialogs."""
        if self.fg == LAUNCHER_PKG:
            return
        stack = self.tasks[self.fg].stack
        if len(stack) > 1:
            stack.pop()
        else:
            self.fg = LAUNCHER_PKG
        self.invalidate()

    def home(self) -> None:
        self.shade_open = self.internet_dialog = False
        self._pause_top()
        self.fg = LAUNCHER_PKG
        self.invalidate()

    def _pause_top(self) -> None:
        """onPause of the activity leaving the screen (Markor saves the open note then)."""
        if self.fg != LAUNCHER_PKG:
            pause = getattr(self.top, "on_pause", None)   # a hook only some screens define
            if pause is not None:
                pause(self)

    def back(self) -> None:
        self.invalidate()
        if self.internet_dialog:
            self.internet_dialog = False
            return
        if self.shade_open:
            self.shade_open = False
            return
        if self.interruption is not None and self.interruption[0] != "headsup":
            self.dismiss_interruption()
            return
        if self.system_dialog is not None:
            self.system_dialog = None
            return
        top = self.top
        if top.dialog is not None:
            d = top.dialog
            if d.cancelable:
                top.dialog = None
                if d.on_cancel:
                    d.on_cancel()
            return
        if self.fg == LAUNCHER_PKG:
            return
        if top.on_back(self):
            return
        stack = self.tasks[self.fg].stack
        if len(stack) > 1:
            stack.pop()
        else:
            # Android 12+: back on a task's root activity moves the task behind the launcher.
            self.home()

    def type_text(self, text: str) -> None:
        """Keyboard input into whatever has focus (`input text`, pasted clipboard): one user input."""
        typer = getattr(self.top, "type_text", None)   # only screens with a text field define it
        if typer is not None and not self._modal_interruption():
            typer(text)
        self.invalidate()
        self.note_input()

    def press_key(self, code: int) -> None:
        """A key event by Android keycode (HOME 3, BACK 4, ENTER 66, DEL 67, APP_SWITCH 187)."""
        if code == 3:
            self.home()
        elif code == 4:
            self.back()
        elif code == 6:
            self.end_call()
        elif code == 187:
            self.home()  # no recents screen: treat like leaving the app, as the overview would
        elif code in (67, 66) and not self._modal_interruption():
            handler = getattr(self.top, "delete_char" if code == 67 else "on_enter", None)
            if handler is not None:
                handler()
        self.invalidate()
        self.note_input()

    def end_call(self) -> None:
        """KEYCODE_ENDCALL or the End call button: log the call, close the in-call screen."""
        tel = self.state.telephony
        if tel.in_call is not None:
            tel.hang_up(self.state.name_for_number(tel.in_call))
        for pkg, task in list(self.tasks.items()):
            task.stack = [s for s in task.stack if not s.call_screen]
            if not task.stack:
                self.tasks.pop(pkg)
                if self.fg == pkg:
                    self.fg = LAUNCHER_PKG
        self.invalidate()

    def force_stop(self, pkg: str) -> None:
        self.tasks.pop(pkg, None)
        if self.fg == pkg:
            self.fg = LAUNCHER_PKG
        self.invalidate()

    def open_shade(self) -> None:
        self.shade_open = True
        self.invalidate()

    def close_shade(self) -> None:
        self.shade_open = False
        self.internet_dialog = False
        self.invalidate()

    def show_internet_dialog(self) -> None:
        self.internet_dialog = True
        self.invalidate()

    def close_internet_dialog(self) -> None:
        self.internet_dialog = False
        self.invalidate()

    def show_dialog(self, dialog: Dialog) -> None:
        self.top.dialog = dialog
        self.invalidate()

    def close_dialog(self) -> None:
        self.top.dialog = None
        self.invalidate()

    def running_packages(self) -> list[str]:
        return list(self.tasks)

    def record_id(self, obj: object, tag: str = "") -> str:
        """Stable pseudo hash for ActivityRecord{...}/Window{...} lines."""
        key = (tag, obj if isinstance(obj, str) else id(obj))
        if key not in self._record_ids:
            self._record_ids[key] = f"{(0x9e3779b1 * (len(self._record_ids) + 1 + self.seed)) & 0xfffffff:x}"
        return self._record_ids[key]

    def component(self) -> tuple[str, str]:
        t = self.top
        return t.pkg, t.activity

    def date_text(self) -> str:
        t = self.state.clock.gmtime()
        return time.strftime("%a, %b ", t) + str(t.tm_mday)

    # --- windows ------------------------------------------------------------------------------

    def windows(self) -> list[Window]:
        """App window, its dialog, a system dialog, then the status bar (as u2 dumps them)."""
        minute = int(self.state.clock.now() // 60)  # the status bar clock is part of the screen
        if self._windows is not None and minute == self._windows_minute:
            return self._windows
        self._windows_minute = minute
        if self.shade_open:
            root = shade(self)
            set_package(root, "com.android.systemui")
            wins = [Window(root)]
            if self.internet_dialog:
                dlg = internet_dialog(self)
                set_package(dlg, "com.android.systemui")
                wins.append(Window(dlg, modal=True, on_outside=self.close_internet_dialog, kind="dialog"))
            self._windows = wins
            return wins
        top = self.top
        app = top.build(self)
        set_package(app, top.pkg)
        wins = [Window(app)]
        if top.dialog is not None:
            d = top.dialog
            root = d.build(self)
            set_package(root, d.pkg)
            wins.append(Window(root, modal=True, on_outside=self.back if d.cancelable else None, kind="dialog"))
        if self.system_dialog is not None:
            root = self.system_dialog.build(self)
            set_package(root, self.system_dialog.pkg)
            wins.append(Window(root, modal=True, on_outside=None, kind="dialog"))
        interruption = self._interruption_window()
        if interruption is not None:
            wins.append(interruption)
        wins.append(Window(self.status_bar(), kind="status"))
        self._windows = wins
        return wins

    @property
    def density_scale(self) -> float:
        """`wm density N`: the display drawn N/420 the size (display.py)."""
        return self.state.density / PHYSICAL_DENSITY

    def shown_windows(self) -> list[Window]:
        """The windows as the dump, the screenshot and uiautomator2 see them: under the font
        scale and the display density (display.py). Input is hit-tested in `windows()`."""
        wins = self.windows()
        if self._shown is None or self._shown[0] is not wins:
            self._shown = (wins, shown(wins, self.state.font_scale, self.density_scale))
        return self._shown[1]

    def to_logical(self, x: int, y: int) -> tuple[int, int]:
        """A point on the screen (where input arrives) in the windows' own coordinates."""
        return to_logical(x, y, self.density_scale)

    def focused_field(self) -> Node | None:
        """The text field with input focus, where the keyboard types (None when none has it)."""
        for win in self.windows():
            for n in win.root.walk():
                if n.focused and n.on_text is not None:
                    return n
        return None

    def active_window(self) -> Window:
        """The window with input focus (UiAutomation.getRootInActiveWindow): the topmost but the status bar."""
        return [w for w in self.shown_windows() if w.kind not in ("status", "overlay")][-1]

    def dump(self, max_depth: int = 50, compressed: bool = False) -> str:
        with self.lock:
            return to_xml([w.root for w in self.shown_windows()], max_depth, compressed)

    def status_bar(self) -> Node:
        st = self.state
        t = self.state.clock.gmtime()
        clock = clock_text(t.tm_hour, t.tm_min, st.time_24h, am_pm=False)
        icons: list[Node] = []
        x = 986
        descs = []
        if st.zen_mode:
            descs.append("Do Not Disturb")
        if st.airplane:
            descs.append("Airplane mode.")
        if st.bluetooth:
            descs.append("Bluetooth on.")
        if st.wifi:
            descs.append("Wifi signal full.")
        if st.battery_saver:
            descs.append("Battery Saver is on.")
        for d in reversed(descs):
            icons.insert(0, Node(IMAGE_VIEW, (x - 57, 37, x, 95), desc=d))
            x -= 57
        sid = "com.android.systemui:id/"
        bar = Node(FL, (0, 0, SCREEN_W, STATUS_H), rid=sid + "status_bar", children=[
            Node(LL, (47, 0, 1027, STATUS_H), rid=sid + "status_bar_contents", children=[
                Node(TV, (47, 1, 154, STATUS_H), text=clock, rid=sid + "clock",
                     desc=clock_text(t.tm_hour, t.tm_min, st.time_24h)),
                Node(LL, (x, 1, 1006, STATUS_H), rid=sid + "system_icons", children=[
                    Node(LL, (x, 1, 986, STATUS_H), rid=sid + "statusIcons", children=icons),
                    Node(LL, (986, 1, 1006, STATUS_H), rid=sid + "battery",
                         desc=f"Battery {st.battery_level} percent.")])])])
        root = Node(FL, (0, 0, SCREEN_W, STATUS_H), children=[
            Node(FL, (0, 0, SCREEN_W, STATUS_H), rid=sid + "status_bar_container", children=[bar])])
        set_package(root, "com.android.systemui")
        return root

    # --- input --------------------------------------------------------------------------------

    def _target_window(self, x: int, y: int) -> Window | None:
        """The window a touch at (x, y) goes to; None when a modal dialog swallows it."""
        wins = self.windows()
        for w in reversed([w for w in wins if w.kind in ("dialog", "overlay")]):  # topmost first
            if contains(w.root.bounds, x, y):
                return w
            if w.modal:
                if w.on_outside is not None:
                    w.on_outside()
                return None
        if y < STATUS_H and not self.shade_open:
            return None
        return wins[0]

    def tap(self, x: int, y: int, long: bool = False) -> None:
        """A tap (or long press) at (x, y) on the screen: one user input."""
        with self.lock:
            self._tap(x, y, long)
            self.note_input()

    def _tap(self, x: int, y: int, long: bool) -> None:
        with self.lock:
            x, y = self.to_logical(x, y)
            win = self._target_window(x, y)
            if win is None:
                self.invalidate()
                return
            path = deepest_at(win.root, x, y)
            for n in reversed(path):
                if not n.enabled:
                    continue
                if long and n.on_long_click is not None:
                    n.on_long_click()
                    break
                if n.on_tap_at is not None:
                    n.on_tap_at(x, y)
                    break
                if n.on_click is not None:
                    n.on_click()
                    break
            self.invalidate()

    def swipe(self, fx: int, fy: int, tx: int, ty: int) -> None:
        """A swipe from (fx, fy) to (tx, ty) on the screen: one user input."""
        with self.lock:
            self._swipe(fx, fy, tx, ty)
            self.note_input()

    def _swipe(self, fx: int, fy: int, tx: int, ty: int) -> None:
        with self.lock:
            self.invalidate()
            if fy >= SCREEN_H - 63 and fy - ty > 300:
                self.home()  # gesture navigation: swipe up from the bottom edge
                return
            if fx <= 20 or fx >= SCREEN_W - 20:
                if abs(tx - fx) > 200:
                    self.back()  # gesture navigation: swipe in from a side edge
                return
            if fy < STATUS_H + 60 and ty - fy > 300 and not self.shade_open:
                self.open_shade()  # pulled down from the status bar
                return
            if self.shade_open and fy - ty > 300 and not self.internet_dialog:
                self.close_shade()
                return
            (fx, fy), (tx, ty) = self.to_logical(fx, fy), self.to_logical(tx, ty)
            if (self.interruption is not None and self.interruption[0] == "headsup"
                    and contains(interruptions.HEADS_UP, fx, fy) and max(abs(tx - fx), abs(ty - fy)) > 100):
                self.dismiss_interruption()   # swiped away
                return
            win = self._target_window(fx, fy)
            if win is None:
                return
            path = deepest_at(win.root, fx, fy)
            for n in reversed(path):
                if n.on_tap_at is not None:
                    n.on_tap_at(tx, ty)
                    break
                if n.on_scroll is not None and abs(fy - ty) > abs(fx - tx):
                    n.on_scroll(fy - ty)
                    break
            self.invalidate()
