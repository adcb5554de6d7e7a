"""Phone profiles: what differs between phones (app packages, screen, Android version quirks).

A profile is a YAML file in device_profiles/phones/. Tasks name apps by alias (`settings`,
`clock`, ...); the profile maps each alias to the package this phone uses.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from agent_host.config.loading import load_model
from agent_host.config.strict import Closed
from agent_host.errors import ConfigError, UserError

REPO_ROOT = Path(__file__).resolve().parents[2]
PHONES_DIR = Path("device_profiles") / "phones"

# The one table of app aliases: the packages of a Pixel on Android 14, which the virtual phone
# uses too. A profile's `apps` lists only where its phone differs; checks fall back to these
# when no profile is at hand (e.g. evaluating a `foreground: {app: clock}` check in tests).
DEFAULT_APPS: dict[str, str] = {
    "settings": "com.android.settings",
    "clock": "com.google.android.deskclock",
    "contacts": "com.google.android.contacts",
    "phone": "com.google.android.dialer",
    "messages": "com.google.android.apps.messaging",
    "chrome": "com.android.chrome",
    "camera": "com.google.android.GoogleCamera",
    "photos": "com.google.android.apps.photos",
    "calendar": "com.google.android.calendar",
    "files": "com.google.android.documentsui",
    "markor": "net.gsantner.markor",
    "launcher": "com.google.android.apps.nexuslauncher",
}


class ScreenSize(Closed):
    width: int = Field(gt=0, description="pixels, portrait")
    height: int = Field(gt=0, description="pixels, portrait")
    density: int = Field(420, gt=0, description="dpi (`wm density`)")


class PhoneProfile(Closed):
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str
    android_version: int = Field(ge=8, le=20)
    screen: ScreenSize
    apps: dict[str, str] = Field(
        default_factory=dict, validate_default=True,
        description="app alias -> package where this phone differs from the Pixel's (DEFAULT_APPS); "
                    "a new alias adds an app, null removes one this phone lacks")
    command_variants: dict[str, str] = Field(
        default_factory=dict,
        description="exact shell command -> the command this phone needs instead; the judge runs "
                    "the variant and files its output under the original command")
    settle_min_s: float = Field(
        0.3, ge=0, le=5,
        description="seconds to let an action start before the first settle dump (a real phone "
                    "begins its transition ~100 ms after the input; the virtual phone changes at once)")
    settle_confirm: bool = Field(
        False,
        description="dump until two rendered observations agree after each action, for a phone whose "
                    "dumps do not wait for the UI to go idle (uiautomator's do: one dump is enough)")
    wait_steps: bool = Field(
        True,
        description="whether a task's `wait:` steps sleep (they give a real phone's radios time to "
                    "switch; the virtual phone switches as the command returns, so false there)")
    simulated: bool = Field(
        False, description="agent-host's virtual phone: it also takes the variations only it can apply "
                           "(the launcher's order, interruptions: config/variation.py VIRTUAL_ONLY)")
    notes: str = ""

    @field_validator("apps", mode="before")
    @classmethod
    def _onto_defaults(cls, apps: object) -> object:
        if not isinstance(apps, dict):
            return apps   # pydantic names the field and the type it expected
        return {k: v for k, v in {**DEFAULT_APPS, **apps}.items() if v is not None}

    def package(self, alias_or_package: str) -> str:
        """The package for an app alias; a name with a dot is taken as a package already."""
        return resolve_app(alias_or_package, self.apps, where=f"phone profile {self.id!r}")

    def command(self, cmd: str) -> str:
        """The command to run on this phone for a task's (canonical) command."""
        return self.command_variants.get(cmd, cmd)


def resolve_app(alias_or_package: str, apps: dict[str, str] | None = None, *, where: str = "") -> str:
    """Resolve an app alias through `apps` (default: DEFAULT_APPS); packages pass through."""
    table = DEFAULT_APPS if apps is None else apps
    if alias_or_package in table:
        return table[alias_or_package]
    if "." in alias_or_package:
        return alias_or_package
    known = ", ".join(sorted(table))
    raise UserError(f"unknown app alias {alias_or_package!r}{' in ' + where if where else ''} "
                    f"(known: {known}; or give a package name)")


def phones_dir() -> Path:
    """./device_profiles/phones if there is one, else the repository's."""
    local = Path.cwd() / PHONES_DIR
    return local if local.is_dir() else REPO_ROOT / PHONES_DIR


def list_phone_profiles() -> list[str]:
    return sorted(p.stem for p in phones_dir().glob("*.yaml"))


def load_phone_profile(name_or_path: str | Path | None = "virtual") -> PhoneProfile:
    """Load a profile by name (`virtual`, `pixel-android14`) or by path to a YAML file."""
    name = str(name_or_path or "virtual")
    path = Path(name)
    if not (path.suffix in (".yaml", ".yml") or path.exists()):
        path = phones_dir() / f"{name}.yaml"
        if not path.exists():
            raise ConfigError(f"unknown phone profile {name!r} (known: {', '.join(list_phone_profiles())})")
    return load_model(path, PhoneProfile)
