/**
 * Raw HTTP/1.1 over a TCP socket, for tests of what a server does with requests fetch never
 * sends: half-open ones, oversized headers, connections beyond a cap.
 */
import net from 'node:net';

/** One raw connection: the socket, what it got so far, and `closed`, all it got once it closed. */
export interface RawConnection {
  readonly socket: net.Socket;
  /** what the server sent so far */
  received(): string;
  /** resolves to all the server sent, once the connection closed (a reset counts) */
  readonly closed: Promise<string>;
}

/** Connects to host:port and sends `text` as is. */
export function rawConnection(port: number, text: string, host = '127.0.0.1'): RawConnection {
  const socket = net.connect(port, host);
  let data = '';
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => (data += d));
  socket.on('error', () => undefined); // a reset is a close too
  const closed = new Promise<string>((r) => socket.once('close', () => r(data)));
  socket.once('connect', () => socket.write(text));
  return { socket, received: () => data, closed };
}

/** A request line and a header, without the blank line that would end the headers. */
export const HALF_OPEN_REQUEST = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n';

/** A whole GET that keeps its connection open afterwards (HTTP/1.1's default). */
export const KEEP_ALIVE_REQUEST = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
