#!/usr/bin/env node
// `node scripts/soak-smaps.mjs <dir> node dist/test/e2e/soak-cli.js --minutes 5 --keep-home`: runs the
// soak and, at each of its samples, copies the node's /proc/<pid>/smaps to <dir>/<t>-<phase>.smaps (the
// soak prints the node's pid first). `node scripts/soak-smaps.mjs --diff A.smaps B.smaps` then gives the
// resident memory by kind of mapping in A and B (a table), and on stderr the 25 mappings that grew most.
// The kinds are told apart by address and flags only: glibc's arenas start on a 64 MiB boundary, V8's
// heap pages are 256 KiB-aligned read-write mappings, its compiled code is executable, a thread's stack
// follows a guard page. Which isolate a V8 page belongs to is not in smaps: subtract the main heap's
// total (the soak's `heap`) to get the two workers'. Used in docs/reliability.md, "Bounded memory".
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';

const MB = 1e6;

function parse(file) {
  const maps = [];
  let cur;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const h = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$/.exec(line);
    if (h) {
      cur = { start: BigInt(`0x${h[1]}`), end: BigInt(`0x${h[2]}`), perms: h[3], path: h[4].trim(), rss: 0 };
      maps.push(cur);
      continue;
    }
    const f = /^Rss:\s+(\d+) kB/.exec(line);
    if (f && cur) cur.rss = Number(f[1]) * 1024;
  }
  for (let i = 0; i < maps.length; i++) {
    const m = maps[i];
    const size = m.end - m.start;
    const prev = maps[i - 1];
    if (m.path === '[heap]') m.kind = 'malloc: main arena';
    else if (m.path === '[stack]') m.kind = 'main thread stack';
    else if (m.path.startsWith('[')) m.kind = m.path;
    else if (m.path !== '') m.kind = m.path.endsWith('.node') ? 'file: add-ons' : 'file: other';
    else if (m.start % (64n << 20n) === 0n && size <= 64n << 20n) m.kind = 'malloc: other arenas';
    else if (m.perms.includes('x')) m.kind = 'V8 compiled code (executable)';
    else if (
      prev?.end === m.start &&
      prev.perms === '---p' &&
      prev.end - prev.start <= 64n << 10n &&
      size <= 16n << 20n
    )
      m.kind = 'thread stacks';
    else if (m.start % (256n << 10n) === 0n && size % (256n << 10n) === 0n && m.perms === 'rw-p')
      m.kind = 'V8 heap pages (all isolates)';
    else m.kind = 'other anonymous';
  }
  return maps;
}

function diff(fileA, fileB) {
  const [a, b] = [parse(fileA), parse(fileB)];
  const sum = (maps) => {
    const o = {};
    for (const m of maps) o[m.kind] = (o[m.kind] ?? 0) + m.rss;
    return o;
  };
  const [sa, sb] = [sum(a), sum(b)];
  const grown = (k) => (sb[k] ?? 0) - (sa[k] ?? 0);
  const kinds = [...new Set([...Object.keys(sa), ...Object.keys(sb)])].sort((x, y) => grown(y) - grown(x));
  const mb = (n) => (n / MB).toFixed(1);
  let [ta, tb] = [0, 0];
  console.log('| mappings | before (MB) | after (MB) | grown (MB) |\n|---|---:|---:|---:|');
  for (const k of kinds) {
    ta += sa[k] ?? 0;
    tb += sb[k] ?? 0;
    console.log(`| ${k} | ${mb(sa[k] ?? 0)} | ${mb(sb[k] ?? 0)} | ${mb(grown(k))} |`);
  }
  console.log(`| total | ${mb(ta)} | ${mb(tb)} | ${mb(tb - ta)} |`);
  const before = new Map(a.map((m) => [m.start, m]));
  const top = b
    .map((m) => ({ m, d: m.rss - (before.get(m.start)?.rss ?? 0), fresh: !before.has(m.start) }))
    .sort((x, y) => y.d - x.d)
    .slice(0, 25);
  for (const { m, d, fresh } of top)
    console.error(
      `${mb(d).padStart(6)} MB ${fresh ? 'new' : '   '} ${m.start.toString(16)}-${m.end.toString(16)} ${m.perms} size ${mb(Number(m.end - m.start))} rss ${mb(m.rss)} ${m.kind} ${m.path}`,
    );
}

function run(dir, cmd) {
  mkdirSync(dir, { recursive: true });
  const child = spawn(cmd[0], cmd.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  let pid;
  let buf = '';
  child.stdout.on('data', (d) => {
    process.stdout.write(d);
    buf += d;
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      pid ??= /node pid (\d+)/.exec(line)?.[1];
      const s = /^\[soak\]\s+(\d+) s\s+(idle|load|settle)/.exec(line);
      if (!s || pid === undefined) continue;
      const name = `${dir}/${s[1].padStart(5, '0')}-${s[2]}`;
      try {
        // /proc files read as empty through copyFile (their size is 0): read, then write.
        writeFileSync(`${name}.smaps`, readFileSync(`/proc/${pid}/smaps`, 'utf8'));
        const threads = readdirSync(`/proc/${pid}/task`).map((t) =>
          readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim(),
        );
        writeFileSync(`${name}.threads`, `${threads.join('\n')}\n`);
      } catch (err) {
        console.error(`soak-smaps: ${name}: ${err.message}`);
      }
    }
  });
  child.on('exit', (code) => process.exit(code ?? 1));
}

const args = process.argv.slice(2);
if (args[0] === '--diff' && args.length === 3) diff(args[1], args[2]);
else if (args.length >= 2 && args[0] !== '--diff') run(args[0], args.slice(1));
else {
  console.error('usage: soak-smaps.mjs <dir> <soak command...> | soak-smaps.mjs --diff A.smaps B.smaps');
  process.exit(2);
}
