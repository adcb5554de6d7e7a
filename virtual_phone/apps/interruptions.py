"""System windows that interrupt an episode (`cmd vphone interrupt KIND AFTER`, virtual-phone only).

Each names the app in the foreground when it appears, and every way out of it (its buttons,
back, a swipe) only closes it: nothing a shell command reports changes, so an agent that gets
rid of one does no collateral damage. Resource ids and wording follow Android 14 on a Pixel:
the runtime permission dialog (PermissionController's GrantPermissionsActivity), Google Play's
in-app review sheet, and a SystemUI heads-up notification.
"""

from __future__ import annotations

from ..hierarchy import Callback, Node, SCREEN_W
from .base import BUTTON, FL, IMAGE_BUTTON, IMAGE_VIEW, LL, NAV_TOP, STATUS_H, TV

KINDS = ("permission", "rate", "headsup")
PERMISSION_PKG = "com.google.android.permissioncontroller"
REVIEW_PKG = "com.android.vending"
SYSTEMUI_PKG = "com.android.systemui"
_P = "com.android.permissioncontroller:id/"
_S = SYSTEMUI_PKG + ":id/"


def permission_dialog(label: str, dismiss: Callback) -> Node:
    """"Allow LABEL to send you notifications?" with Allow / Don't allow (modal)."""
    l, t, r, b = 63, 822, 1017, 1578
    return Node(FL, (l, t, r, b), children=[
        Node(LL, (l, t, r, b), rid=_P + "grant_dialog", children=[
            Node(IMAGE_VIEW, (477, t + 63, 603, t + 189), rid=_P + "permission_icon"),
            Node(TV, (l + 63, t + 231, r - 63, t + 399), text=f"Allow {label} to send you notifications?",
                 rid=_P + "permission_message"),
            Node(LL, (l + 42, t + 441, r - 42, b - 42), rid=_P + "button_group", children=[
                Node(BUTTON, (l + 42, t + 441, r - 42, t + 567), text="Allow", rid=_P + "permission_allow_button",
                     clickable=True, focusable=True, on_click=dismiss),
                Node(BUTTON, (l + 42, t + 588, r - 42, t + 714), text="Don't allow",
                     rid=_P + "permission_deny_button", clickable=True, focusable=True, on_click=dismiss)])])])


def rate_sheet(label: str, dismiss: Callback) -> Node:
    """Google Play's in-app review: "Enjoying LABEL?" / "Rate this app", Not now / Rate (a bottom
    sheet; back or a tap above it closes it too)."""
    t, b = 1500, NAV_TOP
    return Node(FL, (0, t, SCREEN_W, b), children=[
        Node(LL, (0, t, SCREEN_W, b), rid=REVIEW_PKG + ":id/review_sheet", children=[
            Node(IMAGE_VIEW, (63, t + 63, 189, t + 189), desc=label),
            Node(TV, (231, t + 63, 1017, t + 147), text=f"Enjoying {label}?", rid=REVIEW_PKG + ":id/title"),
            Node(TV, (231, t + 147, 1017, t + 210), text="Rate this app", rid=REVIEW_PKG + ":id/subtitle"),
            Node(TV, (63, t + 252, 1017, t + 378), text="Tell others what you think", desc="Tell others what you think"),
            Node(BUTTON, (483, b - 189, 735, b - 63), text="Not now", rid=REVIEW_PKG + ":id/not_now_button",
                 clickable=True, focusable=True, on_click=dismiss),
            Node(BUTTON, (756, b - 189, 1017, b - 63), text="Rate", rid=REVIEW_PKG + ":id/rate_button",
                 clickable=True, focusable=True, on_click=dismiss)])])


HEADS_UP = (21, 42, SCREEN_W - 21, STATUS_H + 210)


def heads_up(label: str, dismiss: Callback) -> Node:
    """A heads-up notification from LABEL at the top of the screen (not modal; a swipe on it, or
    its Dismiss button, closes it; a tap on it does nothing here, so no app is opened)."""
    l, t, r, b = HEADS_UP
    return Node(FL, (l, t, r, b), rid=_S + "heads_up_container", children=[
        Node(FL, (l, t, r, b), rid=_S + "expandableNotificationRow", desc=f"{label} notification", clickable=True,
             focusable=True, children=[
                 Node(IMAGE_VIEW, (l + 42, t + 42, l + 126, t + 126), rid="android:id/icon"),
                 Node(TV, (l + 147, t + 35, l + 600, t + 91), text=label, rid="android:id/app_name_text"),
                 Node(TV, (l + 147, t + 98, r - 168, t + 161), text=f"New from {label}", rid="android:id/title"),
                 Node(TV, (l + 147, t + 168, r - 168, t + 224), text="See what's new", rid="android:id/text"),
                 Node(IMAGE_BUTTON, (r - 147, t + 42, r - 21, t + 168), desc="Dismiss", rid=_S + "dismiss_button",
                      clickable=True, focusable=True, on_click=dismiss)])])
