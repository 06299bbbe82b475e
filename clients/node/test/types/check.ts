// Compiled by types.test.mjs with `tsc --noEmit` (never run): index.d.ts must accept what
// hosts write and refuse what the server would refuse (each @ts-expect-error must fail).

import {
  AnyState,
  EntityState,
  HttpStats,
  ListItem,
  ListState,
  ListTopic,
  MethodResults,
  NetmodelClient,
  StateStore,
  Stats,
  Topic,
  UnknownKindOrList,
  topic,
} from '../../index.js';

async function lists(nm: NetmodelClient): Promise<void> {
  const first: ListState = await nm.fetchList('following/artist');
  const next = await nm.fetchList('following/artist', { page: 'next', params: { q: 'x', n: 1 }, timeout: 1000 });
  const items: ListItem[] = next.items;
  const following: boolean | null = items[0].following;
  const title: string | undefined = first.sections[0]?.title;
  const status: 'idle' | 'loading' | 'loaded' | 'failure' = first.state;
  const more: boolean = first.hasMore && first.error === null;
  // @ts-expect-error: no such page
  await nm.fetchList('following/artist', { page: 'last' });
  // @ts-expect-error: params are scalars
  await nm.fetchList('following/artist', { params: { nested: { a: 1 } } });

  const entity: EntityState = await nm.getEntity('artist', 'banksy', { refresh: true });
  const attributes: Record<string, unknown> | null = entity.attributes;

  const accepted: number = await nm.setInterfaceState(first.items, 'visible');
  await nm.setInterfaceState([{ kind: 'artist', id: 'a' }], 'none');
  // @ts-expect-error: not an interface state
  await nm.setInterfaceState([], 'hidden');
  // @ts-expect-error: resolves with a number, not the reply object
  const wrong: { accepted: number } = await nm.setInterfaceState([], 'preload');

  const stats: Stats = await nm.stats();
  const counters: number[] = [
    stats.lists.held, stats.lists.pageCalls, stats.lists.sharedFetches, stats.lists.invalidations,
    stats.preload.queued, stats.preload.inFlight, stats.preload.started, stats.preload.cancelled,
    stats.preload.detailCalls, stats.preload.detailShared,
  ];
  // What the hand-written types lacked (issue 26, item 12): typed as the server sends them.
  const sometimes: (number | undefined)[] = [stats.lists.evicted, stats.lists.pagingFailures, stats.entitiesEvicted];
  const http: HttpStats | undefined = stats.backend.http;
  const latencies: number[] = Object.values(stats.backend.http?.endpoints ?? {}).map((e) => e.latencyLastMs);
  const perEndpoint: Record<string, number> = stats.backend.http?.byEndpoint ?? {};
  const transport: 'stdio' | 'socket' | undefined = stats.connections.list[0]?.transport;
  // @ts-expect-error: the server sends no such member
  void stats.lists.evictd;
  // @ts-expect-error: nor this one, at the top either
  void stats.entitiesEvictd;
  const settled: MethodResults['follow'] = await nm.follow('artist', 'banksy');
  void [following, title, status, more, attributes, accepted, wrong, counters, sometimes, http, latencies, perEndpoint, transport, settled];
}

async function subscriptions(nm: NetmodelClient): Promise<void> {
  const t: ListTopic = topic.list('following/artist');
  const params: Record<string, unknown> = topic.list('search', { q: 'x' }).params;
  const topics: Topic[] = [t, topic.entity('artist', 'banksy'), topic.entity(), topic('list:following/gene')];
  const sub = await nm.subscribe([...topics, 'entity:artist']);
  for await (const s of sub) {
    // The notification union: EntityState | ListState, told apart by `list`.
    if ('list' in s) {
      const l: ListState = s;
      void l.items.length;
    } else {
      const e: EntityState = s;
      void e.following;
    }
  }
  sub.on('change', (s: AnyState, seq: number) => void [s.version, seq]);
  sub.on('change', (s, seq) => void [s.version, seq.toFixed()]);
  nm.on('stateChanged', (s, from, seq) => void [s.version, from.list('l'), seq.toFixed()]);
  nm.on('disconnect', (error) => void error?.message);
  // @ts-expect-error: no such event
  nm.on('listChanged', () => {});
  // @ts-expect-error: seq is a number
  sub.on('change', (s, seq: string) => void [s, seq]);
  const held: ListState | undefined = sub.list('following/artist', { page: 1 });
  const store = new StateStore();
  const fromStore: ListState | undefined = store.get({ list: 'following/artist' });
  const entityFromStore: EntityState | undefined = store.get({ kind: 'artist', id: 'b' });
  // @ts-expect-error: a list topic needs a name
  const bad: ListTopic = { type: 'list' };
  // @ts-expect-error: an AnyState is not always a ListState
  const notAlways: ListState = sub.states[0];
  try {
    await nm.fetchList('nope');
  } catch (e) {
    if (e instanceof UnknownKindOrList) void e.data?.list;
  }
  // Entity topics only: EntityStates, typed as such (list topics only: ListStates).
  const button = await nm.subscribe('entity:artist/banksy');
  button.on('change', (s) => void [s.following, s.pending]);
  for await (const s of button) void s.confirmed;
  const lists = await nm.subscribe([topic.list('following/artist'), 'list:following/gene']);
  lists.on('change', (l) => void l.items.length);
  // @ts-expect-error: a list subscription delivers ListStates
  lists.on('change', (l) => void l.following);
  // The stats topic: the server's figures as 'stats' events, typed as Stats.
  const figures = await nm.subscribe({ type: 'stats' });
  figures.on('stats', (s, seq) => void [s.entitiesPending, s.connections.list[0]?.unsentBytes, seq.toFixed()]);
  nm.on('statsChanged', (s, from, seq) => void [s.notifications.stats, from.stats?.uptimeMs, seq]);
  void [params, held, fromStore, entityFromStore, bad, notAlways];
}

void [lists, subscriptions];
