"""YAML → pydantic models, with errors that name the file, the line and the field.

Every YAML file agent-host reads (tasks, builds, host and phone profiles, policy scripts)
goes through `load_model` / `load_yaml`, so every error reads the same way:
`tasks/wifi-on.yaml:7: check.setting.key: Field required`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from agent_host.errors import ConfigError

M = TypeVar("M", bound=BaseModel)

# libyaml is about ten times faster than the pure-Python loader when it is there.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason})") from None


def load_yaml(path: Path) -> tuple[Any, yaml.Node | None]:
    """Parse a YAML file; return the data and its node tree (for line numbers)."""
    text = _read(path)
    try:
        node = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}{line}: invalid YAML: {exc.problem or exc.context}") from None
    return data, node


def line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of the deepest node along `loc` (keys and list indices)."""
    best = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == str(part):
                    best = key.start_mark.line + 1
                    node = value
                    break
            else:
                return best
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return best
            node = node.value[part]
            best = node.start_mark.line + 1
        else:
            return best
    return best


def format_loc(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def validation_messages(path: Path, node: yaml.Node | None, exc: ValidationError,
                        prefix: tuple[Any, ...] = ()) -> list[str]:
    """One line per pydantic error: `file:line: field.path: message`."""
    lines = []
    for err in exc.errors(include_url=False):
        # pydantic puts tagged-union discriminator values in the loc; drop the ones
        # that are not keys in the document so the field path matches the YAML.
        loc = prefix + tuple(err["loc"])
        doc_loc = _document_loc(node, loc)
        line = line_of(node, doc_loc)
        where = f"{path}:{line}" if line else str(path)
        lines.append(f"{where}: {format_loc(doc_loc)}: {err['msg']}")
    return lines


def _document_loc(node: yaml.Node | None, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    out: list[Any] = []
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if k.value == str(part)), None)
            if match is None:
                # a union tag such as 'function-after[...]' or a discriminator value
                if isinstance(part, str) and not part.isidentifier():
                    continue
                out.append(part)
                node = None
                continue
            out.append(part)
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            out.append(part)
            node = node.value[part] if part < len(node.value) else None
        else:
            if isinstance(part, str) and not part.isidentifier():
                continue
            out.append(part)
    return tuple(out)


def load_model(path: Path | str, model: type[M], *, context: dict | None = None) -> M:
    """Load one YAML file into `model`, raising ConfigError with every problem (one per line)."""
    path = Path(path)
    data, node = load_yaml(path)
    if data is None:
        raise ConfigError(f"{path}: the file is empty")
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise ConfigError("\n".join(validation_messages(path, node, exc))) from None
