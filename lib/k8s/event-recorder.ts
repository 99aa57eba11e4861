/**
 * Warning Events (core/v1) about objects kube-ipvs refuses or cannot program, so `kubectl
 * describe service` shows them. Like client-go's recorder: the same object + reason +
 * message within the dedup window (10 min) bumps `count` and `lastTimestamp` of the Event
 * already posted instead of posting another. Posting never throws: failures are logged at
 * debug (an unreachable API server must not turn one problem into a log flood). The POST and
 * PATCH are apiRequests (api-request.ts): the token file re-read, the 401 retry, metrics.
 */
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

export interface EventRecorderOptions {
  /** source.host and reportingInstance */
  readonly nodeName: string;
  readonly log: { debug(message: string, meta?: object): unknown };
  /** milliseconds since the epoch (default Date.now) */
  readonly clock?: () => number;
  /** default 10 minutes */
  readonly dedupWindowMs?: number;
  /** remembered (object, reason, message) triples; the oldest is forgotten first (default 4096) */
  readonly maxRemembered?: number;
}

export const EVENT_COMPONENT = 'kube-ipvs';

interface Posted {
  readonly namespace: string;
  readonly name: string;
  count: number;
  readonly firstMs: number;
  lastMs: number;
}

export class EventRecorder {
  private readonly clock: () => number;
  private readonly windowMs: number;
  private readonly maxRemembered: number;
  private readonly posted = new Map<string, Posted>();
  private seq = 0;

  constructor(private readonly kc: KubeConfig, private readonly options: EventRecorderOptions) {
    this.clock = options.clock ?? Date.now;
    this.windowMs = options.dedupWindowMs ?? 10 * 60_000;
    this.maxRemembered = options.maxRemembered ?? 4096;
  }

  /** Posts (or bumps) a Warning Event; resolves when the API call is over, never rejects. */
  async warn(ref: EventObjectRef, reason: string, message: string): Promise<void> {
    const now = this.clock();
    const key = JSON.stringify([ref.kind, ref.namespace ?? '', ref.name, ref.uid ?? '', reason, message]);
    const seen = this.posted.get(key);
    if (seen && now - seen.lastMs < this.windowMs) {
      seen.count++;
      seen.lastMs = now;
      // most recently used last: forgetOld() walks from the oldest
      this.posted.delete(key);
      this.posted.set(key, seen);
      try {
        await this.send('PATCH', `/api/v1/namespaces/${seen.namespace}/events/${seen.name}`, { count: seen.count, lastTimestamp: new Date(now).toISOString() }, 'application/merge-patch+json');
      } catch (e) {
        this.options.log.debug(`event ${seen.namespace}/${seen.name} (${reason}): count update failed: ${(e as Error).message}`);
      }
      return;
    }
    const namespace = ref.namespace || 'default';
    // client-go names Events <object>.<unix nanoseconds in hex>
    const name = `${ref.name}.${(BigInt(now) * 1_000_000n + BigInt(this.seq++ % 1_000_000)).toString(16)}`;
    const body: CoreV1Event = {
      metadata: { name, namespace },
      involvedObject: { kind: ref.kind, namespace: ref.namespace, name: ref.name, uid: ref.uid, apiVersion: ref.apiVersion },
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
    this.posted.delete(key);
    this.posted.set(key, { namespace, name, count: 1, firstMs: now, lastMs: now });
    this.forgetOld(now);
    try {
      await this.send('POST', `/api/v1/namespaces/${namespace}/events`, body);
    } catch (e) {
      this.posted.delete(key);
      this.options.log.debug(`event ${namespace}/${name} about ${ref.kind} ${ref.namespace ?? ''}/${ref.name} (${reason}): post failed: ${(e as Error).message}`);
    }
  }

  private forgetOld(now: number): void {
    for (const [key, p] of this.posted) {
      if (this.posted.size > this.maxRemembered || now - p.lastMs >= this.windowMs) this.posted.delete(key);
      else break;
    }
  }

  /** Throws unless the API server answered 2xx. */
  private async send(method: 'POST' | 'PATCH', path: string, body: object, contentType = 'application/json'): Promise<void> {
    const res = await apiRequest(this.kc, { method, path, body: JSON.stringify(body), contentType });
    if (res.status < 200 || res.status > 299) throw new Error(`HTTP ${res.status}: ${statusMessage(res.body)}`);
  }
}
