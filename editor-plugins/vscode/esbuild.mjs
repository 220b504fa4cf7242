// Bundles the extension (with vscode-languageclient) into dist/extension.js, and the
// VS Code-free logic into out/logic.js for the unit tests.
import * as esbuild from "esbuild";

const common = { bundle: true, platform: "node", format: "cjs", target: "node18", sourcemap: false, logLevel: "warning" };
await esbuild.build({ ...common, entryPoints: ["src/extension.ts"], outfile: "dist/extension.js", external: ["vscode"], minify: true });
await esbuild.build({ ...common, entryPoints: ["src/logic.ts"], outfile: "out/logic.js" });
