// The package's size as an application ships it: each entry bundled with its imports,
// minified (esbuild), gzipped. Run after `npm run build`. Exits 1 over the limit.
import { gzipSync } from "node:zlib";
import { build } from "esbuild";

const LIMIT = 15 * 1024;
let over = false;
for (const entry of ["dist/index.js", "dist/browser.js"]) {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    minify: true,
    format: "esm",
    platform: "neutral",
    write: false,
    logLevel: "error",
  });
  const code = result.outputFiles[0].contents;
  const gzipped = gzipSync(code, { level: 9 }).byteLength;
  over ||= gzipped >= LIMIT;
  console.log(
    `${entry}: ${code.byteLength} bytes minified, ${gzipped} bytes (${(gzipped / 1024).toFixed(1)} KiB) minified+gzipped (limit ${LIMIT / 1024} KiB)`,
  );
}
process.exit(over ? 1 : 0);
