"""One loader for the YAML recipes: pre-training and fine-tuning configs.

A recipe is a tree of dataclasses whose field names are the YAML keys. A
`Schema` reads a YAML mapping or a dotted override (`optimizer.learning_rate=3e-4`,
`phases.1.batch_size=16`) into it, strictly: an unknown key is an error
naming it, and each value is coerced to its field's type. Validation is
table-driven (choices, minimums, ranges), as in tensorflow/models
`official/core/train_utils.py`; a recipe adds its cross-field checks.

Messages start with `where` (the file, or `--set`) when given. The two
recipes word a bad value differently (pre-training "`key` must be of type
int", fine-tuning "key must be int"), and tests pin both: `backticks`
picks the wording.
"""

import copy
import dataclasses
import json
import math
import os
import typing

import yaml

from keras_bert.errors import ConfigError
from keras_bert.runtime.console import import_tensorflow_quietly
from pipelines.text_files import read_text


def read_yaml(path, error=ConfigError):
    """The YAML document at `path` (local or remote; an empty file is `{}`),
    a local one read without TensorFlow: the commands read and check their
    config before the backend is chosen and Keras loads.

    Raises `error` naming the line for bytes that are not UTF-8, and
    `yaml.YAMLError` for the recipe to word.
    """
    _quiet_tensorflow_for(path)
    return yaml.safe_load(read_text(path, error)) or {}


def _quiet_tensorflow_for(path):
    """A remote path is read through TensorFlow's file systems: imported
    here without its start-up notices, as the commands import it later."""
    if "://" in os.fspath(path):
        import_tensorflow_quietly()


def config_file_exists(path):
    """Whether the YAML file `path` exists; a local one is checked without
    TensorFlow (as `read_yaml` reads it), a remote one through its file
    system."""
    path = os.fspath(path)
    if "://" not in path:
        return os.path.isfile(path)
    _quiet_tensorflow_for(path)
    from keras_bert.file_io import is_file  # TensorFlow's file systems.

    return is_file(path)


def parse_override(text, error=ConfigError):
    """`"a.b=value"` -> `("a.b", value)`, the value read as YAML (an empty
    value is None; YAML 1.1 leaves `1e-4` a string, coerced later)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise error(f"--set {text!r}: expected key=value")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        raise error(f"--set: {key} is not a YAML value. Received: {raw!r}") from None
    return key, value


def flatten(tree, prefix=""):
    """`{"a": {"b": [{"c": 1}]}}` -> `{"a.b.0.c": 1}`."""
    if isinstance(tree, dict):
        items = tree.items()
    elif isinstance(tree, list) and tree and all(isinstance(v, dict) for v in tree):
        items = enumerate(tree)
    else:
        return {prefix[:-1]: tree}
    flat = {}
    for key, value in items:
        flat.update(flatten(value, f"{prefix}{key}."))
    return flat


def diff(before, after):
    """Dotted keys whose values differ between two trees, sorted, as
    `(key, before value, after value)`; a missing key reads as None."""
    before, after = flatten(before), flatten(after)
    return [
        (key, before.get(key), after.get(key))
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    ]


def _word(value):
    """`value` as YAML spells it (`true`, not `True`)."""
    return json.dumps(value) if isinstance(value, bool) else str(value)


def _merged(current, value):
    """`value` over `current`: a mapping given to a mapping merges key by key,
    at every depth, as a section does (`--set 'model_overrides={...}'` keeps
    the recipe's other overrides); anything else replaces."""
    if isinstance(current, dict) and isinstance(value, dict):
        return {**current, **{k: _merged(current.get(k), v) for k, v in value.items()}}
    return value


def _get(config, key):
    for part in key.split("."):
        config = getattr(config, part)
    return config


def _field_types(cls):
    return typing.get_type_hints(cls)


@dataclasses.dataclass(frozen=True)
class Schema:
    """How one recipe reads, checks and writes its dataclass tree.

    Args:
        error: the `ConfigError` class to raise.
        backticks: bool. Name keys as "`key`" ("must be of type int", the
            pre-training wording) rather than "key" ("must be int").
        keys: dict. Dotted section path -> the field names that recipe
            accepts there, in the order written (a dataclass shared by two
            recipes, e.g. `OptimizerConfig`, may take fewer keys in one).
        choices: dict. Key -> allowed values.
        minimums: dict. Key -> smallest allowed value.
        ranges: dict. Key -> `(predicate, "what is wanted")`; NaN fails
            every comparison, so it is refused.
        A None reaches these tables (and fails them, in their words) for any
        key they name; an `Optional` field's None skips them.
        unbounded: tuple. Keys whose value may be `.inf` (no limit); every
            other number must be finite.
        owned_sections: callable or None. `config` -> `{name: section}` of
            the recipe's root sections that its plug-ins own (a pre-training
            objective's, a fine-tuning task's), made by the recipe's
            `__post_init__` rather than declared as fields: read, set,
            checked and written as the fields are, before the key
            `owned_before`, each checked by `owned_ranges(name)` (`ranges`
            by the section's own keys).
    """

    error: type = ConfigError
    backticks: bool = False
    keys: dict = dataclasses.field(default_factory=dict)
    choices: dict = dataclasses.field(default_factory=dict)
    minimums: dict = dataclasses.field(default_factory=dict)
    ranges: dict = dataclasses.field(default_factory=dict)
    unbounded: tuple = ()
    owned_sections: typing.Optional[typing.Callable] = None
    owned_before: typing.Optional[str] = None
    owned_ranges: typing.Optional[typing.Callable] = None

    # --- Reading ---

    def fields(self, config, path):
        """The accepted field names of dataclass `config` at `path`."""
        names = list(self.keys.get(path, [f.name for f in dataclasses.fields(config)]))
        if self.owned_sections and not path:
            at = names.index(self.owned_before)
            names[at:at] = self.owned_sections(config)
        return names

    def merge(self, config, tree, where=None, path=""):
        """Sets every key of mapping `tree` on dataclass `config` (sections
        and free-form mappings merged key by key, lists and values
        replaced); returns `config`.
        `path` is `config`'s dotted place in the recipe, e.g. `optimizer`."""
        if not isinstance(tree, dict):
            raise self._fail(where, f"expected a mapping of sections. Received: {tree!r}")
        for name, value in tree.items():
            child = getattr(config, name) if name in self.fields(config, path) else None
            if dataclasses.is_dataclass(child) and isinstance(value, dict):
                self.merge(child, value, where, f"{path}.{name}".lstrip("."))
            else:
                self.set(config, name, value, where, path)
        return config

    def set(self, config, key, value, where=None, path=""):
        """Sets dotted `key` (`optimizer.learning_rate`, `phases.0.steps`,
        `model_overrides.dropout`) of `config` to `value`, typed; a section
        (or a list's section entry) or a free-form mapping (`model_overrides`)
        given a mapping takes the mapping's keys and keeps its current values
        for the others."""
        parts = [*filter(None, path.split(".")), *key.split(".")]
        start = len(parts) - len(key.split("."))
        full = ".".join(parts)
        node = config
        for depth in range(start, len(parts)):
            part, here, last = parts[depth], ".".join(parts[:depth]), depth == len(parts) - 1
            if dataclasses.is_dataclass(node):
                known = self.fields(node, here)
                if part not in known:
                    raise self._unknown(full, known, where)
                if last:
                    current = getattr(node, part)
                    setattr(
                        node,
                        part,
                        self._section(type(current), value, full, where, copy.deepcopy(current))
                        if dataclasses.is_dataclass(current)
                        else _merged(current, self._value(node, part, value, full, where)),
                    )
                    return
                node = getattr(node, part)
            elif isinstance(node, list):
                if not part.isdigit() or int(part) >= len(node):
                    raise self._fail(
                        where,
                        f"unknown config key {full!r}: {here or 'list'} has {len(node)} entries.",
                    )
                if last:
                    old = node[int(part)]
                    node[int(part)] = (
                        self._section(type(old), value, full, where, copy.deepcopy(old))
                        if dataclasses.is_dataclass(old)
                        else value
                    )
                    return
                node = node[int(part)]
            elif isinstance(node, dict):  # Free-form, e.g. `model_overrides`.
                if last:
                    node[part] = _merged(node.get(part), value)
                    return
                if not isinstance(node.get(part), dict):
                    raise self._unknown(full, sorted(node), where)
                node = node[part]
            else:
                raise self._unknown(full, [], where)

    def _value(self, parent, name, value, key, where):
        field = {f.name: f for f in dataclasses.fields(parent)}[name]
        kind = _field_types(type(parent))[name]
        if dataclasses.is_dataclass(kind):
            default = (
                field.default_factory()
                if field.default_factory is not dataclasses.MISSING
                else kind()
            )
            return self._section(kind, value, key, where, default)
        element = (typing.get_args(kind) or [None])[0]
        if typing.get_origin(kind) is list and dataclasses.is_dataclass(element):
            if not isinstance(value, list):
                raise self._fail(where, self._type_message(key, "list", value))
            return [
                self._section(element, item, f"{key}.{i}", where) for i, item in enumerate(value)
            ]
        return self._coerce(kind, value, key, where)

    def _section(self, cls, value, key, where, default=None):
        if not isinstance(value, dict):
            known = [f"{key}.{k}" for k in self.fields(default or cls(), key)]
            raise self._unknown(key, known, where)
        return self.merge(default or cls(), value, where, key)

    def _coerce(self, kind, value, key, where):
        allowed = [typing.get_origin(t) or t for t in (typing.get_args(kind) or (kind,))]
        if value is None and (type(None) in allowed or self._checked(key)):
            return None
        for t in allowed:
            if isinstance(value, t) and not (t in (int, float) and isinstance(value, bool)):
                return float(value) if t is float else value
        if float in allowed and not isinstance(value, bool):
            if isinstance(value, int):
                return float(value)
            if isinstance(value, str):
                try:  # YAML 1.1 reads `5e-5` (no dot) as a string.
                    return float(value)
                except ValueError:
                    pass
        if str in allowed and isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)  # `--set data.text_column=0`: a name, read as a number.
        names = " or ".join(t.__name__ for t in allowed if t is not type(None))
        raise self._fail(where, self._type_message(key, names, value))

    def _checked(self, key):
        return any(key in table for table in (self.choices, self.minimums, self.ranges))

    # --- Checking ---

    def check(self, config):
        """Raises `error` for the first value outside `choices`, `minimums`
        or `ranges`, then for the first number that is not finite or is out
        of `LARGEST`'s bounds."""
        hints = {}
        for key in [*self.choices, *self.minimums, *self.ranges]:
            parent, _, name = key.rpartition(".")
            owner = _get(config, parent) if parent else config
            hints[key] = type(None) in typing.get_args(_field_types(type(owner))[name])
        for key, choices in self.choices.items():
            value = _get(config, key)
            if value not in choices:
                raise self.error(
                    f"{self._name(key)} must be one of "
                    f"{', '.join(map(_word, choices))}. Received: {key}={value!r}"
                )
        for key, minimum in self.minimums.items():
            value = _get(config, key)
            if value is None and hints[key]:
                continue
            if value is None or value < minimum:
                raise self.error(f"{self._name(key)} must be >= {minimum}. Received: {key}={value}")
        for key, (in_range, wanted) in self.ranges.items():
            value = _get(config, key)
            if value is None and hints[key]:
                continue
            if value is None or not in_range(value):
                raise self.error(f"{self._name(key)} must be {wanted}. Received: {key}={value}")
        # Last: a key's own range names the problem better where it has one.
        for key, value in _numbers(config):
            if key in self.unbounded and value == math.inf:
                continue
            largest = LARGEST[type(value)]
            if not (math.isfinite(value) and abs(value) <= largest):
                bound = f"{largest:,}" if isinstance(largest, int) else f"{largest:.0e}"
                raise self.error(
                    f"{self._name(key)} must be a finite number of at most {bound} in size. "
                    f"Received: {key}={value}"
                )
        if self.owned_sections:
            self._check_owned_sections(config)

    def _check_owned_sections(self, config):
        """The owned sections checked as one dataclass, so that the messages
        name each key in full (`<name>.<key>`) and every number in them is
        bounded as the declared ones are."""
        sections = self.owned_sections(config)
        fields = [(name, type(section)) for name, section in sections.items()]
        view = dataclasses.make_dataclass("OwnedSections", fields)(**sections)
        ranges = {
            f"{name}.{key}": rule
            for name in sections
            for key, rule in self.owned_ranges(name).items()
        }
        Schema(error=self.error, backticks=self.backticks, ranges=ranges).check(view)

    # --- Writing ---

    def to_tree(self, config, path=""):
        """`config` as plain YAML-ready values: the accepted keys of each
        section, in their order; tuples as lists."""
        if dataclasses.is_dataclass(config):
            return {
                name: self.to_tree(getattr(config, name), f"{path}.{name}".lstrip("."))
                for name in self.fields(config, path)
            }
        if isinstance(config, (list, tuple)):
            return [self.to_tree(v, path) for v in config]
        return json.loads(json.dumps(config))

    # --- Messages ---

    def _name(self, key):
        return f"`{key}`" if self.backticks else key

    def _type_message(self, key, names, value):
        kind = f"of type {names}" if self.backticks else names
        return f"{self._name(key)} must be {kind}. Received: {key}={value!r}"

    def _unknown(self, key, known, where):
        return self._fail(
            where, f"unknown config key {key!r} (known here: {', '.join(sorted(known))})"
        )

    def _fail(self, where, message):
        """`where: message`, or the message as a sentence."""
        if where:
            return self.error(f"{where}: {message}")
        return self.error(message[:1].upper() + message[1:])


# Bounds on every number of a config: a step count past a 32-bit counter,
# or a float past 1e9 (minutes, rates, shares), is a typo or `.inf`, and
# would fail deep inside the schedule or the clock instead of here.
LARGEST = {int: 2**31 - 1, float: 1e9}


def _numbers(node, path=""):
    """`(dotted key, value)` of every int and float in a config's sections
    and section lists (free-form mappings such as `model_overrides` are
    checked by what reads them)."""
    if dataclasses.is_dataclass(node):
        for field in dataclasses.fields(node):
            yield from _numbers(getattr(node, field.name), f"{path}.{field.name}".lstrip("."))
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _numbers(item, f"{path}.{i}")
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path, node
