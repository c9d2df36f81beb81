import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Api } from '../support/client';
import { ADMIN } from '../support/harness';
import { startStack, type TestStack } from '../support/stack';
import { ensureBuilt, isolatedContext, launchBrowser, seriousViolations, signInThroughForm } from './browser';
import { seedManyFiles } from './seeds';

/** The web app in Chromium beyond the files: a large folder, versions, share links, account, devices, app passwords, users. */
let stack: TestStack;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let api: Api;
let userId: string;
const USER = { username: 'dave', password: 'dave-password-1' };
const opsOf = (ops: unknown[]) => ({ ops });
/** Large files are chosen by path: the browser reads them from disk, where a buffer would cross the debugging protocol. */
const files = mkdtempSync(path.join(os.tmpdir(), 'webapp-files-'));
const onDisk = (name: string, bytes: Buffer) => {
  const file = path.join(files, name);
  writeFileSync(file, bytes);
  return file;
};

beforeAll(async () => {
  [stack, browser] = await Promise.all([startStack(), launchBrowser(), ensureBuilt()]);
  ({ api, userId } = await stack.admin.createUser(USER.username, USER.password));
  ({ context } = await isolatedContext(browser, stack.gateway.baseUrl));
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  await signInThroughForm(page, USER.username, USER.password);
});

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await stack?.close();
  rmSync(files, { recursive: true, force: true });
});

test('a folder of 10,000 files shows its first rows, draws only what is on screen, and scrolls to the last', async () => {
  const big = 'b'.repeat(32);
  await api.post('/v1/sync/ops', opsOf([{ opId: 1, type: 'create', resourceId: big, payload: { resourceType: 'folder', name: 'Big' } }]));
  await seedManyFiles(stack.env.db, userId, big, 10_000);
  await page.goto(`/folders/${big}`);
  await page.getByRole('link', { name: 'file-00000.txt', exact: true }).waitFor();
  expect(await page.getByRole('row').count()).toBeLessThan(200);
  expect(await page.getByRole('table').getAttribute('aria-rowcount')).toBe('10001');
  await page.locator('.table-scroll').evaluate((el) => el.scrollTo(0, el.scrollHeight));
  await page.getByRole('link', { name: 'file-09999.txt', exact: true }).waitFor();
  expect(await page.getByRole('row').count()).toBeLessThan(200);
  await page.getByRole('button', { name: 'Size' }).click();
  expect(await page.getByRole('columnheader', { name: /Size/ }).getAttribute('aria-sort')).toBe('descending');
  expect(await seriousViolations(page)).toEqual([]);
});

test('versions of a file list time, size and device, and restore one', async () => {
  const up = await api.upload({}, { name: 'draft.txt', content: 'first' });
  await api.request('PUT', `/v1/files/${up.body.id}/content`, { body: 'second, longer', headers: { 'content-type': 'text/plain' } });
  await page.goto('/');
  await page.getByRole('button', { name: 'Actions for draft.txt' }).click();
  await page.getByRole('menuitem', { name: 'Versions' }).click();
  const dialog = page.getByRole('dialog', { name: 'Versions of draft.txt' });
  await dialog.getByRole('link', { name: 'Download' }).waitFor();
  expect(await dialog.getByRole('row').count()).toBe(2);
  expect(await seriousViolations(page)).toEqual([]);
  await dialog.getByRole('button', { name: 'Restore' }).click();
  await dialog.getByRole('row').nth(2).waitFor();
  const content = await api.get(`/v1/files/${up.body.id}/content`);
  expect(content.text).toBe('first');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'detached' });
});

test('a share link with a password: created in the dialog, opened on its public page, then revoked', async () => {
  await page.getByRole('button', { name: 'Actions for draft.txt' }).click();
  await page.getByRole('menuitem', { name: 'Share link' }).click();
  const dialog = page.getByRole('dialog', { name: 'Share draft.txt' });
  await dialog.getByRole('textbox', { name: 'Password' }).fill('link-password-1');
  await dialog.getByRole('button', { name: 'Create link' }).click();
  const url = await dialog.getByRole('textbox', { name: 'Link' }).inputValue();
  expect(url).toMatch(/\/s\/[A-Za-z0-9_-]{22,}$/);
  await dialog.getByRole('button', { name: 'Copy link' }).waitFor();
  expect(await seriousViolations(page)).toEqual([]);

  const visitor = await context.browser()!.newContext();
  const publicPage = await visitor.newPage();
  const response = await publicPage.goto(url);
  expect(response?.headers()['referrer-policy']).toBe('no-referrer');
  await publicPage.getByRole('textbox', { name: 'Password' }).fill('link-password-1');
  await publicPage.getByRole('button', { name: 'Open' }).click();
  const [download] = await Promise.all([publicPage.waitForEvent('download'), publicPage.getByRole('link', { name: 'Download' }).click()]);
  expect(download.suggestedFilename()).toBe('draft.txt');
  expect(await seriousViolations(publicPage)).toEqual([]);
  await visitor.close();

  await dialog.getByRole('button', { name: 'Revoke' }).click();
  await dialog.getByText('No links yet.').waitFor();
  await page.keyboard.press('Escape');
});

test("a folder link's public page lists the folder, opens a subfolder and offers its ZIP; an upload link takes files", async () => {
  const share = 'd'.repeat(32);
  const inner = 'e'.repeat(32);
  await api.post('/v1/sync/ops', opsOf([
    { opId: 10, type: 'create', resourceId: share, payload: { resourceType: 'folder', name: 'Shared' } },
    { opId: 11, type: 'create', resourceId: inner, payload: { resourceType: 'folder', name: 'Inner', parentId: share } },
  ]));
  await api.upload({ folderId: inner }, { name: 'deep.txt', content: 'deep' });
  const read = await api.post('/v1/links', { resourceId: share });
  const upload = await api.post('/v1/links', { resourceId: share, access: 'upload' });
  const visitor = await context.browser()!.newContext({ baseURL: stack.gateway.baseUrl });
  const publicPage = await visitor.newPage();
  publicPage.setDefaultTimeout(10_000);
  await publicPage.goto(`/s/${read.body.token}`);
  await publicPage.getByRole('heading', { level: 1, name: 'Shared' }).waitFor();
  await publicPage.getByRole('link', { name: 'Inner', exact: true }).click();
  await publicPage.getByRole('link', { name: 'deep.txt', exact: true }).waitFor();
  expect(await publicPage.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link').allTextContents()).toEqual(['Shared', 'Inner']);
  const [zip] = await Promise.all([publicPage.waitForEvent('download'), publicPage.getByRole('link', { name: 'Download as ZIP' }).click()]);
  expect(zip.suggestedFilename()).toMatch(/\.zip$/);
  expect(await seriousViolations(publicPage)).toEqual([]);

  await publicPage.goto(`/s/${upload.body.token}`);
  await publicPage.getByLabel('Upload files').setInputFiles([{ name: 'gift.txt', mimeType: 'text/plain', buffer: Buffer.from('for you') }]);
  await publicPage.getByText('gift.txt (7 B)').waitFor();
  expect(await seriousViolations(publicPage)).toEqual([]);
  await visitor.close();
  const listed = await api.get(`/v1/items?folderId=${share}`);
  expect(listed.body.items.map((i: { name: string }) => i.name)).toEqual(['Inner', 'gift.txt']);
});

test('a file over 8 MiB goes through the resumable endpoint and resumes after its first transfer is cut', async () => {
  const bytes = Buffer.alloc(9 * 1024 * 1024, 7);
  let patches = 0;
  await page.route('**/v1/uploads/**', (route) => {
    if (route.request().method() !== 'PATCH') return route.continue();
    patches += 1;
    return patches === 1 ? route.abort('connectionreset') : route.continue();
  });
  await page.getByLabel('Upload files').setInputFiles(onDisk('big.bin', bytes));
  await page.getByRole('link', { name: 'big.bin', exact: true }).waitFor({ timeout: 20_000 });
  await page.unroute('**/v1/uploads/**');
  expect(patches).toBeGreaterThanOrEqual(2);
  const found = await api.get('/v1/files/search?q=big.bin');
  expect(found.body.items[0]).toMatchObject({ size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
});

test('after a reload, choosing the same file again resumes its upload where the service has it', async () => {
  const bytes = Buffer.alloc(12 * 1024 * 1024, 3);
  const half = 5 * 1024 * 1024;
  let cut = false;
  let reached = () => undefined as void;
  const halfway = new Promise<void>((resolve) => (reached = resolve));
  const offsets: string[] = [];
  await page.route('**/v1/uploads**', async (route) => {
    const request = route.request();
    if (cut) return route.abort('connectionreset');
    if (request.method() !== 'PATCH') return route.continue();
    // The first transfer reaches the service halfway, then the network dies.
    cut = true;
    await route.fetch({ postData: request.postDataBuffer()!.subarray(0, half) });
    await route.abort('connectionreset');
    reached();
  });
  const file = onDisk('resumed.bin', bytes);
  await page.getByLabel('Upload files').setInputFiles(file);
  await halfway;
  await page.reload();
  await page.unroute('**/v1/uploads**');
  page.on('request', (r) => {
    if (r.method() === 'PATCH' && r.url().includes('/v1/uploads/')) offsets.push(r.headers()['upload-offset'] ?? '');
  });
  await page.getByLabel('Upload files').setInputFiles(file);
  await page.getByRole('link', { name: 'resumed.bin', exact: true }).waitFor({ timeout: 20_000 });
  expect(offsets[0]).toBe(String(half));
  const found = await api.get('/v1/files/search?q=resumed.bin');
  expect(found.body.items[0]).toMatchObject({ size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
});

test('account shows storage used in words and changes the password', async () => {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Account' }).click();
  const meter = page.getByRole('meter', { name: 'Storage used' });
  await meter.waitFor();
  expect(await page.getByText(/MB used, no limit/).count()).toBe(1);
  // No quota: the words without a bar (no <meter> element to draw one full).
  expect(await meter.getAttribute('aria-valuetext')).toMatch(/MB used, no limit/);
  expect(await page.locator('meter').count()).toBe(0);
  expect(await seriousViolations(page)).toEqual([]);
  await page.getByRole('textbox', { name: 'Current password' }).fill('wrong-password-0');
  await page.getByRole('textbox', { name: 'New password' }).fill('dave-password-2');
  await page.getByRole('button', { name: 'Change password' }).click();
  await expect(page.getByRole('alert').textContent()).resolves.toMatch(/current password is wrong/);
  await page.getByRole('textbox', { name: 'Current password' }).fill(USER.password);
  await page.getByRole('button', { name: 'Change password' }).click();
  await page.getByText('Your password has been changed.').waitFor();
  USER.password = 'dave-password-2';
  // With a quota, the bar runs from 0 to it.
  const quotaBytes = 10 * 1000 ** 3;
  expect((await stack.admin.patch(`/v1/users/${userId}`, { quotaBytes })).status).toBe(200);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Files' }).click();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Account' }).click();
  await page.locator('meter').waitFor();
  expect(await page.getByRole('meter', { name: 'Storage used' }).getAttribute('max')).toBe(String(quotaBytes));
  expect((await stack.admin.patch(`/v1/users/${userId}`, { quotaBytes: null })).status).toBe(200);
});

test('app passwords are created with the current password, shown once with the WebDAV address, and revoked', async () => {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'App passwords' }).click();
  await page.getByRole('textbox', { name: 'Name' }).fill('Phone');
  await page.getByRole('textbox', { name: 'Current password' }).fill(USER.password);
  await page.getByRole('button', { name: 'Create app password' }).click();
  await page.getByText(/\/dav\//).first().waitFor();
  expect(await seriousViolations(page)).toEqual([]);
  await page.getByRole('button', { name: 'Revoke Phone' }).click();
  await page.getByRole('button', { name: 'Revoke Phone' }).waitFor({ state: 'detached' });
});

test('devices list this browser as current and sign another one out; Sign out ends this session', async () => {
  const laptop = new Api(stack.gateway.baseUrl);
  await laptop.login(USER.username, USER.password, await laptop.registerDevice('Laptop'));
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Devices' }).click();
  await page.getByText('This device').waitFor();
  await page.getByRole('button', { name: 'Sign out Laptop' }).click();
  await page.getByRole('button', { name: 'Sign out Laptop' }).waitFor({ state: 'detached' });
  expect(await seriousViolations(page)).toEqual([]);
  await page.getByRole('button', { name: 'Sign out', exact: true }).click();
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
  await page.goto('/devices');
  await page.getByRole('button', { name: 'Sign in' }).waitFor();
});

test('an administrator sees Users: creates one, sets a quota, deletes one', async () => {
  await signInThroughForm(page, ADMIN.username, ADMIN.password);
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Users' }).click();
  await page.getByRole('heading', { level: 1, name: 'Users' }).waitFor();
  await page.getByRole('textbox', { name: 'Username' }).fill('erin');
  await page.getByRole('textbox', { name: 'Password' }).fill('erin-password-1');
  await page.getByRole('textbox', { name: 'Email' }).fill('erin@example.org');
  await page.getByRole('checkbox', { name: 'Administrator' }).check();
  await page.getByRole('button', { name: 'Create user' }).click();
  await page.getByRole('button', { name: 'Set quota for erin' }).click();
  await page.getByRole('dialog').getByRole('textbox').fill('2 GB');
  await page.getByRole('dialog').getByRole('button', { name: 'Save quota' }).click();
  await page.getByRole('cell', { name: '2.0 GB' }).waitFor();
  expect(await seriousViolations(page)).toEqual([]);
  await page.getByRole('button', { name: 'Delete erin' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete user' }).click();
  await page.getByRole('button', { name: 'Delete erin' }).waitFor({ state: 'detached' });
});
