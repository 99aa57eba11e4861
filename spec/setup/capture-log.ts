// Unit runs only (jest.config.js setupFiles): the logger writes to a buffer instead of stderr;
// jest.unit-environment.js prints the buffer of a test that fails. Set KUBE_IPVS_TEST_LOG=1
// to see every line as it is written.
import Transport from 'winston-transport';
// triple-beam's MESSAGE: the formatted line
const MESSAGE = Symbol.for('message');
import { log } from '../../lib/log';

const lines = (globalThis as { __kubeIpvsLogLines?: string[] }).__kubeIpvsLogLines;

class BufferTransport extends Transport {
  override log(info: Record<string | symbol, unknown>, next: () => void): void {
    lines?.push(String(info[MESSAGE]));
    next();
  }
}

if (process.env.KUBE_IPVS_TEST_LOG !== '1') {
  log.clear();
  log.add(new BufferTransport());
}
