/**
 * The informers' watch stream (informers.ts): client-node's Watch, sent through apiRequest;
 * newline-delimited JSON events, or protobuf frames when the server answers in protobuf.
 */
import { STATUS_CODES } from 'node:http';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import { ApiKubeConfig, apiRequest, statusMessage } from './api-request';
import { prunedObject } from './prune';
import { WatchFrames, decodeWatchEvent, isProtobuf } from './protobuf';

/** What a ReportingWatch tells its informer and asks it. */
export interface WatchHooks {
  /** the watch answered 200 */
  readonly connected: () => void;
  /** no new connection once this is true */
  readonly stopped: () => boolean;
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
    callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    const controller = new AbortController();
    if (this.hooks.stopped()) {
      const e = new Error('informer stopped');
      e.name = 'AbortError';
      done(e);
      return controller;
    }
    let finished = false;
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    const clearTimer = () => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    };
    const resetTimer = () => {
      clearTimer();
      timer = setTimeout(() => {
        timedOut = true;
        controller.abort(timeoutError());
      }, this.idleTimeoutMs);
      timer.unref();
    };
    const finish = (err: unknown) => {
      if (finished) return;
      finished = true;
      clearTimer();
      controller.abort();
      done(err && timedOut ? timeoutError() : err);
    };
    try {
      // until the answer, apiRequest's deadline (credentials included) names what hung
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
        ) as Error & { statusCode: number };
        error.statusCode = res.status;
        throw error;
      }
      // from here on an inactivity timeout
      resetTimer();
      const body = Readable.fromWeb(res.stream.body as WebReadableStream);
      body.on('error', finish);
      body.on('close', () => finish(null));
      body.on('data', resetTimer);
      if (isProtobuf(res.stream.headers.get('content-type'))) {
        // length-delimited WatchEvent frames; one that does not decode ends the watch (the
        // informer logs it and starts again), as client-go's decoder does
        const frames = new WatchFrames();
        body.on('data', (chunk: Buffer) => {
          if (finished) return;
          try {
            for (const frame of frames.push(chunk)) {
              const ev = decodeWatchEvent(frame);
              callback(ev.type, ev.object, ev);
            }
          } catch (e) {
            finish(e);
          }
        });
        return this.opened(controller, finished);
      }
      const lines = createInterface(body);
      lines.on('error', finish);
      lines.on('line', (line) => {
        let data: { type?: string; object?: unknown };
        try {
          data = JSON.parse(line) as { type?: string; object?: unknown };
        } catch {
          return; // as client-node: a line that is not JSON is skipped
        }
        callback(data.type ?? '', prunedObject(data.object as KubernetesObject), data);
      });
      lines.on('close', () => finish(null));
    } catch (e) {
      finish(e);
      return controller;
    }
    return this.opened(controller, finished);
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
