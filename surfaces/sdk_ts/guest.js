// The TypeScript arm's guest entry: runs one program (already type-checked and stripped to
// JavaScript by the host's warm compiler) and reports how it ended.
//
// Built into the component by componentize-js with every WASI feature disabled, so the guest has
// no filesystem, network, environment or clock: gg's imports are its only way out. The SDK is the
// `gg` a program's `require("gg")` (its `import ... from "gg"`) returns; `lib:<key>` is the code
// the agent loaded, each module evaluated by the import the program wrote.
import * as board from "gg-console:gg/board";
import * as context from "gg-console:gg/context";
import * as delegation from "gg-console:gg/delegation";
import * as docs from "gg-console:gg/docs";
import * as feedback from "gg-console:gg/feedback";
import * as files from "gg-console:gg/files";
import * as memories from "gg-console:gg/memories";
import * as programs from "gg-console:gg/programs";
import * as session from "gg-console:gg/session";
import * as shell from "gg-console:gg/shell";
import * as skills from "gg-console:gg/skills";
import * as tasks from "gg-console:gg/tasks";
import * as views from "gg-console:gg/views";

import shapes from "./shapes.js";
import { brand, isApiError, isError, makeSdk } from "./sdk.js";

const PROGRAM = "program.ts";
const OUTSIDE = "the sandbox has no filesystem, network, environment, clock or processes; gg's modules are a program's only way out";
const gg = makeSdk(shapes, { board, context, delegation, docs, files, memories, programs, session, shell, skills, tasks, views },
  feedback);

function outside() {
  throw new Error(OUTSIDE);
}

// Nothing reaches the world but gg: the engine's timers, fetch and clocks throw at the program's line.
for (const name of ["fetch", "setTimeout", "setInterval", "clearTimeout", "clearInterval", "Request", "Response",
  "Headers", "WebSocket", "XMLHttpRequest"]) {
  if (name in globalThis) Object.defineProperty(globalThis, name, { value: outside, writable: false, configurable: false });
}
const RealDate = Date;
globalThis.Date = class Date extends RealDate {
  constructor(...args) {
    if (args.length === 0) outside();
    super(...args);
  }
  static now() {
    return outside();
  }
};
if (globalThis.performance) globalThis.performance.now = outside;

function text(value) {
  if (typeof value === "string") return value;
  try {
    return isError(value) ? String(value) : JSON.stringify(value) ?? String(value);
  } catch {
    return brand(value);
  }
}

// console.* and nothing else: each line goes to the operator's log, never to the model.
const log = (...values) => {
  for (const line of values.map(text).join(" ").split("\n")) feedback.log(line);
};
globalThis.console = { log, info: log, warn: log, error: log, debug: log, trace: log };

function evaluate(js, file) {
  // One function per program or module: its own scope, its own `require`, and a sourceURL so the
  // runtime's frames name it (the host maps them back to the author's coordinates).
  return (0, eval)(`(function (require, exports, module) {${js}\n})\n//# sourceURL=${file}`);
}

// The frames of the program and of loaded code, raw (`fn@file:line:col`); SDK and guest frames cut.
function ownFrames(error) {
  let stack = "";
  try {
    stack = typeof error.stack === "string" ? error.stack : "";
  } catch {}
  return stack.split("\n").filter((frame) => {
    const at = frame.lastIndexOf("@");
    const file = frame.slice(at + 1);
    return at >= 0 && (file.startsWith(`${PROGRAM}:`) || file.startsWith("lib:"));
  });
}

function describe(error) {
  if (brand(error) !== "[object Error]") return `uncaught exception: ${text(error)}`;
  return text(error);
}

function failure(kind, error, extra = {}) {
  const frames = ownFrames(error);
  const message = [describe(error), ...frames.map((frame) => `    at ${frame}`)].join("\n");
  const location = frames.find((frame) => frame.includes(`@${PROGRAM}:`));
  return { ok: false, error: { kind, message, location: location && location.slice(location.lastIndexOf("@") + 1), ...extra } };
}

function moduleHint(hasLib) {
  const names = shapes.moduleNames.join(", ") + (hasLib ? ", and lib (the code you loaded)" : "");
  return `gg's modules are ${names}; each is reached through \`import * as gg from "gg";\``;
}

export function run(program, modules) {
  const sources = new Map(modules.map((m) => [m.name, m.source]));
  const loaded = new Map();
  function require(specifier) {
    if (specifier === "gg") return gg;
    const key = typeof specifier === "string" && specifier.startsWith("lib:") ? specifier.slice(4) : null;
    if (key === null || !sources.has(key)) throw new Error(`Cannot find module '${specifier}'`);
    if (!loaded.has(key)) {
      const exports = {};
      loaded.set(key, exports);
      try {
        evaluate(sources.get(key), `lib:${key}`)(require, exports, { exports });
      } catch (error) {
        // The module's author is not the model: name it, never quote its source; the binding stays empty.
        feedback.reportModuleError(key, describe(error));
        loaded.set(key, {});
      }
    }
    return loaded.get(key);
  }
  try {
    evaluate(program, PROGRAM)(require, {}, { exports: {} });
    return { ok: true };
  } catch (error) {
    if (isApiError(error)) return failure("api-failure", error, { code: error.code, operation: error.operation });
    if (isError(error, "ReferenceError")) {
      // The layer raising the fault composes in the fact it implies: where gg's names live.
      try {
        error.message = `${error.message}. ${moduleHint(modules.length > 0)}`;
      } catch {}
      return failure("unknown-name", error);
    }
    return failure("other", error);
  }
}
