"""An app of the virtual phone is one module plus one registration (import layering: tests/test_layers.py)."""

from __future__ import annotations

from virtual_phone.apps.registry import installed
from virtual_phone.apps.stub import StubApp
from virtual_phone.core import App, AppHost, Intent
from virtual_phone.fs import VirtualFS
from virtual_phone.world import World


def test_a_new_app_is_one_registration():
    opened: list[str] = []

    def view(w: AppHost, intent: Intent) -> bool:
        opened.append(intent.data)
        return w.launch("org.example.notes")

    notes = App(pkg="org.example.notes", label="Notes", activity="org.example.notes.Main",
                root=lambda: StubApp("org.example.notes", "org.example.notes.Main", "Notes"),
                intents={"android.intent.action.VIEW": view})
    w = World(VirtualFS(), [*installed(), notes])
    assert w.rpc("exist", [{"text": "Notes", "mask": 1}])  # a launcher icon, no launcher edit
    assert "package:org.example.notes" in w.shell("pm list packages notes").stdout.decode()
    out = w.shell("am start -a android.intent.action.VIEW -d content://notes/1").stdout.decode()
    assert "Error" not in out and opened == ["content://notes/1"] and w.fg == "org.example.notes"
    w.shell("am start -n org.example.notes/.Main")
    assert w.fg == "org.example.notes"
