// Everything `noded start` checks before it runs anything (and all that `start --dry-run` reports):
// configs, genesis, keys, validator state, data dir, log file, home lock, and that every listen
// address can be bound right now.
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { basename } from 'node:path';
import {
  type ConfigProblem,
  type Env,
  homeLockHolder,
  homePaths,
  KeyFileError,
  type ListenerConfig,
  type LoadedGenesis,
  type LoadedNodeConfig,
  listenAddresses,
  loadGenesis,
  loadNodeConfig,
  loadNodeKey,
  loadValidatorKey,
  type ValidatorKey,
} from '@noded/config';
import { canCreate } from './util.js';

export interface StartCheck {
  loaded: LoadedNodeConfig;
  genesis?: LoadedGenesis;
  nodeId?: string;
  validator?: ValidatorKey;
  listeners: ListenerConfig[];
  problems: ConfigProblem[];
}

function keyProblem(file: string, err: unknown): ConfigProblem {
  if (err instanceof KeyFileError) {
    return { file: basename(file), key: '', message: err.message.slice(err.file.length + 2) };
  }
  return { file: basename(file), key: '', message: (err as Error).message };
}

/** data/priv_validator_state.json: {"height":"<int>","round":<int>,"step":<0..3>}. */
function checkValidatorState(file: string): ConfigProblem[] {
  const label = 'priv_validator_state.json';
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file (run "noded init" or "noded unsafe-reset-all")' : code;
    return [
      {
        file: label,
        key: '',
        message: code ? `cannot read ${file}: ${why}` : `not valid JSON: ${(err as Error).message}`,
      },
    ];
  }
  const out: ConfigProblem[] = [];
  if (typeof json !== 'object' || json === null)
    return [{ file: label, key: '', message: 'must be a JSON object' }];
  if (typeof json.height !== 'string' || !/^(0|[1-9]\d*)$/.test(json.height)) {
    out.push({
      file: label,
      key: 'height',
      message: `must be a string holding an integer >= 0, got ${JSON.stringify(json.height)}`,
    });
  }
  if (!Number.isInteger(json.round) || (json.round as number) < 0) {
    out.push({
      file: label,
      key: 'round',
      message: `must be an integer >= 0, got ${JSON.stringify(json.round)}`,
    });
  }
  if (!Number.isInteger(json.step) || (json.step as number) < 0 || (json.step as number) > 3) {
    out.push({
      file: label,
      key: 'step',
      message: `must be an integer between 0 and 3, got ${JSON.stringify(json.step)}`,
    });
  }
  return out;
}

function bindOnce(host: string, port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why =
        err.code === 'EADDRINUSE'
          ? 'address already in use'
          : err.code === 'EADDRNOTAVAIL'
            ? 'address not available on this machine'
            : err.code === 'EACCES'
              ? 'permission denied (ports below 1024 need privileges)'
              : err.code === 'ENOTFOUND'
                ? 'host name does not resolve'
                : (err.code ?? err.message);
      resolve(why);
    });
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

/**
 * Runs every check; problems are collected, never thrown. `mode` (start --mode, else app.toml's)
 * decides which listeners are used: a light node serves no REST API. NODED_<KEY> variables of `env`
 * override config.toml and app.toml keys, as for the cluster's services (docs/configuration.md).
 */
export async function checkStart(
  home: string,
  logFile: string,
  mode?: string,
  env: Env = process.env,
): Promise<StartCheck> {
  const paths = homePaths(home);
  const loaded = loadNodeConfig(home, env);
  const problems = [...loaded.problems];
  const light = (mode ?? loaded.app.mode) === 'light';
  const listeners = listenAddresses(loaded.config, loaded.app).map((l) =>
    light && l.name === 'rest api' ? { ...l, enabled: false } : l,
  );
  const result: StartCheck = { loaded, listeners, problems };

  const g = loadGenesis(paths.genesis);
  problems.push(...g.problems);
  result.genesis = g.genesis;
  const clientChain = loaded.client.chainId;
  if (g.genesis && clientChain !== '' && clientChain !== g.genesis.json.chain_id) {
    problems.push({
      file: 'client.toml',
      key: 'chain-id',
      message: `must match genesis.json chain_id "${g.genesis.json.chain_id}", got "${clientChain}"`,
    });
  }

  try {
    result.nodeId = loadNodeKey(paths.nodeKey).nodeId;
  } catch (err) {
    problems.push(keyProblem(paths.nodeKey, err));
  }
  try {
    result.validator = loadValidatorKey(paths.privValidatorKey);
  } catch (err) {
    problems.push(keyProblem(paths.privValidatorKey, err));
  }
  problems.push(...checkValidatorState(paths.privValidatorState));

  try {
    if (!statSync(paths.data).isDirectory()) throw new Error('not a directory');
    accessSync(paths.data, constants.W_OK | constants.R_OK);
  } catch {
    problems.push({
      file: 'data',
      key: '',
      message: `${paths.data} must be a readable and writable directory`,
    });
  }
  const logWhy = canCreate(logFile);
  if (logWhy) problems.push({ file: 'log file', key: '', message: `cannot write ${logFile}: ${logWhy}` });

  const holder = homeLockHolder(home);
  if (holder !== undefined) {
    problems.push({
      file: 'noded.pid',
      key: '',
      message: `a node (pid ${holder}) is already running on this home`,
    });
  } else {
    const reported = new Set(problems.map((p) => `${p.file}:${p.key}`));
    for (const l of result.listeners) {
      if (!l.enabled || reported.has(`${l.file}:${l.key}`) || reported.has(`${l.file}:`)) continue;
      const why = await bindOnce(l.address.host, l.address.port);
      if (why) {
        problems.push({
          file: l.file,
          key: l.key,
          message: `cannot listen on ${l.address.host}:${l.address.port}: ${why}`,
        });
      }
    }
  }
  return result;
}
