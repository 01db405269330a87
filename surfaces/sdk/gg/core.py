"""The types every other capability module speaks in."""

import json


class ApiError(Exception):
    """The failure every failed call raises.

    .operation is the key of the operation the program called (`read_file`), .code the failure
    class (`not-found`), .message what gg said, in this program's spelling."""

    def __init__(self, operation, code, message):
        super().__init__(operation, code, message)
        self.operation = operation
        self.code = code
        self.message = message

    def __str__(self):
        return f"`{self.operation}` failed ({self.code}): {self.message}"

    def to_json(self):
        """The JSON form: all three fields, so an error put in a view arrives whole."""
        return {"operation": self.operation, "code": self.code, "message": self.message}


class Value:
    """A record a gg function returned: fields as attributes, and as keys (`r.contents`, `r["contents"]`)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __getitem__(self, key):
        return self.__dict__[key]

    def __contains__(self, key):
        return key in self.__dict__

    def __eq__(self, other):
        return type(other) is type(self) and other.__dict__ == self.__dict__

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({inner})"

    def to_json(self):
        return dict(self.__dict__)


def to_jsonable(value):
    """json.dumps default= for gg's values: ApiError and returned records keep every field."""
    if hasattr(value, "to_json"):
        return value.to_json()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def dumps(value, **options):
    options.setdefault("default", to_jsonable)
    options.setdefault("ensure_ascii", False)
    return json.dumps(value, **options)
