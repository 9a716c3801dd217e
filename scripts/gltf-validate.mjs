// Validates a glTF file with the Khronos glTF validator (the npm package `gltf-validator`, a
// library without a command line): prints the report's counts and every error, and exits 1 when
// there is an error. External resources (buffers, images) are read from the file's folder.
// Usage: node scripts/gltf-validate.mjs VALIDATOR_DIR FILE.gltf
//   VALIDATOR_DIR: the node_modules folder holding gltf-validator (scripts/gltf-validator.sh
//   installs the pinned version into target/gltf-validator).
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import path from 'node:path';

const [validatorDir, file] = process.argv.slice(2);
if (!validatorDir || !file) {
  console.error('usage: node scripts/gltf-validate.mjs VALIDATOR_DIR FILE.gltf');
  process.exit(2);
}
const require = createRequire(path.resolve(validatorDir, 'package.json'));
const validator = require('gltf-validator');
const folder = path.dirname(path.resolve(file));
const report = await validator.validateBytes(new Uint8Array(await readFile(file)), {
  uri: path.basename(file),
  maxIssues: 0,
  externalResourceFunction: async (uri) => {
    const target = path.resolve(folder, decodeURIComponent(uri));
    if (path.relative(folder, target).startsWith('..')) throw new Error(`${uri} leaves the asset's folder`);
    return new Uint8Array(await readFile(target));
  },
});
const issues = report.issues;
console.log(JSON.stringify({ validator: report.validatorVersion, errors: issues.numErrors, warnings: issues.numWarnings, infos: issues.numInfos, hints: issues.numHints }));
for (const message of issues.messages) {
  if (message.severity <= 1) console.log(`${message.severity === 0 ? 'ERROR' : 'WARNING'} ${message.code} ${message.pointer ?? ''}: ${message.message}`);
}
process.exit(issues.numErrors > 0 ? 1 : 0);
