import { settleAdminEnvironment } from '../../services/launcher/admin.prompt';

/*
 * Without a terminal (as under a service manager, a script or CI) the launcher asks nothing: the
 * environment decides, and a password alone names the administrator `admin`.
 */
test('a password without a username names the administrator admin', async () => {
  const env: NodeJS.ProcessEnv = { ADMIN_PASSWORD: 'a-password-1' };
  await settleAdminEnvironment(env);
  expect(env).toEqual({ ADMIN_PASSWORD: 'a-password-1', ADMIN_USERNAME: 'admin' });
});

test('a username and a password from the environment are kept as they are', async () => {
  const env: NodeJS.ProcessEnv = { ADMIN_USERNAME: 'root-user', ADMIN_PASSWORD: 'a-password-1' };
  await settleAdminEnvironment(env);
  expect(env).toEqual({ ADMIN_USERNAME: 'root-user', ADMIN_PASSWORD: 'a-password-1' });
});

test('with no terminal and no password nothing is asked and nothing is set', async () => {
  const env: NodeJS.ProcessEnv = {};
  await settleAdminEnvironment(env);
  expect(env).toEqual({});
});
