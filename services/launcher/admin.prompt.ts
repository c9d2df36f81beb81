/**
 * The administrator's password, chosen by the person who starts the service on a terminal: asked for
 * once, without echo, when the environment names none. It is used only while the database has no user
 * (services/gateway/bootstrap.ts); an empty answer starts the service without one, which an existing
 * database needs no more than that.
 */
export function askAdminPassword(question: string): Promise<string> {
  const { stdin, stdout } = process;
  return new Promise((resolve) => {
    let answer = '';
    stdout.write(question);
    stdin.setRawMode(true);
    stdin.resume();
    stdin.setEncoding('utf8');
    const done = (value: string) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off('data', onData);
      stdout.write('\n');
      resolve(value);
    };
    const onData = (typed: string) => {
      for (const ch of typed) {
        if (ch === '\r' || ch === '\n') return done(answer);
        if (ch === '\u0003') {
          stdout.write('\n');
          process.exit(130);
        }
        if (ch === '\u007f' || ch === '\b') answer = answer.slice(0, -1);
        else if (ch >= ' ') answer += ch;
      }
    };
    stdin.on('data', onData);
  });
}

/**
 * Fills ADMIN_USERNAME / ADMIN_PASSWORD for the services: `admin` when only a password is given, and
 * the password from the terminal when none is given and there is a terminal to ask on.
 */
export async function settleAdminEnvironment(env: NodeJS.ProcessEnv): Promise<void> {
  if (!env.ADMIN_PASSWORD && process.stdin.isTTY && process.stdout.isTTY) {
    const name = env.ADMIN_USERNAME || 'admin';
    const password = await askAdminPassword(`Choose the password of the administrator "${name}" (8 characters or more; used only while no user exists, Enter to skip): `);
    if (password) env.ADMIN_PASSWORD = password;
  }
  if (env.ADMIN_PASSWORD && !env.ADMIN_USERNAME) env.ADMIN_USERNAME = 'admin';
}
