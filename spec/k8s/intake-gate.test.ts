/**
 * The intake gate a sync holds (lib/k8s/intake-gate.ts) and a watch's delivery behind it
 * (GatedDelivery, lib/k8s/reporting-watch.ts): nothing handed over while held, everything in
 * order after, the body paused and resumed, a hold that runs out.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { INTAKE_HOLD_MAX_MS, INTAKE_SLICE_MS, IntakeGate } from '../../lib/k8s/intake-gate';
import { GatedDelivery } from '../../lib/k8s/reporting-watch';

describe('IntakeGate', () => {
  it('held: closed, and a watch waiting is called back in a later turn after the release, in order', async () => {
    const gate = new IntakeGate();
    expect([gate.maxHoldMs, gate.sliceMs]).toEqual([INTAKE_HOLD_MAX_MS, INTAKE_SLICE_MS]);
    expect(gate.open).toBe(true);
    const calls: string[] = [];
    gate.hold();
    expect([gate.held, gate.open]).toEqual([true, false]);
    gate.later(() => calls.push('a'));
    gate.later(() => calls.push('b'));
    await nextTurn();
    expect(calls).toEqual([]);
    gate.release();
    expect([gate.held, gate.open]).toEqual([false, true]);
    // not in the releasing sync's turn
    expect(calls).toEqual([]);
    await nextTurn();
    expect(calls).toEqual(['a', 'b']);
  });

  it('a hold runs out after maxHoldMs: the watches go on, said once', async () => {
    const said: number[] = [];
    const gate = new IntakeGate(30, 0, (ms) => said.push(ms));
    let called = false;
    gate.hold();
    gate.later(() => (called = true));
    await new Promise((r) => setTimeout(r, 60));
    await nextTurn();
    expect([gate.held, called, said]).toEqual([false, true, [30]]);
    // the sync's own release later is a no-op, and a hold released in time never runs out
    gate.release();
    gate.hold();
    expect(gate.held).toBe(true);
    gate.release();
    await new Promise((r) => setTimeout(r, 60));
    expect(said).toEqual([30]);
  });

  it('maxHoldMs 0 never holds', () => {
    const gate = new IntakeGate(0, 0);
    gate.hold();
    expect([gate.held, gate.open]).toEqual([false, true]);
  });

  it('a turn takes events in for sliceMs at most: then closed until a later turn, after the timers that waited', async () => {
    let t = 0;
    const gate = new IntakeGate(INTAKE_HOLD_MAX_MS, 50, undefined, () => t);
    expect(gate.open).toBe(true);
    t = 49;
    expect(gate.open).toBe(true);
    t = 50;
    expect(gate.open).toBe(false);
    const calls: boolean[] = [];
    gate.later(() => calls.push(gate.open));
    // never in the turn that spent the slice
    expect(calls).toEqual([]);
    await nextTurn();
    // a new turn, a new slice (its clock still at 50)
    expect(calls).toEqual([true]);
  });

  it('sliceMs 0: no limit per turn', () => {
    let t = 0;
    const gate = new IntakeGate(INTAKE_HOLD_MAX_MS, 0, undefined, () => t);
    expect(gate.open).toBe(true);
    t = 10_000;
    expect(gate.open).toBe(true);
  });
});

describe('GatedDelivery', () => {
  function delivery(gate: IntakeGate, fail?: string, each?: () => void) {
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
        each?.();
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
    expect([body.paused, body.resumed]).toEqual([1, 0]);
    gate.release();
    await nextTurn();
    expect(got).toEqual(['1', '2', '3', '4', '5']);
    expect([body.paused, body.resumed]).toEqual([1, 1]);
  });

  it("a slice spent: the rest waits for a later turn, a slice's worth each, the body paused until all are in", async () => {
    let t = 0;
    const gate = new IntakeGate(INTAKE_HOLD_MAX_MS, 50, undefined, () => t);
    // each event takes 30 ms
    const { d, got, body } = delivery(gate, undefined, () => (t += 30));
    d.push(['1', '2', '3', '4', '5']);
    expect(got).toEqual(['1', '2']);
    expect([body.paused, body.resumed]).toEqual([1, 0]);
    await nextTurn();
    expect(got).toEqual(['1', '2', '3', '4']);
    expect(body.resumed).toBe(0);
    await nextTurn();
    expect(got).toEqual(['1', '2', '3', '4', '5']);
    expect([body.paused, body.resumed]).toEqual([2, 1]);
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
