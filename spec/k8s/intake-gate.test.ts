/**
 * The intake gate a sync holds (lib/k8s/intake-gate.ts) and a watch's delivery behind it
 * (GatedDelivery, lib/k8s/reporting-watch.ts): nothing handed over while held, everything in
 * order after, the body paused and resumed, a hold that runs out.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { INTAKE_HOLD_MAX_MS, IntakeGate } from '../../lib/k8s/intake-gate';
import { GatedDelivery } from '../../lib/k8s/reporting-watch';

describe('IntakeGate', () => {
  it('calls back at once when open; while held, in a later turn after the release, in order', async () => {
    const gate = new IntakeGate();
    expect(gate.maxHoldMs).toBe(INTAKE_HOLD_MAX_MS);
    const calls: string[] = [];
    gate.whenOpen(() => calls.push('open'));
    expect(calls).toEqual(['open']);
    gate.hold();
    expect(gate.held).toBe(true);
    gate.whenOpen(() => calls.push('a'));
    gate.whenOpen(() => calls.push('b'));
    await nextTurn();
    expect(calls).toEqual(['open']);
    gate.release();
    expect(gate.held).toBe(false);
    // not in the releasing sync's turn
    expect(calls).toEqual(['open']);
    await nextTurn();
    expect(calls).toEqual(['open', 'a', 'b']);
    expect(gate.expired).toBe(0);
  });

  it('a hold runs out after maxHoldMs: the watches go on, said once', async () => {
    const said: number[] = [];
    const gate = new IntakeGate(30, (ms) => said.push(ms));
    let called = false;
    gate.hold();
    gate.whenOpen(() => (called = true));
    await new Promise((r) => setTimeout(r, 60));
    await nextTurn();
    expect([gate.held, called, gate.expired, said]).toEqual([false, true, 1, [30]]);
    // the sync's own release later is a no-op
    gate.release();
    expect(gate.expired).toBe(1);
  });

  it('maxHoldMs 0 never holds', () => {
    const gate = new IntakeGate(0);
    gate.hold();
    expect(gate.held).toBe(false);
    let called = false;
    gate.whenOpen(() => (called = true));
    expect(called).toBe(true);
  });
});

describe('GatedDelivery', () => {
  function delivery(gate: IntakeGate, fail?: string) {
    const got: string[] = [];
    const body = { paused: 0, resumed: 0 };
    const errors: unknown[] = [];
    const end = { finished: false };
    const d = new GatedDelivery<string>(
      {
        pause() {
          body.paused++;
          return this as never;
        },
        resume() {
          body.resumed++;
          return this as never;
        },
      },
      gate,
      (item) => {
        if (item === fail) throw new Error(`bad ${item}`);
        got.push(item);
      },
      (e) => {
        errors.push(e);
        end.finished = true;
      },
      end,
    );
    return { d, got, body, errors, end };
  }

  it('hands over nothing while the gate is held: the body paused, the rest in order once open, then resumed', async () => {
    const gate = new IntakeGate();
    const { d, got, body } = delivery(gate);
    d.push(['1', '2']);
    expect(got).toEqual(['1', '2']);
    gate.hold();
    d.push(['3', '4']);
    // a chunk the paused body still hands over queues behind
    d.push(['5']);
    expect(got).toEqual(['1', '2']);
    expect([d.waiting, body.paused, body.resumed]).toEqual([true, 1, 0]);
    gate.release();
    await nextTurn();
    expect(got).toEqual(['1', '2', '3', '4', '5']);
    expect([d.waiting, body.paused, body.resumed]).toEqual([false, 1, 1]);
  });

  it('held again before its turn came: it waits for that release too', async () => {
    const gate = new IntakeGate();
    const { d, got, body } = delivery(gate);
    gate.hold();
    d.push(['1']);
    gate.release();
    gate.hold();
    await nextTurn();
    expect(got).toEqual([]);
    expect(body.resumed).toBe(0);
    gate.release();
    await nextTurn();
    expect(got).toEqual(['1']);
    expect(body.resumed).toBe(1);
  });

  it('an item that does not decode ends the watch there, also after the gate opened; nothing after it is handed over', async () => {
    const gate = new IntakeGate();
    const { d, got, body, errors } = delivery(gate, 'bad');
    gate.hold();
    d.push(['1', 'bad', '2']);
    gate.release();
    await nextTurn();
    expect(got).toEqual(['1']);
    expect(errors.map((e) => (e as Error).message)).toEqual(['bad bad']);
    // an ended watch's body is not resumed
    expect(body.resumed).toBe(0);
  });

  it('a watch that ended while its items waited hands none over', async () => {
    const gate = new IntakeGate();
    const { d, got, end } = delivery(gate);
    gate.hold();
    d.push(['1']);
    end.finished = true;
    gate.release();
    await nextTurn();
    expect(got).toEqual([]);
  });
});
