/**
 * Warning Events (core/v1) about objects kube-ipvs refuses or cannot program, so `kubectl
 * describe service` shows them, bounded the way client-go's EventRecorder bounds them
 * (tools/record/events_cache.go EventCorrelator), so that 500 Services with a bad field do
 * not make 500 POSTs at once from every node:
 *  - aggregation: the 10th different message with the same object + reason within 10 minutes
 *    turns into one "(combined from similar events): ..." Event whose count goes up; as
 *    client-go, the record remembers at most 10 messages (one forgotten for each new one) and
 *    its window restarts with every message (events_cache.go sets lastTimestamp on each);
 *  - deduplication: the same object + reason + message within 10 minutes bumps `count` and
 *    `lastTimestamp` of the Event already posted (a PATCH) instead of posting another;
 *  - spam filter per object + reason: a token bucket of 25, refilled one per 5 minutes; a
 *    warning without a token is dropped (its count still goes up: the next PATCH carries it);
 *  - a global token bucket (default 25, one more a second) and at most 4 requests in flight:
 *    the rest wait in a queue (bounded, 1,000; beyond, dropped) in arrival order; a warning
 *    about an Event whose PATCH is still queued rides on that PATCH.
 * A message is cut to 1,024 bytes before it is used (events.k8s.io's note limit;
 * kube-scheduler cuts core/v1 Event messages the same way, with " ..."). The caches hold at
 * most MAX_REMEMBERED (4,096) entries each, the least recently touched forgotten first, and
 * remember no text a caller passed: the object + reason and the message are kept as 22-character
 * digests (DIGEST_CHARS). Holding the messages and keys made of them (client-go keeps them
 * whole), they reached ~40 MB at the cap (4,096 x 9 messages of 1 KB); now an object's three
 * cache entries keep ~300 characters of digests, ~1.2 million at the cap, and a remembered
 * Event its namespace and name besides (as the API accepted them). The queue (at most 1,000
 * requests) holds each request's body, its message at most 1 KB.
 * A request that got no answer is tried again, 12 times at most, 10 s apart after a random
 * first wait (client-go's recordToSink); an answer, even an error, is final.
 * Posting never throws: failures and drops are logged at debug (an unreachable API server
 * must not turn one problem into a log flood). The POST and PATCH are apiRequests
 * (api-request.ts): the token file re-read, the 401 retry, the rest_client metrics.
 */
import { createHash } from 'node:crypto';
import type { CoreV1Event, KubeConfig } from '@kubernetes/client-node';
import { apiRequest, statusMessage } from './api-request';

/** The object an Event is about. Cluster-scoped objects (Nodes) get their Events in "default". */
export interface EventObjectRef {
  readonly kind: string;
  readonly namespace?: string;
  readonly name: string;
  readonly uid?: string;
  readonly apiVersion?: string;
}

/** A token bucket: `burst` tokens, one more every `refillEveryMs`. */
export interface TokenBucketOptions {
  readonly burst: number;
  /** one token more every this many ms */
  readonly refillEveryMs: number;
}

/** Options of EventRecorder: the node, log, clock, and client-go's dedup, spam and queue limits. */
export interface EventRecorderOptions {
  /** source.host and reportingInstance */
  readonly nodeName: string;
  readonly log: { debug(message: string, meta?: object): unknown };
  /** milliseconds since the epoch (default Date.now) */
  readonly clock?: () => number;
  /** runs `fn` after `ms` (default setTimeout, unref'd): the queue waits for global tokens with it */
  readonly setTimer?: (fn: () => void, ms: number) => void;
  /** dedup and aggregation window (default 10 minutes) */
  readonly dedupWindowMs?: number;
  /** remembered Events, aggregation records and spam buckets, each; the oldest is forgotten first (default MAX_REMEMBERED) */
  readonly maxRemembered?: number;
  /** different messages of one object + reason within the window before they are combined (default 10) */
  readonly maxSimilar?: number;
  /** per object + reason (default client-go's: burst 25, one per 5 minutes) */
  readonly spam?: TokenBucketOptions;
  /** every request (default burst 25, one per second) */
  readonly global?: TokenBucketOptions;
  /** requests in flight at once (default 4) */
  readonly maxInFlight?: number;
  /** requests waiting for a token or a slot (default 1000) */
  readonly maxQueued?: number;
  /** a request that got no answer is tried again (default client-go's: 12 tries, 10 s apart, the first wait random) */
  readonly retry?: Partial<EventRetryOptions>;
}

/** How a failed Event write is retried (client-go's event broadcaster). */
export interface EventRetryOptions {
  /** tries in all, the first included (client-go's maxTriesPerEvent) */
  readonly maxTries: number;
  /** the wait between tries (client-go's sleepDuration); the first is this times random() */
  readonly sleepMs: number;
  /** [0, 1) */
  readonly random: () => number;
}

/** The Events' source.component and reportingComponent. */
export const EVENT_COMPONENT = 'kube-ipvs';
/** What an aggregated Event's message starts with (client-go's EventAggregator). */
export const AGGREGATED_PREFIX = '(combined from similar events): ';
/** The API's limit on an Event's note (validation.NoteLengthLimit), in bytes. */
export const MAX_MESSAGE_BYTES = 1024;
/** Entries of each cache (remembered Events, aggregation records, spam buckets): the default maxRemembered. */
export const MAX_REMEMBERED = 4096;
/** The length of the digests the caches keep in place of messages and object keys (132 bits of SHA-256). */
export const DIGEST_CHARS = 22;

/** What the caches keep of a text: a fixed-size digest (no text a caller passed is remembered). */
function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, DIGEST_CHARS);
}

/** `message` cut to `max` UTF-8 bytes with " ..." (kube-scheduler's truncateMessage), never inside a character. */
export function truncateMessage(message: string, max = MAX_MESSAGE_BYTES): string {
  if (message.length <= max / 3 || Buffer.byteLength(message) <= max) return message;
  const suffix = ' ...';
  const room = max - suffix.length;
  let head = message.slice(0, room);
  const last = head.charCodeAt(head.length - 1);
  if (last >= 0xd800 && last <= 0xdbff) head = head.slice(0, -1);
  const bytes = Buffer.from(head, 'utf8');
  let end = Math.min(room, bytes.length);
  // back off to the first byte of a character
  if (end < bytes.length) while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return bytes.toString('utf8', 0, end) + suffix;
}

class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly o: TokenBucketOptions,
    now: number,
  ) {
    this.tokens = o.burst;
    this.at = now;
  }

  private refill(now: number): void {
    if (now <= this.at) return;
    this.tokens = Math.min(this.o.burst, this.tokens + (now - this.at) / this.o.refillEveryMs);
    this.at = now;
  }

  take(now: number): boolean {
    this.refill(now);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** ms until a token is there (0: now) */
  waitMs(now: number): number {
    this.refill(now);
    return this.tokens >= 1 ? 0 : Math.ceil((1 - this.tokens) * this.o.refillEveryMs);
  }
}

/** A map that forgets its least recently touched entries beyond `max`. */
class Lru<V> extends Map<string, V> {
  constructor(private readonly max: number) {
    super();
  }

  touch(key: string, value: V): void {
    this.delete(key);
    this.set(key, value);
    while (this.size > this.max) this.delete(this.keys().next().value!);
  }
}

interface Posted {
  readonly namespace: string;
  readonly name: string;
  count: number;
  lastMs: number;
  /** the create (while it is in flight or queued): a PATCH waits for it */
  created: Promise<boolean>;
  /** a PATCH queued and not sent yet: later warnings ride on it */
  patchQueued: Promise<void> | undefined;
}

interface Similar {
  /** the digests of the different messages */
  readonly messages: Set<string>;
  lastMs: number;
}

interface Job {
  readonly run: () => Promise<void>;
  readonly done: () => void;
}

/** Posts Events as client-go's recorder does: deduplicated, aggregated, spam-limited, retried. */
export class EventRecorder {
  private readonly clock: () => number;
  private readonly setTimer: (fn: () => void, ms: number) => void;
  private readonly windowMs: number;
  private readonly maxSimilar: number;
  private readonly spamOptions: TokenBucketOptions;
  private readonly maxInFlight: number;
  private readonly maxQueued: number;
  private readonly retry: EventRetryOptions;
  private readonly posted: Lru<Posted>;
  private readonly similar: Lru<Similar>;
  private readonly spam: Lru<TokenBucket>;
  private readonly global: TokenBucket;
  private readonly queue: Job[] = [];
  private inFlight = 0;
  private timerArmed = false;
  private seq = 0;
  /** warnings dropped by the spam filter or a full queue, for the debug line */
  dropped = 0;

  constructor(
    private readonly kc: KubeConfig,
    private readonly options: EventRecorderOptions,
  ) {
    this.clock = options.clock ?? Date.now;
    this.setTimer = options.setTimer ?? ((fn, ms) => void setTimeout(fn, ms).unref());
    this.windowMs = options.dedupWindowMs ?? 10 * 60_000;
    this.maxSimilar = options.maxSimilar ?? 10;
    this.spamOptions = options.spam ?? { burst: 25, refillEveryMs: 5 * 60_000 };
    this.maxInFlight = options.maxInFlight ?? 4;
    this.maxQueued = options.maxQueued ?? 1000;
    this.retry = { maxTries: 12, sleepMs: 10_000, random: Math.random, ...options.retry };
    const max = options.maxRemembered ?? MAX_REMEMBERED;
    this.posted = new Lru(max);
    this.similar = new Lru(max);
    this.spam = new Lru(max);
    this.global = new TokenBucket(options.global ?? { burst: 25, refillEveryMs: 1000 }, this.clock());
  }

  /** Posts (or bumps) a Warning Event; resolves when its API call is over or it is dropped, never rejects. */
  warn(ref: EventObjectRef, reason: string, message: string): Promise<void> {
    const now = this.clock();
    message = truncateMessage(message);
    const objectKey = digest(JSON.stringify([ref.kind, ref.namespace ?? '', ref.name, ref.uid ?? '', reason]));
    const messageKey = digest(message);

    // aggregation: many different messages about one object + reason become one Event
    let similar = this.similar.get(objectKey);
    if (!similar || now - similar.lastMs >= this.windowMs) similar = { messages: new Set(), lastMs: now };
    similar.messages.add(messageKey);
    similar.lastMs = now;
    this.similar.touch(objectKey, similar);
    let key = objectKey + messageKey;
    if (similar.messages.size >= this.maxSimilar) {
      // as client-go (PopAny): the set never grows beyond the threshold
      similar.messages.delete(similar.messages.values().next().value!);
      message = truncateMessage(AGGREGATED_PREFIX + message);
      key = objectKey; // one Event for all of them
    }

    // deduplication: counted even when the spam filter drops the request below
    let seen = this.posted.get(key);
    if (seen && now - seen.lastMs >= this.windowMs) seen = undefined;
    if (seen) {
      seen.count++;
      seen.lastMs = now;
      this.posted.touch(key, seen);
      if (seen.patchQueued) return seen.patchQueued;
    }

    // spam filter per object + reason
    let bucket = this.spam.get(objectKey);
    if (!bucket) bucket = new TokenBucket(this.spamOptions, now);
    this.spam.touch(objectKey, bucket);
    if (!bucket.take(now)) return this.drop(ref, reason, 'spam filter (object and reason)');

    if (seen) return this.patch(ref, reason, seen);
    return this.create(ref, reason, message, key, now);
  }

  private create(ref: EventObjectRef, reason: string, message: string, key: string, now: number): Promise<void> {
    const namespace = ref.namespace || 'default';
    // client-go names Events <object>.<unix nanoseconds in hex>
    const name = `${ref.name}.${(BigInt(now) * 1_000_000n + BigInt(this.seq++ % 1_000_000)).toString(16)}`;
    const body: CoreV1Event = {
      metadata: { name, namespace },
      involvedObject: {
        kind: ref.kind,
        namespace: ref.namespace,
        name: ref.name,
        uid: ref.uid,
        apiVersion: ref.apiVersion,
      },
      reason,
      message,
      type: 'Warning',
      count: 1,
      firstTimestamp: new Date(now),
      lastTimestamp: new Date(now),
      source: { component: EVENT_COMPONENT, host: this.options.nodeName },
      reportingComponent: EVENT_COMPONENT,
      reportingInstance: this.options.nodeName,
    };
    let settle!: (ok: boolean) => void;
    const record: Posted = {
      namespace,
      name,
      count: 1,
      lastMs: now,
      created: new Promise((r) => (settle = r)),
      patchQueued: undefined,
    };
    this.posted.touch(key, record);
    const sent = this.enqueue(async () => {
      try {
        await this.send('POST', `/api/v1/namespaces/${namespace}/events`, body);
        settle(true);
      } catch (e) {
        if (this.posted.get(key) === record) this.posted.delete(key);
        settle(false);
        this.options.log.debug(
          `event ${namespace}/${name} about ${ref.kind} ${ref.namespace ?? ''}/${ref.name} (${reason}): post failed: ${(e as Error).message}`,
        );
      }
    });
    if (sent === undefined) {
      this.posted.delete(key);
      settle(false);
      return this.drop(ref, reason, 'queue full');
    }
    return sent;
  }

  private patch(ref: EventObjectRef, reason: string, record: Posted): Promise<void> {
    let started = false;
    const sent = this.enqueue(async () => {
      started = true;
      record.patchQueued = undefined;
      if (!(await record.created)) return;
      try {
        await this.send(
          'PATCH',
          `/api/v1/namespaces/${record.namespace}/events/${record.name}`,
          { count: record.count, lastTimestamp: new Date(record.lastMs).toISOString() },
          'application/merge-patch+json',
        );
      } catch (e) {
        this.options.log.debug(
          `event ${record.namespace}/${record.name} (${reason}): count update failed: ${(e as Error).message}`,
        );
      }
    });
    if (sent === undefined) return this.drop(ref, reason, 'queue full');
    if (!started) record.patchQueued = sent;
    return sent;
  }

  /**
   * Throws unless the API server answered 2xx. A request that got no answer at all (refused
   * connection, deadline) is tried again as client-go's recordToSink does: up to 12 tries,
   * 10 s apart, the first wait drawn at random within those 10 s so that nodes that lost the
   * server together do not all come back at once. An answer (a 4xx, a 5xx) is final, as
   * client-go's "will not retry". The request keeps its slot while it waits (client-go's sink
   * sends one Event at a time).
   */
  private async send(
    method: 'POST' | 'PATCH',
    path: string,
    body: object,
    contentType = 'application/json',
  ): Promise<void> {
    for (let tries = 1; ; tries++) {
      let res;
      try {
        res = await apiRequest(this.kc, { method, path, body: JSON.stringify(body), contentType });
      } catch (e) {
        if (tries >= this.retry.maxTries) throw e;
        const ms = Math.round(tries === 1 ? this.retry.sleepMs * this.retry.random() : this.retry.sleepMs);
        this.options.log.debug(
          `${method} ${path}: no answer (${(e as Error).message}); try ${tries + 1} of ${this.retry.maxTries} in ${ms} ms`,
        );
        await new Promise<void>((r) => this.setTimer(r, ms));
        continue;
      }
      if (res.status < 200 || res.status > 299) throw new Error(`HTTP ${res.status}: ${statusMessage(res.body)}`);
      return;
    }
  }

  private drop(ref: EventObjectRef, reason: string, why: string): Promise<void> {
    this.dropped++;
    this.options.log.debug(
      `event about ${ref.kind} ${ref.namespace ?? ''}/${ref.name} (${reason}) not sent: ${why} (${this.dropped} dropped so far)`,
    );
    return Promise.resolve();
  }

  /** Queues a request; undefined when the queue is full. Resolves once it has run. */
  private enqueue(run: () => Promise<void>): Promise<void> | undefined {
    if (this.queue.length >= this.maxQueued) return undefined;
    const p = new Promise<void>((done) => this.queue.push({ run, done }));
    this.pump();
    return p;
  }

  private pump(): void {
    while (this.queue.length > 0 && this.inFlight < this.maxInFlight) {
      const now = this.clock();
      if (!this.global.take(now)) {
        if (!this.timerArmed) {
          this.timerArmed = true;
          this.setTimer(() => {
            this.timerArmed = false;
            this.pump();
          }, this.global.waitMs(now));
        }
        return;
      }
      const job = this.queue.shift()!;
      this.inFlight++;
      void job.run().finally(() => {
        this.inFlight--;
        job.done();
        this.pump();
      });
    }
  }

  /** Requests waiting for a token or a slot (tests, metrics). */
  get queued(): number {
    return this.queue.length;
  }
}
