"""YAML → pydantic models, with errors that name the file, the line and the field.

Every YAML file agent-host reads (tasks, builds, host and phone profiles, policy scripts)
goes through `load_model` / `load_yaml`, so every error reads the same way:
`tasks/wifi-on.yaml:7: check.setting.key: Field required`.
"""

from __future__ import annotations

from pathlib import Path
from collections.abc import Mapping, Sequence
from typing import TypeVar, Union

import yaml
from pydantic import BaseModel, ValidationError

from agent_host.errors import ConfigError

M = TypeVar("M", bound=BaseModel)
# Where in a document a value is: its keys and list indices, as pydantic's errors give them.
Loc = tuple[int | str, ...]
# A value in the shape YAML and JSON give it (what `model_dump(mode="json")` writes back): the
# data of a task's steps and checks between one validation and the next. Read-only views, so
# that a model's dump (dict[str, Any]) is one.
JsonData = Union[None, bool, int, float, str, Sequence["JsonData"], Mapping[str, "JsonData"]]

# libyaml is about ten times faster than the pure-Python loader when it is there.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# A task file has a few hundred nodes; this bound only stops alias bombs (a few hundred
# bytes that expand to billions of nodes) before anything is built from them.
MAX_NODES = 50_000

# Characters no YAML file of ours has a use for; YAML's own reader rejects most of them,
# but with an error that carries no line.
_UNREADABLE = {chr(c) for c in range(0x20) if chr(c) not in "\t\n\r"} | {"\x7f", "\ufffe", "\uffff"}


def _read(path: Path) -> str:
    # A FIFO or a device would block the read for ever (or never end): only regular files.
    if path.exists() and not path.is_file() and not path.is_dir():
        raise ConfigError(f"{path}: not a regular file")
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: a directory, not a file") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    for n, line in enumerate(text.split("\n"), 1):
        bad = next((ch for ch in line if ch in _UNREADABLE), None)
        if bad is not None:
            raise ConfigError(f"{path}:{n}: unreadable character U+{ord(bad):04X} "
                              f"(column {line.index(bad) + 1})")
    return text


def _check_tree(path: Path, root: yaml.Node | None) -> None:
    """Duplicate keys are errors (YAML silently keeps the last), and the document expanded
    through its aliases may have at most MAX_NODES nodes (counted, never built)."""
    if root is None:
        return
    # Aliases may add at most MAX_NODES values to what the file holds: a large legal file
    # (60 000 tags, 200 000 params) is not a bomb, a few hundred bytes expanding to millions is.
    limit = MAX_NODES + _distinct_nodes(root)
    size: dict[int, int] = {}
    loc_of: dict[int, Loc] = {id(root): ()}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            children = []
            # an escape (`"\0"`, `"\x07"`) makes a control character the reader never saw
            bad = next((ch for ch in node.value if ch in _UNREADABLE), None) if isinstance(node.value, str) else None
            if bad is not None:
                raise ConfigError(f"{path}:{node.start_mark.line + 1}: {format_loc(loc_of.get(key, ()))}: "
                                  f"control character U+{ord(bad):04X} (written as an escape); not allowed")
        if done:
            size[key] = 1 + sum(size.get(id(c), 1) for c in children)
            if size[key] > limit:
                raise ConfigError(f"{path}:{node.start_mark.line + 1}: {format_loc(loc_of.get(key, ()))}: "
                                  f"expands to more than {MAX_NODES} values (YAML aliases); not loaded")
            continue
        if key in size:
            continue
        size[key] = 1  # in progress: a recursive alias counts once instead of looping
        stack.append((node, True))
        here = loc_of.get(key, ())
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.tag != "tag:yaml.org,2002:merge":
                    if k.value in seen:
                        raise ConfigError(f"{path}:{k.start_mark.line + 1}: {format_loc(here + (k.value,))}: "
                                          f"duplicate key (first on line {seen[k.value]})")
                    seen[k.value] = k.start_mark.line + 1
                    loc_of.setdefault(id(v), here + (k.value,))
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                loc_of.setdefault(id(v), here + (i,))
        stack.extend((c, False) for c in children if id(c) not in size)


def _distinct_nodes(root: yaml.Node) -> int:
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            stack.extend(n for pair in node.value for n in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return len(seen)


def load_yaml(path: Path) -> tuple[object, yaml.Node | None]:
    """Parse a YAML file; return the data and its node tree (for line numbers). Every YAML
    file agent-host reads comes through here."""
    text = _read(path)
    try:
        node = yaml.compose(text, Loader=_Loader)
        _check_tree(path, node)
        data = yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = f":{mark.line + 1}" if mark else ""
        raise ConfigError(f"{path}{line}: invalid YAML: {exc.problem or exc.context}") from None
    except yaml.YAMLError as exc:  # e.g. the reader's, which carry no mark
        raise ConfigError(f"{path}: invalid YAML: {' '.join(str(exc).split())[:200]}") from None
    except RecursionError:
        raise ConfigError(f"{path}: invalid YAML: nested too deeply") from None
    except (ValueError, OverflowError) as exc:  # a date or a number the constructor cannot make
        raise _unmakeable(path, node, exc) from None
    return data, node


def _unmakeable(path: Path, root: yaml.Node | None, exc: Exception) -> ConfigError:
    """The error for a scalar YAML reads as a date or an integer but cannot make (`2026-02-30`,
    an integer of 5 000 digits): the constructor's ValueError names no line, so each such
    scalar is made alone until one fails."""
    maker = yaml.constructor.SafeConstructor()
    stack = [root] if root is not None else []
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.MappingNode):
            stack.extend(n for pair in node.value for n in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        elif isinstance(node, yaml.ScalarNode) and node.tag.rsplit(":", 1)[-1] in ("int", "float", "timestamp"):
            try:
                maker.construct_object(node)
            except (ValueError, OverflowError) as bad:
                kind = {"timestamp": "date"}.get(node.tag.rsplit(":", 1)[-1], "number")
                value = node.value if len(node.value) <= 40 else f"{node.value[:20]}... ({len(node.value)} characters)"
                why = "too many digits" if "digits" in str(bad) else str(bad)
                return ConfigError(f"{path}:{node.start_mark.line + 1}: {value}: not a valid {kind} ({why})")
    return ConfigError(f"{path}: invalid YAML value ({' '.join(str(exc).split())[:200]})")


def line_of(node: yaml.Node | None, loc: Loc) -> int | None:
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


def format_loc(loc: Loc) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def validation_messages(path: Path, node: yaml.Node | None, exc: ValidationError,
                        prefix: Loc = ()) -> list[str]:
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


def _document_loc(node: yaml.Node | None, loc: Loc) -> Loc:
    out: list[int | str] = []
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


def load_model(path: Path | str, model: type[M], *, context: dict[str, object] | None = None) -> M:
    """Load one YAML file into `model`, raising ConfigError with every problem (one per line)."""
    path = Path(path)
    data, node = load_yaml(path)
    if data is None:
        raise ConfigError(f"{path}: the file is empty")
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise ConfigError("\n".join(validation_messages(path, node, exc))) from None
