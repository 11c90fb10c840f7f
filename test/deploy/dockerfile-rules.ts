// The rules issue 23 sets for the image, checked on the Dockerfile's text: each returns a sentence naming
// what is wrong. dockerfile-utils (the linter behind the VS Code Docker extension) checks the syntax;
// these check what it cannot know: stages, base image, users, dependencies, entrypoint, labels.

/** One instruction: its keyword, its arguments with line continuations joined, its 1-based line. */
export interface Instruction {
  keyword: string;
  args: string;
  line: number;
}

export function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const first = lines[i]!.trim();
    if (first === '' || first.startsWith('#')) continue;
    const start = i;
    let joined = lines[i]!.replace(/\s+$/, '');
    while (joined.endsWith('\\') && i + 1 < lines.length) {
      i++;
      const next = lines[i]!.trim();
      joined = `${joined.slice(0, -1)} ${next.startsWith('#') ? '' : next}`;
    }
    const m = /^\s*(\S+)\s*(.*)$/s.exec(joined)!;
    out.push({ keyword: m[1]!.toUpperCase(), args: m[2]!.replace(/\s+/g, ' ').trim(), line: start + 1 });
  }
  return out;
}

/** Instructions grouped by stage (each FROM starts one). */
function stages(ins: Instruction[]): Instruction[][] {
  const out: Instruction[][] = [];
  for (const i of ins) {
    if (i.keyword === 'FROM') out.push([i]);
    else out.at(-1)?.push(i);
  }
  return out;
}

const OCI_LABELS = ['title', 'description', 'version', 'revision', 'licenses', 'documentation'];
const KEY_FILES = /priv_validator_key|node_key|priv_validator_state|\.noded\b|mnemonic/i;

/** Every rule of issue 23 that the Dockerfile breaks, as sentences (empty: it keeps them all). */
export function dockerfileProblems(text: string): string[] {
  const problems: string[] = [];
  const all = parseDockerfile(text);
  const st = stages(all);
  if (st.length < 2) {
    problems.push(`multi-stage: expected a build stage and a runtime stage, found ${st.length} FROM`);
    return problems;
  }
  for (const s of st) {
    const from = s[0]!;
    const image = from.args.split(' ')[0]!;
    const m = /^node:(\d+)\.(\d+)\.(\d+)-(bookworm|trixie)-slim(@sha256:[0-9a-f]{64})?$/.exec(image);
    if (!m) {
      problems.push(
        `line ${from.line}: base image ${image} is not an official Node image pinned to a full version (node:<x.y.z>-bookworm-slim)`,
      );
    } else if (Number(m[1]) % 2 !== 0 || Number(m[1]) < 22) {
      problems.push(`line ${from.line}: base image ${image} is not a Node LTS line of 22 or later`);
    }
  }
  const build = st[0]!;
  const runtime = st.at(-1)!;
  const runs = (s: Instruction[]) => s.filter((i) => i.keyword === 'RUN').map((i) => i.args);
  if (!runs(build).some((r) => /\bnpm ci\b/.test(r) && !/--omit=dev|--production/.test(r))) {
    problems.push('build stage: no `npm ci` with the dev dependencies');
  }
  if (!runs(build).some((r) => /\bnpm run build\b/.test(r))) problems.push('build stage: no `npm run build`');
  if (!runs(runtime).some((r) => /\bnpm ci\b.*--omit=dev/.test(r))) {
    problems.push('runtime stage: dependencies not installed with `npm ci --omit=dev`');
  }
  for (const r of runs(runtime)) {
    if (/\bnpm (install|i)\b/.test(r))
      problems.push(`runtime stage: \`${r}\` installs outside the lock file`);
    if (/\bnpm run build\b|\btsc\b/.test(r))
      problems.push('runtime stage: compiles; it must copy dist/ from the build');
  }
  if (!runtime.some((i) => i.keyword === 'COPY' && /--from=\S+ \S*dist/.test(i.args))) {
    problems.push('runtime stage: does not copy dist/ from the build stage');
  }
  const users = runtime.filter((i) => i.keyword === 'USER');
  const lastUser = users.at(-1)?.args.split(':')[0];
  if (lastUser === undefined || lastUser === 'root' || lastUser === '0') {
    problems.push(`runtime stage: runs as ${lastUser ?? 'root (no USER)'}; a non-root USER is required`);
  }
  const entry = runtime.filter((i) => i.keyword === 'ENTRYPOINT').at(-1);
  let entryArgs: unknown;
  try {
    entryArgs = entry ? JSON.parse(entry.args) : undefined;
  } catch {
    entryArgs = entry?.args;
  }
  if (JSON.stringify(entryArgs) !== '["noded"]') {
    problems.push(
      `runtime stage: ENTRYPOINT is ${entry ? entry.args : 'missing'}; expected ["noded"] (exec form)`,
    );
  }
  if (!runs(runtime).some((r) => /ln -s \S*bin\/noded\.js \/usr\/local\/bin\/noded/.test(r))) {
    problems.push(
      'runtime stage: `noded` is not on the PATH (no link from bin/noded.js to /usr/local/bin/noded)',
    );
  }
  const hc = runtime.filter((i) => i.keyword === 'HEALTHCHECK').at(-1);
  if (!hc || /^NONE\b/i.test(hc.args) || !/\bCMD\b/.test(hc.args)) {
    problems.push('runtime stage: no HEALTHCHECK CMD');
  }
  const labels = runtime
    .filter((i) => i.keyword === 'LABEL')
    .map((i) => i.args)
    .join(' ');
  for (const l of OCI_LABELS) {
    if (!labels.includes(`org.opencontainers.image.${l}=`)) {
      problems.push(`runtime stage: OCI label org.opencontainers.image.${l} missing`);
    }
  }
  const home = /NODED_HOME=(\S+)/.exec(
    runtime
      .filter((i) => i.keyword === 'ENV')
      .map((i) => i.args)
      .join(' '),
  )?.[1];
  const volumes = runtime.filter((i) => i.keyword === 'VOLUME').map((i) => i.args);
  if (!home) problems.push('runtime stage: NODED_HOME is not set');
  else if (!volumes.some((v) => v.includes(`"${home}"`) || v.split(' ').includes(home))) {
    problems.push(`runtime stage: the home ${home} is not a VOLUME`);
  }
  for (const i of all) {
    if ((i.keyword === 'COPY' || i.keyword === 'ADD') && KEY_FILES.test(i.args)) {
      problems.push(`line ${i.line}: ${i.keyword} ${i.args} puts keys or a home into the image`);
    }
    if (i.keyword === 'ADD' && /https?:\/\//.test(i.args)) problems.push(`line ${i.line}: ADD from a URL`);
  }
  return problems;
}

/** The build-context sources of COPY/ADD (not --from=), for checking them against .dockerignore. */
export function contextSources(text: string): string[] {
  const out: string[] = [];
  for (const i of parseDockerfile(text)) {
    if (i.keyword !== 'COPY' && i.keyword !== 'ADD') continue;
    const words = i.args.split(' ');
    if (words.some((w) => w.startsWith('--from='))) continue;
    const paths = words.filter((w) => !w.startsWith('--'));
    out.push(...paths.slice(0, -1));
  }
  return out;
}

/**
 * Whether .dockerignore keeps `path` out of the build context, read the way Docker reads it: patterns in
 * order, the last one that matches the path or one of its parent folders wins, `!` re-includes, `*`
 * stays within one folder and `**` spans any number.
 */
export function dockerIgnored(ignore: string, path: string): boolean {
  const rules = ignore
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => {
      const negate = l.startsWith('!');
      const pat = (negate ? l.slice(1) : l).replace(/^\/+|\/+$/g, '');
      const re = pat
        .split('/')
        .map((seg) =>
          seg === '**'
            ? '(?:.*)'
            : seg
                .replace(/[.+^${}()|[\]\\]/g, '\\$&')
                .replace(/\*/g, '[^/]*')
                .replace(/\?/g, '[^/]'),
        )
        .join('/')
        .replace(/\(\?:\.\*\)\//g, '(?:.*/)?');
      return { negate, re: new RegExp(`^${re}$`) };
    });
  const parts = path.split('/');
  const prefixes = parts.map((_, i) => parts.slice(0, i + 1).join('/'));
  let ignored = false;
  for (const r of rules) {
    if (prefixes.some((p) => r.re.test(p))) ignored = !r.negate;
  }
  return ignored;
}
