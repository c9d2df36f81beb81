import pino, { type Logger } from 'pino';

export type { Logger };

/** Paths that must never reach a log line, wherever they appear in a logged object. */
const REDACT = [
  'password',
  'new_password',
  'current_password',
  'token',
  'authorization',
  '*.password',
  '*.new_password',
  '*.current_password',
  '*.token',
  '*.authorization',
  'req.headers.authorization',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
];

/** JSON lines on stdout; `destination` lets a test read what would have been written. */
export function createLogger(service: string, level: string, destination?: pino.DestinationStream): Logger {
  const options = {
    level,
    base: { service },
    redact: { paths: REDACT, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(options, destination) : pino(options);
}
