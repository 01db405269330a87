// gg's TypeScript SDK, bound over the component's generated bindings: one typed function per
// operation (gg.files.readFile, gg.board.IssueCreated.wait, ...), shaped by shapes.js — the same
// projection of wit/gg-sandbox.wit that gg.d.ts declares (surfaces/typescript.py).
//
// Every classifier here asks Object.prototype.toString for a value's brand: the generated bindings
// are evaluated against a different Error intrinsic than the SDK and the program, so `instanceof
// Error` answers false for a bindings fault.

const API_ERRORS = new WeakSet();

export function brand(value) {
  return Object.prototype.toString.call(value);
}

export function isError(value, name) {
  if (brand(value) !== "[object Error]") return false;
  try {
    return name === undefined || value.name === name;
  } catch {
    return false;
  }
}

export function isApiError(value) {
  return API_ERRORS.has(value);
}

/** The failure every failed call raises: .operation, .code, .message, and an explicit toJSON. */
export class ApiError extends Error {
  constructor(operation, code, message) {
    super(message);
    this.operation = operation;
    this.code = code;
    API_ERRORS.add(this);
  }

  toString() {
    return `\`${this.operation}\` failed (${this.code}): ${this.message}`;
  }

  // A plain Error's message is non-enumerable: without this, an error put in a view arrives as {}.
  toJSON() {
    return { operation: this.operation, code: this.code, message: this.message };
  }
}
Object.defineProperty(ApiError.prototype, "name", { value: "ApiError", writable: true, configurable: true });

// -- lowering: the program's friendly values -> the bindings' ------------------------------------
function lower(types, desc, value, where) {
  if (desc === null) return value;
  if (typeof desc === "string") return lowerNamed(types, desc, value, where);
  if ("o" in desc) return value === undefined || value === null ? undefined : lower(types, desc.o, value, where);
  if ("l" in desc) {
    if (!Array.isArray(value)) throw new TypeError(`${where} must be an array`);
    return value.map((item, i) => lower(types, desc.l, item, `${where}[${i}]`));
  }
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
    throw new TypeError(`${where} must be a non-negative integer`);
  }
  return desc.p === "big" ? BigInt(value) : value;
}

function lowerNamed(types, name, value, where) {
  const spec = types[name];
  if ("v" in spec) {
    if (typeof value === "string" && value in spec.v && spec.v[value] === null) return { tag: value };
    if (value !== null && typeof value === "object") {
      const keys = Object.keys(value);
      if (keys.length === 1 && keys[0] in spec.v && spec.v[keys[0]] !== null) {
        return { tag: keys[0], val: lower(types, spec.v[keys[0]][0], value[keys[0]], `${where}.${keys[0]}`) };
      }
      if ("tag" in value) return value;
    }
    throw new TypeError(`${where} must be one of ${Object.keys(spec.v).map((c) => spec.v[c] === null ? JSON.stringify(c) : `{ ${c}: … }`).join(", ")}`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new TypeError(`${where} must be an object with ${spec.r.map((f) => f[0]).join(", ")}`);
  }
  const record = {};
  for (const [field, desc, fallback, flat] of spec.r) {
    let given = value[field];
    if (given === undefined && flat) {
      const written = Object.keys(flat).find((key) => value[key] !== undefined);
      if (written !== undefined) given = { [flat[written]]: value[written] };
    }
    if (given === undefined && fallback === "list") given = [];
    if (given === undefined && fallback === "keep") given = "keep";
    record[field] = lower(types, desc, given, `${where}.${field}`);
  }
  return record;
}

// -- lifting: the bindings' values -> the program's ------------------------------------------------
// Driven by the function's `lift` shape: most values come back as the program's already; what is
// converted is a u64 (a BigInt) to a number and a variant ({tag, val}) to one tagged by `kind`.
function lift(desc, value) {
  if (desc === null || value === undefined) return value;
  if (desc === "big") return Number(value);
  if ("o" in desc) return lift(desc.o, value);
  if ("l" in desc) return value.map((item) => lift(desc.l, item));
  if ("r" in desc) {
    for (const [field, inner] of desc.r) value[field] = lift(inner, value[field]);
    return value;
  }
  const payload = lift(desc.v[value.tag], value.val);
  if (payload === undefined) return { kind: value.tag };
  if (payload !== null && typeof payload === "object" && !Array.isArray(payload)) return { kind: value.tag, ...payload };
  return { kind: value.tag, value: payload };
}

// -- binding one function --------------------------------------------------------------------------
// Each SDK function is generated once, at initialisation (componentize-js snapshots it), as plain
// straight-line code over its own parameters: the guest interprets JavaScript, so a generic
// per-call walk over the shapes would cost more than the rest of the call.
function source(fn) {
  const names = fn.params.map(([name]) => name);
  const formals = [...names.slice(0, fn.positional), ...(fn.options ? ["options"] : names.slice(fn.positional))];
  const lines = [];
  if (fn.options) {
    lines.push('if (options !== undefined && (options === null || typeof options !== "object" || Array.isArray(options))) ' +
      'throw new TypeError("options must be an object");');
  }
  fn.params.forEach(([name, desc, fallback], i) => {
    let value = i >= fn.positional && fn.options ? `(options === undefined ? undefined : options.${name})` : name;
    if (fallback) value = `(${value} === undefined ? ${fallback === "list" ? "[]" : '"keep"'} : ${value})`;
    lines.push(desc === null ? `const v${i} = ${value};` : `const v${i} = $lower($types, $D[${i}], ${value}, ${JSON.stringify(name)});`);
  });
  const args = fn.params.map((_, i) => `v${i}`).join(", ");
  return `return function ${fn.name}(${formals.join(", ")}) {
  let raw;
  try {
    ${lines.join("\n    ")}
    raw = $binding(${args});
  } catch (fault) {
    throw $failed(fault);
  }
  return $finish(raw);
};`;
}

function bindFunction(shapes, fn, binding, feedback, receivers) {
  const failed = (fault) => {
    const payload = fault !== null && typeof fault === "object" ? fault.payload : undefined;
    if (payload !== undefined && typeof payload.code === "string") return new ApiError(payload.operation, payload.code, payload.message);
    if (!isError(fault, "TypeError") && !isError(fault, "RangeError")) return fault;
    // Still the program's call: the host records it and answers the error to throw (the refusal
    // when the call is not available, else invalid-argument in the SDK's spelling).
    const error = feedback.malformedCall(fn.op, String(fault.message));
    return new ApiError(error.code === "invalid-argument" ? fn.name : error.operation, error.code, error.message);
  };
  const cls = fn.receiver && receivers[fn.receiver];
  const make = (fields) => Object.assign(Object.create(cls.prototype), fields);
  const finish = !cls ? (raw) => lift(fn.lift, raw) : fn.list ? (raw) => lift(fn.lift, raw).map(make) : (raw) => make(lift(fn.lift, raw));
  const descriptors = fn.params.map(([, desc]) => desc);
  // `$` names: no WIT parameter or function name can shadow them.
  return new Function("$types", "$D", "$lower", "$binding", "$failed", "$finish", source(fn))(
    shapes.types, descriptors, lower, binding, failed, finish);
}

/** The `gg` module: { files, shell, ..., core, ApiError }, each function bound over `bindings`. */
export function makeSdk(shapes, bindings, feedback) {
  const gg = { core: { ApiError }, ApiError };
  const receivers = {};
  for (const [name, spec] of Object.entries(shapes.receivers)) {
    // A receiver method is an alias: it calls the module function, recorded under its operation.
    const cls = { [name]: class {} }[name];
    Object.defineProperty(cls.prototype, spec.method, {
      value: function (...rest) { return gg[spec.module][spec.function](this[spec.field], ...rest); },
      writable: true, configurable: true,
    });
    receivers[name] = cls;
  }
  for (const module of shapes.modules) gg[module] = {};
  for (const fn of shapes.functions) {
    gg[fn.module][fn.name] = bindFunction(shapes, fn, bindings[fn.module][fn.binding], feedback, receivers);
  }
  for (const [name, spec] of Object.entries(shapes.receivers)) gg[spec.module][name] = receivers[name];
  for (const module of shapes.modules) Object.freeze(gg[module]);
  return Object.freeze(gg);
}
