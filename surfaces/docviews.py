"""docViewTypes: which type views a documentation lookup opens beside a function (operations.md §6).

The recorded id joins the enabled flags with `+` in the fixed order return, parameters, errors,
and is `none` when all three are off. Anything else is refused, naming the offending part.
"""

FLAGS = ("return", "parameters", "errors")
DEFAULT = frozenset({"return", "errors"})
NONE = "none"


def parse(flag_id):
    """`return+errors` -> frozenset({"return", "errors"}); `none` -> frozenset()."""
    if not isinstance(flag_id, str):
        raise ValueError(f"docViewTypes must be a string like 'return+errors', not {flag_id!r}")
    if flag_id == NONE:
        return frozenset()
    parts = flag_id.split("+")
    for part in parts:
        if part not in FLAGS:
            raise ValueError(f"unknown docViewTypes flag {part!r} in {flag_id!r}; "
                             f"the flags are {', '.join(FLAGS)} (or {NONE})")
    if parts != [f for f in FLAGS if f in parts]:
        raise ValueError(f"docViewTypes {flag_id!r} must name each flag once, in the order "
                         f"{'+'.join(FLAGS)}")
    return frozenset(parts)


def format(flags):  # noqa: A001 — the pair of parse
    """frozenset({"return", "errors"}) -> `return+errors`; no flags -> `none`."""
    unknown = sorted(set(flags) - set(FLAGS))
    if unknown:
        raise ValueError(f"unknown docViewTypes flag {unknown[0]!r}; the flags are {', '.join(FLAGS)}")
    return "+".join(f for f in FLAGS if f in flags) or NONE


def resolve(value):
    """A profile's `docViewTypes` param -> the flag set.

    Absent, null, true or {} mean the defaults; false turns every flag off; an object is a delta
    against the defaults; a string is a flag id. Unknown keys and non-booleans are refused."""
    if value is None or value is True:
        return DEFAULT
    if value is False:
        return frozenset()
    if isinstance(value, str):
        return parse(value)
    if isinstance(value, dict):
        flags = set(DEFAULT)
        for key, on in value.items():
            if key not in FLAGS:
                raise ValueError(f"unknown docViewTypes key {key!r}; the keys are {', '.join(FLAGS)}")
            if not isinstance(on, bool):
                raise ValueError(f"docViewTypes.{key} must be true or false, not {on!r}")
            (flags.add if on else flags.discard)(key)
        return frozenset(flags)
    raise ValueError(f"docViewTypes must be true, false, an object or a flag id, not {value!r}")
