import net from 'node:net';

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port }, () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
    socket.setTimeout(2000, () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** The suite runs against the real MariaDB and Redis; say so plainly when either is missing. */
export default async function globalSetup(): Promise<void> {
  const [mysql, redis] = await Promise.all([answers(3306), answers(6379)]);
  if (!mysql || !redis) {
    throw new Error(`the tests need MariaDB on 127.0.0.1:3306 and Redis on 127.0.0.1:6379 (mysql: ${mysql}, redis: ${redis})`);
  }
}
