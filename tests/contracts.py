"""Checks a class against a `typing.Protocol` contract (`FinetuningTask`,
`PretrainingObjective`): the members the callers use, with the calls they
make."""

import inspect


def protocol_members(protocol):
    """The contract's members: its public names, its annotated attributes
    and the constructor."""
    names = {name for name in vars(protocol) if not name.startswith("_") or name == "__init__"}
    return sorted(names | set(getattr(protocol, "__annotations__", {})))


def contract_breaches(protocol, cls):
    """What `cls` lacks of `protocol`, one line a member.

    A method must take the call the contract describes: its arguments
    without a default by position, those with one by keyword (as the
    callers make it); a class method, a class (or static) method, which
    the callers call on the class. A property must be a property; an
    annotated attribute, a class attribute."""
    breaches = []
    for name in protocol_members(protocol):
        expected = inspect.getattr_static(protocol, name, None)
        actual = inspect.getattr_static(cls, name, None)
        on_class = isinstance(expected, classmethod)
        if actual is None or (name == "__init__" and actual is object.__init__):
            breaches.append(f"{name}: missing")
        elif expected is None:
            if callable(actual):
                breaches.append(f"{name}: a method, not an attribute")
        elif isinstance(expected, property):
            if not isinstance(actual, property):
                breaches.append(f"{name}: not a property")
        elif on_class and not isinstance(actual, (classmethod, staticmethod)):
            breaches.append(f"{name}: not a class method")
        elif not on_class and not callable(actual):
            breaches.append(f"{name}: not a method")
        else:
            if on_class:  # Called on the class: `cls` is bound, no `self`.
                expected, actual, bound = expected.__func__, getattr(cls, name), ()
            else:
                bound = ("self",)
            parameters = list(inspect.signature(expected).parameters.values())[1:]
            args = [p.name for p in parameters if p.default is p.empty]
            kwargs = {p.name: p.default for p in parameters if p.default is not p.empty}
            try:
                inspect.signature(actual).bind(*bound, *args, **kwargs)
            except TypeError as error:
                breaches.append(f"{name}: {error}")
    return breaches
