// Builds the TypeScript arm's guest: node build.mjs <guest.js> <wit> <out.wasm>
// Every WASI feature is disabled: the component imports gg's interfaces and nothing else.
import { writeFile } from "node:fs/promises";
import { componentize } from "@bytecodealliance/componentize-js";

const [source, wit, out] = process.argv.slice(2);
const { component } = await componentize({
  sourcePath: source,
  witPath: wit,
  worldName: "sandbox",
  disableFeatures: ["random", "stdio", "clocks", "http", "fetch-event"],
});
await writeFile(out, component);
