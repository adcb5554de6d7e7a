"""The apps and system packages installed on the virtual phone: the one place an app is registered.

Order matters: it is the launcher's (workspace icons left to right, then the hotseat).
"""

from __future__ import annotations

from ..core import Package
from ..state import DeviceState
from . import calendar, clock, contacts, dialer, files, markor, messages, settings
from .launcher import PKG as LAUNCHER_PKG
from .stub import stub_app

# Installed but without a launcher icon; `pm list packages` and `pm clear` know them.
SYSTEM_PACKAGES = [
    Package(pkg="android"), Package(pkg="com.android.systemui"), Package(pkg="com.android.shell"),
    Package(pkg="com.android.phone"), Package(pkg="com.android.bluetooth"),
    Package(pkg="com.android.providers.contacts", clear=DeviceState.clear_contacts_provider),
    Package(pkg="com.android.providers.telephony", clear=DeviceState.clear_telephony_provider),
    Package(pkg="com.android.providers.calendar", clear=lambda st: st.calendar.events.clear()),
    Package(pkg="com.android.providers.settings"), Package(pkg="com.android.providers.media"),
    Package(pkg="com.google.android.gms"), Package(pkg="com.android.vending"),
    Package(pkg="com.google.android.inputmethod.latin"), Package(pkg="com.google.android.permissioncontroller"),
    Package(pkg="com.android.documentsui"), Package(pkg="com.google.android.apps.wellbeing"),
    Package(pkg="com.android.nfc"), Package(pkg="com.android.networkstack"), Package(pkg=LAUNCHER_PKG),
]


def installed() -> list[Package]:
    """A fresh set of the phone's packages (apps first, in launcher order)."""
    return [
        settings.APP,
        clock.APP,
        contacts.APP,
        calendar.APP,
        files.APP,
        markor.APP,
        stub_app("com.google.android.apps.photos", "com.google.android.apps.photos.home.HomeActivity", "Photos"),
        stub_app("com.google.android.GoogleCamera", "com.android.camera.CameraLauncher", "Camera"),
        dialer.APP,
        messages.APP,
        stub_app("com.android.chrome", "com.google.android.apps.chrome.Main", "Chrome", hotseat=True),
        *SYSTEM_PACKAGES,
    ]
