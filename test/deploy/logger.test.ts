import { Writable } from 'node:stream';
import { createLogger } from '../../shared/logger';

/** The logger's redaction: credentials logged by mistake come out as "[redacted]". */
function capture() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: createLogger('test', 'info', stream), text: () => lines.join('') };
}

test('passwords, tokens and authorization headers are redacted at the top level and one level down', () => {
  const { logger, text } = capture();
  logger.info({ password: 'p-top-secret-1', token: 't-top-secret-2', authorization: 'Bearer t-top-secret-3' }, 'top');
  logger.info({ body: { password: 'p-nested-4', new_password: 'p-nested-5', current_password: 'p-nested-6', token: 't-nested-7' } }, 'nested');
  logger.info({ req: { headers: { authorization: 'Basic YWRtaW46c2VjcmV0', cookie: 'sid=c-secret-8' } } }, 'request');

  const out = text();
  for (const secret of ['p-top-secret-1', 't-top-secret-2', 't-top-secret-3', 'p-nested-4', 'p-nested-5', 'p-nested-6', 't-nested-7', 'YWRtaW46c2VjcmV0', 'c-secret-8']) {
    expect(out).not.toContain(secret);
  }
  const lines = out.trim().split('\n').map((l) => JSON.parse(l));
  expect(lines[0]).toEqual(expect.objectContaining({ password: '[redacted]', token: '[redacted]', authorization: '[redacted]', service: 'test' }));
  expect(lines[2].req.headers).toEqual({ authorization: '[redacted]', cookie: '[redacted]' });
});

test('a child logger carrying a request id keeps the redaction', () => {
  const { logger, text } = capture();
  logger.child({ requestId: 'req-1' }).info({ user: { password: 'p-child-9' } }, 'child');
  const line = JSON.parse(text());
  expect(line).toEqual(expect.objectContaining({ requestId: 'req-1', user: { password: '[redacted]' } }));
});
