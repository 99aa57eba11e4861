// The real Execer on the host: a command that never ends is killed and named in the error.
import { ChildProcessExec, ExecTimeoutError, ObservedExec } from '../../lib/kernel/exec';

describe('ChildProcessExec', () => {
  it('kills a command that outlives its timeout and names it (and the timeout) in the error', async () => {
    const exec = new ChildProcessExec({ timeoutMs: 50 });
    const err = await exec.run('sleep', ['30']).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ExecTimeoutError);
    const t = err as ExecTimeoutError;
    expect(t.code).toBe('KIPVS_EXEC_TIMEOUT');
    expect(t.cmd).toBe('sleep 30');
    expect(t.message).toBe('sleep 30: no exit after 50 ms; killed (SIGKILL)');
    // killed, not left behind
    expect(t.pid).toBeGreaterThan(0);
    expect(() => process.kill(t.pid!, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }));
  });

  it('a command that ends in time gives its output and exit code', async () => {
    const r = await new ChildProcessExec({ timeoutMs: 60_000 }).run('sh', ['-c', 'cat; echo err >&2; exit 3'], 'in\n');
    expect(r).toEqual({ stdout: 'in\n', stderr: 'err\n', exitCode: 3 });
  });

  it('a missing binary rejects with the spawn error (ENOENT)', async () => {
    await expect(new ChildProcessExec().run('/nonexistent/kube-ipvs-no-such-tool', [])).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });
});

describe('ObservedExec (kube_ipvs_execs_total{program,result})', () => {
  it('reports each command by base name: exit 0 ok, another exit or a spawn failure error', async () => {
    const seen: string[] = [];
    const exec = new ObservedExec(new ChildProcessExec(), (o) => seen.push(`${o.program} ${o.result}`));
    expect((await exec.run('/bin/sh', ['-c', 'exit 0'])).exitCode).toBe(0);
    expect((await exec.run('sh', ['-c', 'exit 2'])).exitCode).toBe(2);
    await expect(exec.run('/nonexistent/ipset', [])).rejects.toMatchObject({ code: 'ENOENT' });
    expect(seen).toEqual(['sh ok', 'sh error', 'ipset error']);
  });
});
