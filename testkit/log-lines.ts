import winston from 'winston';
import Transport from 'winston-transport';

/** One line a component logged: its level, message and metadata. */
export type LoggedLine = { readonly level: string; readonly message: string } & Readonly<Record<string, unknown>>;

class Recorder extends Transport {
  constructor(private readonly lines: LoggedLine[]) {
    super();
  }
  override log(info: LoggedLine, next: () => void): void {
    this.lines.push({ ...info });
    next();
  }
}

/** A logger (every level) that keeps what it is given, for assertions. */
export function recordingLogger(): { readonly log: winston.Logger; readonly lines: LoggedLine[] } {
  const lines: LoggedLine[] = [];
  return { log: winston.createLogger({ level: 'debug', transports: [new Recorder(lines)] }), lines };
}
