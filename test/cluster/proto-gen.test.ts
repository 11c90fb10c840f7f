// The generated code of the gRPC contracts is up to date, without protoc: `npm run proto` records the
// sha256 of every .proto file, of scripts/proto.sh (the ts-proto options) and of every generated file
// in libs/proto/src/gen/SHA256SUMS. A .proto edited without regenerating, a generated file edited
// by hand, a new .proto not generated or a stray file in gen/ fails here with the file named.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const GEN = 'libs/proto/src/gen';
const PROTO = 'libs/proto/proto';

function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'scripts', 'proto.sh'))) {
    const up = dirname(dir);
    assert.notEqual(up, dir, 'scripts/proto.sh not found above the test');
    dir = up;
  }
  return dir;
}

function filesUnder(root: string, dir: string, ext: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith(ext)) out.push(relative(root, p).split('\\').join('/'));
    }
  };
  walk(join(root, dir));
  return out.sort();
}

describe('generated gRPC code (npm run proto)', () => {
  const root = repoRoot();
  const sums = new Map<string, string>();
  for (const line of readFileSync(join(root, GEN, 'SHA256SUMS'), 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    const m = /^([0-9a-f]{64}) {2}(.+)$/.exec(line);
    assert.ok(m, `${GEN}/SHA256SUMS: malformed line "${line}"`);
    sums.set(m[2]!, m[1]!);
  }

  it('lists every .proto file, scripts/proto.sh and every generated file, and nothing else', () => {
    const expected = [
      ...filesUnder(root, PROTO, '.proto'),
      'scripts/proto.sh',
      ...filesUnder(root, GEN, '.ts'),
    ].sort();
    assert.deepEqual(
      [...sums.keys()].sort(),
      expected,
      'the files differ from those generated last: run npm run proto and commit the result',
    );
  });

  it('every listed file has the content it had when generated', () => {
    const stale: string[] = [];
    for (const [file, sum] of sums) {
      const path = join(root, file);
      const actual = existsSync(path)
        ? createHash('sha256').update(readFileSync(path)).digest('hex')
        : 'missing';
      if (actual !== sum) stale.push(file);
    }
    assert.deepEqual(
      stale,
      [],
      `changed since the last npm run proto: ${stale.join(', ')}; ` +
        'a .proto or scripts/proto.sh changed: run npm run proto and commit the result; ' +
        'a generated file changed: never edit it, regenerate it',
    );
  });
});
