/**
 * The informers' watch stream (informers.ts): client-node's Watch, sent through apiRequest;
 * newline-delimited JSON events, or protobuf frames when the server answers in protobuf.
 * An event that does not decode (a frame protobuf.ts refuses, a line that is not a JSON watch
 * event, either larger than WATCH_EVENT_MAX_BYTES) ends the watch with that error
 * (isWatchDecodeError): skipped, it could have been a DELETED, lost for good.
 */
import { STATUS_CODES } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { ApiKubeConfig, apiRequest, statusMessage } from './api-request';
import { IntakeGate } from './intake-gate';
import { prunedObject } from './prune';
import { ProtobufDecodeError, WATCH_EVENT_MAX_BYTES, WatchFrames, decodeWatchEvent, isProtobuf } from './protobuf';

/** A JSON watch line that is no watch event: not JSON, no type or object, or longer than the cap. */
export class WatchDecodeError extends Error {
  override readonly name = 'WatchDecodeError';
}

/** An event of the watch's stream that did not decode, JSON or protobuf: the stream ended there. */
export function isWatchDecodeError(e: unknown): e is Error {
  return e instanceof WatchDecodeError || e instanceof ProtobufDecodeError;
}

/**
 * Splits a JSON watch body into its lines as the chunks come (what readline did, without its
 * unbounded line buffer): push each chunk, get back the lines it completed; a line longer
 * than `maxBytes` (WATCH_EVENT_MAX_BYTES) throws WatchDecodeError once that many bytes have
 * come without a newline, so no more than the cap is ever held.
 */
export class WatchLines {
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(private readonly maxBytes = WATCH_EVENT_MAX_BYTES) {}

  push(chunk: Uint8Array): string[] {
    const lines: string[] = [];
    let buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    for (;;) {
      const nl = buf.indexOf(0x0a);
      if (nl < 0) break;
      const length = this.pendingBytes + nl;
      if (length > this.maxBytes) throw this.tooLong(length);
      const line = this.pending.length
        ? Buffer.concat([...this.pending, buf.subarray(0, nl)], length)
        : buf.subarray(0, nl);
      this.pending = [];
      this.pendingBytes = 0;
      // a newline never occurs inside a UTF-8 sequence: each line decodes alone
      lines.push(line.toString('utf8'));
      buf = buf.subarray(nl + 1);
    }
    if (buf.length > 0) {
      if (this.pendingBytes + buf.length > this.maxBytes) throw this.tooLong(this.pendingBytes + buf.length);
      this.pending.push(buf);
      this.pendingBytes += buf.length;
    }
    return lines;
  }

  /** What came after the last newline (a last line the server did not end), and forgets it. */
  rest(): string {
    const text = Buffer.concat(this.pending, this.pendingBytes).toString('utf8');
    this.pending = [];
    this.pendingBytes = 0;
    return text;
  }

  private tooLong(bytes: number): WatchDecodeError {
    return new WatchDecodeError(
      `a watch event line longer than ${this.maxBytes} bytes, the most an event may have (at least ${bytes})`,
    );
  }
}

/** One JSON watch line as an event; WatchDecodeError for anything that is not one. */
export function parseWatchLine(line: string): { type: string; object: KubernetesObject } {
  let data: unknown;
  try {
    data = JSON.parse(line);
  } catch (e) {
    throw new WatchDecodeError(`a watch line that is not JSON (${(e as Error).message}): ${line.slice(0, 80)}`);
  }
  const ev = data as { type?: unknown; object?: unknown } | null;
  if (
    typeof ev !== 'object' ||
    ev === null ||
    typeof ev.type !== 'string' ||
    typeof ev.object !== 'object' ||
    ev.object === null
  )
    throw new WatchDecodeError(`a watch line that is no watch event (a type and an object): ${line.slice(0, 80)}`);
  return { type: ev.type, object: ev.object as KubernetesObject };
}

/** What a ReportingWatch tells its informer and asks it. */
export interface WatchHooks {
  /** the watch answered 200 */
  readonly connected: () => void;
  /** no new connection once this is true */
  readonly stopped: () => boolean;
  /** closed while a sync runs or a turn's slice of intake is spent: no event is handed over then (intake-gate.ts) */
  readonly gate?: IntakeGate;
}

/** A watch's deadline for its answer (credentials included), client-node's Watch timeout. */
export const WATCH_TIMEOUT_MS = 30_000;

/**
 * An open watch with no byte for this long is taken for a dead connection and ended with a
 * TimeoutError. kube-apiserver's watch cache bookmarks a watch that has a deadline (the
 * informers send timeoutSeconds) roughly every minute (cacher.go's bookmarkFrequency), so this
 * is two missed bookmarks and a margin. It bookmarks only once its version has passed the
 * watch's, so a watch on a resource nothing wrote to may still be cut: it resumes from its
 * version, with no relist. At 30 s (client-node's) every quiet watch was cut and
 * opened again twice a minute against a real API server.
 */
export const WATCH_IDLE_TIMEOUT_MS = 130_000;

const timeoutError = () => new DOMException('The operation was aborted due to timeout', 'TimeoutError');

type WatchCallback = (phase: string, apiObj: unknown, watchObj?: unknown) => void;

/** The watch's inactivity timeout: re-armed by every chunk; `expire` once it runs out. */
class IdleTimer {
  timedOut = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ms: number,
    private readonly expire: () => void,
  ) {}

  readonly reset = (): void => {
    this.clear();
    this.timer = setTimeout(() => {
      this.timedOut = true;
      this.expire();
    }, this.ms);
    this.timer.unref();
  };

  clear(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/**
 * One watch's events handed over in order, none while the intake gate is closed (a sync runs,
 * or this turn's slice of intake is spent): the body is paused then, and what its last chunk
 * completed waits here until the gate opens.
 * `deliver` throwing (an event that does not decode) ends the watch with that error.
 */
export class GatedDelivery<T> {
  private queue: T[] = [];

  constructor(
    private readonly body: Pick<Readable, 'pause' | 'resume'>,
    private readonly gate: IntakeGate | undefined,
    private readonly deliver: (item: T) => void,
    private readonly finish: (err: unknown) => void,
    private readonly end: { readonly finished: boolean },
  ) {}

  /** The items a chunk completed. */
  push(items: T[]): void {
    // (a chunk the paused body still handed over goes behind those waiting)
    if (this.queue.length > 0) this.queue.push(...items);
    else this.drain(items);
  }

  private drain(items: T[]): void {
    for (let i = 0; i < items.length; i++) {
      if (this.end.finished) return;
      if (this.gate && !this.gate.open) {
        this.queue = items.slice(i);
        this.body.pause();
        this.gate.later(this.reopen);
        return;
      }
      try {
        this.deliver(items[i]!);
      } catch (e) {
        this.finish(e);
        return;
      }
    }
  }

  private readonly reopen = (): void => {
    const items = this.queue;
    this.queue = [];
    this.drain(items);
    if (this.queue.length === 0 && !this.end.finished) this.body.resume();
  };
}

/**
 * Length-delimited WatchEvent frames; one that does not decode ends the watch (the informer
 * logs it and starts again), as client-go's decoder does.
 */
function readFrames(
  body: Readable,
  callback: WatchCallback,
  finish: (err: unknown) => void,
  end: { readonly finished: boolean },
  gate: IntakeGate | undefined,
): void {
  const frames = new WatchFrames();
  const events = new GatedDelivery<Uint8Array>(
    body,
    gate,
    (frame) => {
      const ev = decodeWatchEvent(frame);
      callback(ev.type, ev.object, ev);
    },
    finish,
    end,
  );
  body.on('data', (chunk: Buffer) => {
    if (end.finished) return;
    let completed: Uint8Array[];
    try {
      completed = frames.push(chunk);
    } catch (e) {
      finish(e);
      return;
    }
    events.push(completed);
  });
}

/**
 * Newline-delimited JSON events; one that does not decode ends the watch as a bad frame does
 * (client-node skipped it: a DELETED lost so stayed lost).
 */
function readLines(
  body: Readable,
  callback: WatchCallback,
  finish: (err: unknown) => void,
  end: { readonly finished: boolean },
  gate: IntakeGate | undefined,
): void {
  const lines = new WatchLines();
  const deliver = (line: string) => {
    if (line.trim() === '') return; // no event: nothing is lost
    const ev = parseWatchLine(line);
    callback(ev.type, prunedObject(ev.object), ev);
  };
  const events = new GatedDelivery<string>(body, gate, deliver, finish, end);
  body.on('data', (chunk: Buffer) => {
    if (end.finished) return;
    let completed: string[];
    try {
      completed = lines.push(chunk);
    } catch (e) {
      finish(e);
      return;
    }
    events.push(completed);
  });
  body.on('end', () => {
    if (end.finished) return;
    // a last line without its newline: an event when it parses; else the stream was cut
    // inside it, and the watch resumed from the last version gets it again
    // (a paused body ends only once resumed, after the events waiting for the gate)
    const rest = lines.rest();
    try {
      if (rest.trim() !== '') deliver(rest);
    } catch {
      // cut short, not undecodable
    }
  });
}

/**
 * A watch stream as client-node's Watch reads it (newline-delimited JSON events, an
 * inactivity timeout, `done` called once), but sent through apiRequest (token file, 401
 * retry, metrics), reporting connections, and turning a throw before the request (e.g.
 * credentials that cannot be read) into the `done` error.
 */
export class ReportingWatch {
  constructor(
    private readonly kc: KubeConfig,
    private readonly hooks: WatchHooks,
    private readonly timeoutMs = WATCH_TIMEOUT_MS,
    private readonly idleTimeoutMs = WATCH_IDLE_TIMEOUT_MS,
  ) {}

  async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: WatchCallback,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    const controller = new AbortController();
    if (this.hooks.stopped()) {
      const e = new Error('informer stopped');
      e.name = 'AbortError';
      done(e);
      return controller;
    }
    const idle = new IdleTimer(this.idleTimeoutMs, () => controller.abort(timeoutError()));
    const end = { finished: false };
    const finish = (err: unknown) => {
      if (end.finished) return;
      end.finished = true;
      idle.clear();
      controller.abort();
      done(err && idle.timedOut ? timeoutError() : err);
    };
    try {
      const { body, protobuf } = await this.open(path, queryParams, controller);
      // from here on an inactivity timeout
      idle.reset();
      body.on('error', finish);
      body.on('close', () => finish(null));
      body.on('data', idle.reset);
      if (protobuf) readFrames(body, callback, finish, end, this.hooks.gate);
      else readLines(body, callback, finish, end, this.hooks.gate);
    } catch (e) {
      finish(e);
      return controller;
    }
    return this.opened(controller, end.finished);
  }

  /**
   * The watch request, until its answer (apiRequest's deadline, credentials included, names
   * what hung): the body as a stream, and whether it is protobuf; an answer without a body
   * throws what the informer reads (the status, Retry-After).
   */
  private async open(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    controller: AbortController,
  ): Promise<{ body: Readable; protobuf: boolean }> {
    const res = await apiRequest(
      this.kc,
      {
        method: 'GET',
        path,
        query: { ...queryParams, watch: true },
        signal: controller.signal,
        timeoutMs: this.timeoutMs,
        ...(this.kc instanceof ApiKubeConfig ? { accept: this.kc.accept } : {}),
      },
      true,
    );
    if (!res.stream?.body) {
      const error = new Error(
        `${res.statusText || STATUS_CODES[res.status] || 'Error'}: ${statusMessage(res.body)}`,
      ) as Error & { statusCode: number; headers: Record<string, string> };
      error.statusCode = res.status;
      // as ApiException carries them (raw-list.ts): the informer honours Retry-After
      error.headers = res.retryAfter !== undefined ? { 'retry-after': res.retryAfter } : {};
      throw error;
    }
    return {
      body: Readable.fromWeb(res.stream.body as WebReadableStream),
      protobuf: isProtobuf(res.stream.headers.get('content-type')),
    };
  }

  /** The watch answered and its body is being read: connected, unless stopped meanwhile. */
  private opened(controller: AbortController, finished: boolean): AbortController {
    // stopped while the request was in flight
    if (this.hooks.stopped()) {
      controller.abort();
      return controller;
    }
    if (!finished) this.hooks.connected();
    return controller;
  }
}
