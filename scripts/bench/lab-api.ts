// The lab's kube-apiserver as its admin (scripts/lab/lab.ts's client certificate, system:masters),
// over a pool of kept-alive HTTPS connections: the kube-proxy bench loads its objects with it
// (lab-load.ts) and writes its endpoint changes with it (lab-writer.ts), both on the host, many
// requests in flight, where kubectl would take one process each.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Agent, request } from 'undici';

export interface LabApiReply {
  readonly status: number;
  readonly body: string;
}

export class LabApi {
  private readonly agent: Agent;

  /** `labDir`: the lab's directory (its pki/); `server`: https://host:port of an API server. */
  constructor(
    labDir: string,
    readonly server: string,
    connections = 16,
  ) {
    const pki = (f: string) => readFileSync(path.join(labDir, 'pki', f), 'utf8');
    this.agent = new Agent({
      connections,
      pipelining: 1,
      headersTimeout: 120_000,
      bodyTimeout: 120_000,
      connect: { ca: pki('ca.crt'), cert: pki('client.crt'), key: pki('client.key') },
    });
  }

  async call(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    p: string,
    body?: unknown,
    accept?: string,
  ): Promise<LabApiReply> {
    const r = await request(this.server + p, {
      method,
      dispatcher: this.agent,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(accept ? { accept } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.statusCode, body: await r.body.text() };
  }

  /** `call`, throwing unless the status is 2xx or one of `ok`. */
  async must(
    method: 'GET' | 'POST' | 'PUT' | 'DELETE',
    p: string,
    body?: unknown,
    ok: readonly number[] = [],
  ): Promise<LabApiReply> {
    const r = await this.call(method, p, body);
    if ((r.status < 200 || r.status > 299) && !ok.includes(r.status))
      throw new Error(`${method} ${p}: HTTP ${r.status} ${r.body.slice(0, 300)}`);
    return r;
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

/** Runs `task(i)` for i in [0, n), at most `parallel` at a time; rejects on the first failure. */
export async function forEachParallel(n: number, parallel: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < n) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(parallel, n) }, worker));
}
