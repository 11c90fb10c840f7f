// NATS logins of the cluster's services (docs/cluster.md "Security inside the cluster"): one
// nats-server user per service, each allowed to publish and subscribe only on what it owns, the
// nats-server configuration block that declares them, and the connection options each service uses.

import { blocksStreamName, blocksSubject, headsSubject, pendingTxsSubject } from '@noded/config';
import type { Logger } from '@noded/types';
import { connect } from 'nats';
import type { ClusterSettings } from './settings.js';

/** The services that talk to NATS, each its own nats-server user of the same name. */
export const NATS_USERS = ['executor', 'state-store', 'rpc-edge'] as const;
export type NatsUser = (typeof NATS_USERS)[number];

export interface SubjectPermissions {
  /** Subjects the user may publish on (empty: none). */
  publish: string[];
  /** Subjects the user may subscribe to. */
  subscribe: string[];
}

/** Each service's replies come to inboxes under its own prefix, so no other user can read them. */
export function natsInboxPrefix(user: NatsUser): string {
  return `_INBOX.${user}`;
}

/**
 * What each service may do on chain `chainId`. JetStream's API is request/reply on `$JS.API.*`
 * subjects, so the stream's rights are publish rights on those: the executor creates and inspects
 * the blocks stream and appends to it; a state-store reads the stream's info and messages and runs
 * its own consumers on it, but cannot publish on the blocks subject, purge, delete or update the
 * stream; an rpc-edge only subscribes to heads and pending transactions.
 */
export function natsPermissions(chainId: string): Record<NatsUser, SubjectPermissions> {
  const stream = blocksStreamName(chainId);
  return {
    executor: {
      publish: [
        blocksSubject(chainId),
        headsSubject(chainId),
        pendingTxsSubject(chainId),
        '$JS.API.INFO',
        `$JS.API.STREAM.INFO.${stream}`,
        `$JS.API.STREAM.CREATE.${stream}`,
        `$JS.API.STREAM.MSG.GET.${stream}`,
      ],
      subscribe: [`${natsInboxPrefix('executor')}.>`],
    },
    'state-store': {
      publish: [
        '$JS.API.INFO',
        `$JS.API.STREAM.INFO.${stream}`,
        `$JS.API.STREAM.MSG.GET.${stream}`,
        `$JS.API.CONSUMER.CREATE.${stream}`,
        `$JS.API.CONSUMER.CREATE.${stream}.>`,
        `$JS.API.CONSUMER.INFO.${stream}.*`,
        `$JS.API.CONSUMER.DELETE.${stream}.*`,
        `$JS.API.CONSUMER.MSG.NEXT.${stream}.*`,
      ],
      subscribe: [`${natsInboxPrefix('state-store')}.>`],
    },
    'rpc-edge': {
      publish: [],
      subscribe: [headsSubject(chainId), pendingTxsSubject(chainId)],
    },
  };
}

const quoted = (s: string) => JSON.stringify(s);
const list = (xs: string[]) => `[${xs.map(quoted).join(', ')}]`;

/**
 * nats-server's `authorization` block declaring the three users with their passwords and
 * permissions, for `include` from the server's configuration. Anything not allowed is refused; a
 * client without a login is refused at connect.
 */
export function natsAuthConfig(chainId: string, passwords: Record<NatsUser, string>): string {
  const perms = natsPermissions(chainId);
  const users = NATS_USERS.map((u) => {
    const p = perms[u];
    const publish = p.publish.length > 0 ? `{ allow: ${list(p.publish)} }` : `{ deny: [">"] }`;
    return [
      '    {',
      `      user: ${quoted(u)}`,
      `      password: ${quoted(passwords[u])}`,
      '      permissions: {',
      `        publish: ${publish}`,
      `        subscribe: { allow: ${list(p.subscribe)} }`,
      '      }',
      '    }',
    ].join('\n');
  });
  return [
    `# The cluster's NATS users for chain ${chainId}, written by "noded nats-auth" (docs/cluster.md`,
    '# "Security inside the cluster"). It holds passwords: keep it readable by nats-server only.',
    'authorization {',
    '  users = [',
    users.join('\n'),
    '  ]',
    '}',
    '',
  ].join('\n');
}

/** The options a service connects to NATS with: its servers, its login if any, its inbox prefix. */
export function natsConnectOptions(
  cluster: ClusterSettings,
  user: NatsUser,
): { servers: string[]; user?: string; pass?: string; inboxPrefix: string } {
  return {
    servers: cluster.natsUrls,
    ...(cluster.natsLogin ? { user: cluster.natsLogin.user, pass: cluster.natsLogin.pass } : {}),
    inboxPrefix: natsInboxPrefix(user),
  };
}

/**
 * One connection attempt at start. A refused login stops the service with the reason (a wrong
 * password does not get better by retrying); a server that is not reachable yet is left to the
 * service's own retry loop.
 */
export async function checkNatsLogin(cluster: ClusterSettings, user: NatsUser, log: Logger): Promise<void> {
  try {
    const nc = await connect({
      ...natsConnectOptions(cluster, user),
      name: `noded-${user}-login-check`,
      reconnect: false,
      timeout: 5_000,
    });
    await nc.close();
  } catch (err) {
    const e = err as Error & { code?: string };
    if (e.code === 'AUTHORIZATION_VIOLATION' || /authorization violation/i.test(e.message)) {
      const login = cluster.natsLogin;
      throw new Error(
        login
          ? `nats-server at ${cluster.natsUrls.join(',')} refused user ${quoted(login.user)} (Authorization Violation): the password in $NODED_NATS_PASSWORD_FILE (${login.passwordFile}) is wrong or the user is not in the server's authorization block`
          : `nats-server at ${cluster.natsUrls.join(',')} requires a login (Authorization Violation): set $NODED_NATS_USER and $NODED_NATS_PASSWORD_FILE`,
      );
    }
    log.warn(
      { servers: cluster.natsUrls, err: e.message },
      'NATS not reachable at start; the service keeps retrying',
    );
  }
}
