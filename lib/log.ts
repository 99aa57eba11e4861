import winston from 'winston';

/**
 * The process-wide logger (winston). Level from KUBE_IPVS_LOG_LEVEL (default "info").
 * Modules log through `log.child({ component: '<name>' })` so every line says who wrote it.
 */
export const log: winston.Logger = winston.createLogger({
  level: process.env.KUBE_IPVS_LOG_LEVEL ?? 'info',
  format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
  transports: [new winston.transports.Console({ stderrLevels: ['error', 'warn', 'info', 'debug'] })],
});

/** A child logger tagged with a component name. */
export function componentLog(component: string): winston.Logger {
  return log.child({ component });
}

/** winston level for a kube-proxy (klog) verbosity: 0-1 info, 2-3 verbose, 4 and above debug. */
export function levelForVerbosity(v: number): 'info' | 'verbose' | 'debug' {
  return v >= 4 ? 'debug' : v >= 2 ? 'verbose' : 'info';
}

/** `--v=N`: sets the process-wide logger level (see levelForVerbosity). */
export function setVerbosity(v: number): void {
  log.level = levelForVerbosity(v);
}
