// The TypeScript arm's warm compiler: one long-lived Node process per gg process, so type-checking
// a program costs no Node start-up. Reads one JSON request a line on stdin, writes one JSON answer
// a line on stdout:
//   {"file": "program.ts" | "lib/<key>.ts", "source": "...", "libKeys": ["csvTools"]}
//   -> {"ok": true, "js": "...", "map": [[[genCol, srcLine, srcCol], ...], ...]}   (0-based)
//   -> {"ok": false, "diagnostics": "program.ts(3,7): error TS2322: ..."}          (first few, verbatim)
// Programs are type-checked against gg.d.ts (argv[2], generated from the WIT) with lib es2022 and
// nothing else, then stripped to CommonJS for the guest. The library files are parsed once.
"use strict";
const path = require("path");
const readline = require("readline");
const ts = require("typescript");

const MAX_DIAGNOSTICS = 5;
const ROOT = "/gg";
const DECLARATIONS = path.resolve(process.argv[2]);
const LIB_MODULES = `${ROOT}/lib-modules.d.ts`;
const OPTIONS = {
  strict: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.CommonJS,
  lib: ["lib.es2022.d.ts"],
  types: [],
  sourceMap: true,
  skipLibCheck: true,
  noEmitOnError: true,
  newLine: ts.NewLineKind.LineFeed,
};

const base = ts.createCompilerHost(OPTIONS, true);
const parsed = new Map(); // library and gg.d.ts SourceFiles, parsed once
let virtual = new Map(); // this request's own files

const host = {
  ...base,
  getCurrentDirectory: () => ROOT,
  fileExists: (name) => virtual.has(name) || base.fileExists(name),
  readFile: (name) => (virtual.has(name) ? virtual.get(name) : base.readFile(name)),
  getSourceFile(name, languageVersion) {
    if (virtual.has(name)) return ts.createSourceFile(name, virtual.get(name), languageVersion, true);
    if (!parsed.has(name)) parsed.set(name, base.getSourceFile(name, languageVersion));
    return parsed.get(name);
  },
  writeFile() {},
};
const formatHost = { getCanonicalFileName: (f) => f, getCurrentDirectory: () => ROOT, getNewLine: () => "\n" };

let previous;

function compile({ file, source, libKeys }) {
  const fileName = `${ROOT}/${file}`;
  virtual = new Map([[fileName, source],
    [LIB_MODULES, libKeys.map((key) => `declare module "lib:${key}";\n`).join("")]]);
  const program = ts.createProgram({ rootNames: [fileName, DECLARATIONS, LIB_MODULES], options: OPTIONS, host,
    oldProgram: previous });
  previous = program;
  const sourceFile = program.getSourceFile(fileName);
  const diagnostics = [...program.getSyntacticDiagnostics(sourceFile), ...program.getSemanticDiagnostics(sourceFile)]
    .filter((d) => d.category === ts.DiagnosticCategory.Error);
  if (diagnostics.length) {
    return { ok: false, diagnostics: ts.formatDiagnostics(diagnostics.slice(0, MAX_DIAGNOSTICS), formatHost).trimEnd() };
  }
  const out = {};
  program.emit(sourceFile, (name, text) => { out[name.endsWith(".map") ? "map" : "js"] = text; });
  const js = out.js.replace(/\n\/\/# sourceMappingURL=.*\s*$/, "\n");
  const answer = { ok: true, js, map: decode(JSON.parse(out.map).mappings) };
  if (file.startsWith("lib/")) answer.exports = exported(program, sourceFile);
  return answer;
}

// A module's exported functions, under the names they were exported as: its documentation entries.
function exported(program, sourceFile) {
  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(sourceFile);
  const found = [];
  for (const symbol of module ? checker.getExportsOfModule(module) : []) {
    const signatures = checker.getTypeOfSymbolAtLocation(symbol, sourceFile).getCallSignatures();
    if (!signatures.length) continue;
    found.push({ name: symbol.getName(), signature: checker.signatureToString(signatures[0]),
      doc: ts.displayPartsToString(symbol.getDocumentationComment(checker)) });
  }
  return found;
}

// Source map "mappings" (base64 VLQ) -> per generated line, [genCol, srcLine, srcCol] segments.
const BASE64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
function decode(mappings) {
  const lines = [];
  let srcLine = 0, srcCol = 0;
  for (const line of mappings.split(";")) {
    const segments = [];
    let genCol = 0;
    for (const segment of line.split(",")) {
      if (!segment) continue;
      const values = [];
      let value = 0, shift = 0;
      for (const ch of segment) {
        const digit = BASE64.indexOf(ch);
        value += (digit & 31) << shift;
        if (digit & 32) {
          shift += 5;
        } else {
          values.push(value & 1 ? -(value >>> 1) : value >>> 1);
          value = shift = 0;
        }
      }
      genCol += values[0];
      if (values.length >= 4) {
        srcLine += values[2];
        srcCol += values[3];
        segments.push([genCol, srcLine, srcCol]);
      }
    }
    lines.push(segments);
  }
  return lines;
}

const input = readline.createInterface({ input: process.stdin });
input.on("line", (line) => {
  let answer;
  try {
    answer = compile(JSON.parse(line));
  } catch (error) {
    answer = { crashed: String(error && error.stack || error) };
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
