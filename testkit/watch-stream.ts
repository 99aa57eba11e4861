/**
 * A raw watch client for tests of the fake API server: GETs a watch URL with fetch and
 * collects the newline-delimited JSON events as they arrive.
 */
export interface WatchEvent {
  readonly type: string;
  readonly object: {
    kind?: string;
    apiVersion?: string;
    code?: number;
    reason?: string;
    metadata: { name?: string; namespace?: string; resourceVersion?: string };
  };
}

export interface WatchStream {
  readonly status: number;
  /** events received so far, in order */
  readonly events: WatchEvent[];
  /** true once the server ended or broke the stream */
  readonly ended: () => boolean;
  close(): void;
}

export async function openWatch(url: string): Promise<WatchStream> {
  const ac = new AbortController();
  const res = await fetch(url, { signal: ac.signal });
  const events: WatchEvent[] = [];
  let ended = false;
  if (res.body) {
    void (async () => {
      const decoder = new TextDecoder();
      let buf = '';
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          buf += decoder.decode(chunk, { stream: true });
          let nl: number;
          while ((nl = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, nl);
            buf = buf.slice(nl + 1);
            if (line.trim() !== '') events.push(JSON.parse(line) as WatchEvent);
          }
        }
      } catch {
        // aborted or broken: `ended` says so
      }
      ended = true;
    })();
  } else {
    ended = true;
  }
  return { status: res.status, events, ended: () => ended, close: () => ac.abort() };
}
