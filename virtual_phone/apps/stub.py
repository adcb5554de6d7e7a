"""Apps on the launcher that no task needs yet: one titled screen each."""

from __future__ import annotations

from ..core import App, AppHost, Screen
from ..hierarchy import SCREEN_W, Node
from .base import STATUS_H, TV, VIEW_GROUP, window_frame


class StubApp(Screen):
    def __init__(self, pkg: str, activity: str, label: str) -> None:
        super().__init__()
        self.pkg, self.activity, self.label = pkg, activity, label

    @property
    def title(self) -> str:
        return self.label

    def build(self, w: AppHost) -> Node:
        return window_frame([Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 2337), children=[
            Node(VIEW_GROUP, (0, STATUS_H, SCREEN_W, 308), rid=f"{self.pkg}:id/toolbar", children=[
                Node(TV, (63, 180, 63 + 30 * len(self.label), 260), text=self.label)]),
            Node(TV, (63, 1100, 1017, 1200), text=f"{self.label} has nothing to show yet",
                 rid=f"{self.pkg}:id/empty_view")])])


def stub_app(pkg: str, activity: str, label: str, *, hotseat: bool = False) -> App:
    return App(pkg=pkg, label=label, activity=activity, root=lambda: StubApp(pkg, activity, label), hotseat=hotseat)
