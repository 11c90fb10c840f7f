// The image (issue 23): the Dockerfile linted by dockerfile-utils and checked against the rules,
// and .dockerignore letting in what the Dockerfile copies and keeping keys and homes out.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { validate } from 'dockerfile-utils';
import { repoRoot } from '../e2e/harness.js';
import { contextSources, dockerfileProblems, dockerIgnored } from './dockerfile-rules.js';

const root = repoRoot();
const dockerfile = readFileSync(join(root, 'Dockerfile'), 'utf8');
const dockerignore = readFileSync(join(root, '.dockerignore'), 'utf8');

describe('Dockerfile', () => {
  it('has no finding from the dockerfile-utils linter', () => {
    const found = validate(dockerfile).map((d) => `line ${d.range.start.line + 1}: ${d.message}`);
    assert.deepEqual(found, []);
  });

  it('the linter does report a broken Dockerfile (so its silence above means something)', () => {
    const found = validate(
      'FROM node:22.20.0-bookworm-slim\nMAINTAINER a@b\nEXPOSE 80/xyz\nHEALTHCHECK\nWORKDIR relative\n',
    ).map((d) => `line ${d.range.start.line + 1}: ${d.message}`);
    assert.deepEqual(found, [
      'line 2: MAINTAINER has been deprecated',
      'line 3: Invalid proto: xyz',
      'line 4: HEALTHCHECK requires at least one argument',
      'line 5: WORKDIR paths should be absolute',
    ]);
  });

  it('keeps every rule of issue 23: stages, pinned LTS base, npm ci, non-root, ENTRYPOINT, HEALTHCHECK, labels, volume', () => {
    assert.deepEqual(dockerfileProblems(dockerfile), []);
  });

  it('the rules refuse a Dockerfile that breaks them, naming each break', () => {
    const bad = [
      'FROM node:latest AS build',
      'RUN npm install',
      'FROM node:21.7.0-bookworm-slim',
      'COPY .localnet/node0/config/priv_validator_key.json /data/',
      'RUN npm install --omit=dev',
      'USER root',
      'ENTRYPOINT node bin/noded.js',
    ].join('\n');
    const p = dockerfileProblems(bad);
    const expect = [
      /base image node:latest is not an official Node image pinned/,
      /base image node:21\.7\.0-bookworm-slim is not a Node LTS line/,
      /build stage: no `npm ci`/,
      /build stage: no `npm run build`/,
      /runtime stage: dependencies not installed with `npm ci --omit=dev`/,
      /`npm install --omit=dev` installs outside the lock file/,
      /does not copy dist\/ from the build stage/,
      /runs as root; a non-root USER is required/,
      /ENTRYPOINT is node bin\/noded\.js; expected \["noded"\]/,
      /no HEALTHCHECK CMD/,
      /OCI label org\.opencontainers\.image\.version missing/,
      /NODED_HOME is not set/,
      /line 4: COPY .*priv_validator_key\.json .* puts keys or a home into the image/,
    ];
    for (const re of expect)
      assert.ok(
        p.some((s) => re.test(s)),
        `${re} not in:\n${p.join('\n')}`,
      );
    assert.deepEqual(dockerfileProblems('FROM node:22.20.0-bookworm-slim\nUSER node\n'), [
      'multi-stage: expected a build stage and a runtime stage, found 1 FROM',
    ]);
  });

  it('.dockerignore lets in every file the Dockerfile copies from the context', () => {
    const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' })
      .split('\n')
      .filter(Boolean);
    const sources = contextSources(dockerfile);
    assert.ok(sources.length >= 8, sources.join(' '));
    for (const src of sources) {
      const clean = src.replace(/\/+$/, '');
      assert.ok(existsSync(join(root, clean)), `${src} is copied but does not exist`);
      const files = tracked.filter((f) => f === clean || f.startsWith(`${clean}/`));
      assert.ok(files.length > 0, `${src}: no tracked file`);
      const out = files.filter((f) => dockerIgnored(dockerignore, f));
      assert.deepEqual(out, [], `${src}: files the Dockerfile needs are kept out of the context`);
    }
  });

  it('the ENTRYPOINT target bin/noded.js is executable in git (the image links it as /usr/local/bin/noded)', () => {
    const entry = execFileSync('git', ['ls-files', '-s', 'bin/noded.js'], { cwd: root, encoding: 'utf8' });
    assert.match(entry, /^100755 /);
    assert.match(readFileSync(join(root, 'bin/noded.js'), 'utf8'), /^#!\/usr\/bin\/env node\n/);
  });

  it('.dockerignore keeps keys, homes, node_modules, dist and local state out of the context', () => {
    for (const p of [
      'priv_validator_key.json',
      'libs/config/networks/priv_validator_key.json',
      'test/fixtures/node_key.json',
      '.localnet/node0/config/priv_validator_key.json',
      'services/noded/.noded/config/node_key.json',
      'data/priv_validator_state.json',
      'node_modules/ethers/package.json',
      'libs/node_modules/x.js',
      'dist/services/noded/src/cli/main.js',
      'bench/results/run.json',
      '.git/HEAD',
      'docs/deploy.md',
      'k8s/base/kustomization.yaml',
      'noded.log',
    ]) {
      assert.equal(dockerIgnored(dockerignore, p), true, `${p} would be sent to the build`);
    }
    for (const p of [
      'package.json',
      'libs/config/networks/networks.json',
      'bin/noded.js',
      'scripts/patch-deps.mjs',
    ]) {
      assert.equal(dockerIgnored(dockerignore, p), false, `${p} would be missing from the build`);
    }
  });
});
