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
