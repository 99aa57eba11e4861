/**
 * Polls `condition` until it holds (every 5 ms, bounded by `timeoutMs`, default 10 s) and
 * rejects naming `what` when it never does. For tests that wait on another process or a
 * server: they wait for a state, never for a fixed time.
 */
export async function waitFor(what: string, condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
