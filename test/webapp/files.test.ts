import { readFileSync } from 'node:fs';
import sharp from 'sharp';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Api } from '../support/client';
import { makeFolders, unzipEntries } from '../support/links';
import { startStack, type TestStack } from '../support/stack';
import { ensureBuilt, isolatedContext, launchBrowser, seriousViolations } from './browser';

/** The web app in Chromium: sign-in, files, actions, trash, by the roles and names people and screen readers use. */
let stack: TestStack;
let browser: Browser;
let context: BrowserContext;
let foreign: string[];
let page: Page;
let api: Api;
const USER = { username: 'carol', password: 'carol-password-1' };

beforeAll(async () => {
  [stack, browser] = await Promise.all([startStack(), launchBrowser(), ensureBuilt()]);
  api = (await stack.admin.createUser(USER.username, USER.password)).api;
  ({ context, foreign } = await isolatedContext(browser, stack.gateway.baseUrl));
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
});

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await stack?.close();
});

test('the sign-in form refuses a wrong password with an alert, then signs in; the page has a strict CSP', async () => {
  const response = await page.goto('/');
  const csp = response?.headers()['content-security-policy'] ?? '';
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).not.toContain('unsafe-inline');
  expect(await seriousViolations(page.getByRole('button', { name: 'Sign in' }).page())).toEqual([]);
  await page.getByRole('textbox', { name: 'Username' }).fill(USER.username);
  await page.getByRole('textbox', { name: 'Password' }).fill('not-the-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert').textContent()).resolves.toMatch(/wrong username or password/i);
  await page.getByRole('textbox', { name: 'Password' }).fill(USER.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const main = page.getByRole('navigation', { name: 'Main' });
  for (const name of ['Files', 'Trash', 'Devices', 'App passwords', 'Account']) await main.getByRole('link', { name, exact: true }).waitFor();
  expect(await main.getByRole('link', { name: 'Users' }).count()).toBe(0);
  expect(await page.evaluate('document.cookie')).toBe('');
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Files' }).waitFor();
});

test('a new folder opens with the address changing; back returns; the breadcrumb leads home', async () => {
  await page.getByRole('button', { name: 'New folder' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('textbox', { name: 'Name' }).fill('Reports');
  await dialog.getByRole('button', { name: 'Create' }).click();
  await page.getByRole('link', { name: 'Reports', exact: true }).click();
  await page.getByRole('heading', { level: 1, name: 'Reports' }).waitFor();
  expect(page.url()).toMatch(/\/folders\/[0-9a-f]{32}$/);
  const crumbs = page.getByRole('navigation', { name: 'Breadcrumb' }).getByRole('link');
  expect(await crumbs.allTextContents()).toEqual(['Files', 'Reports']);
  expect(await seriousViolations(page)).toEqual([]);
  await page.reload();
  await page.getByRole('heading', { level: 1, name: 'Reports' }).waitFor();
  await page.goBack();
  await page.getByRole('heading', { level: 1, name: 'Files' }).waitFor();
  await page.goForward();
  await page.getByRole('heading', { level: 1, name: 'Reports' }).waitFor();
  await crumbs.first().click();
  await page.getByRole('heading', { level: 1, name: 'Files' }).waitFor();
});

test('uploading through the file input shows the file; a name that is markup is shown as text; its link downloads it', async () => {
  const evil = '<img src=x onerror=alert(1)>';
  await page.getByLabel('Upload files').setInputFiles([
    { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello notes') },
    { name: evil, mimeType: 'text/plain', buffer: Buffer.from('evil') },
  ]);
  await page.getByRole('link', { name: 'notes.txt', exact: true }).waitFor();
  await page.getByRole('link', { name: evil, exact: true }).waitFor();
  expect(await page.locator('img[src=x]').count()).toBe(0);
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'notes.txt', exact: true }).click()]);
  expect(download.suggestedFilename()).toBe('notes.txt');
  const rows = page.getByRole('row');
  // Header, then folders first: Reports before the files.
  expect(await rows.nth(1).getByRole('link').textContent()).toBe('Reports');
});

test('files dropped onto the listing are uploaded, each with a progress bar named after it', async () => {
  // Browser code as text: the tests compile without the DOM's types.
  await page.locator('div.files').waitFor();
  await page.evaluate(`(() => {
    const el = document.querySelector('div.files');
    const data = new DataTransfer();
    data.items.add(new File(['dropped one'], 'dropped-1.txt', { type: 'text/plain' }));
    data.items.add(new File(['dropped two'], 'dropped-2.txt', { type: 'text/plain' }));
    el.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
  })()`);
  await page.getByRole('link', { name: 'dropped-1.txt', exact: true }).waitFor();
  await page.getByRole('link', { name: 'dropped-2.txt', exact: true }).waitFor();
  await page.getByRole('progressbar', { name: /^dropped-2\.txt/ }).waitFor();
  await page.getByRole('button', { name: 'Close uploads' }).click();

  // A dropped folder tree whose folders exist at every depth: they are reused, and a file whose name
  // is taken is reported on its own while the others go in.
  const ids = await makeFolders(api, ['Trip/', 'Trip/Day 1/'], 900);
  expect((await api.upload({ folderId: ids['Trip/Day 1/']! }, { name: 'a.txt', content: 'kept' })).status).toBe(201);
  await page.evaluate(`(() => {
    const file = (name) => ({ isFile: true, name, file: (ok) => ok(new File([name], name, { type: 'text/plain' })) });
    const dir = (name, children) => {
      let read = false;
      return { isDirectory: true, name, createReader: () => ({ readEntries: (ok) => { ok(read ? [] : children); read = true; } }) };
    };
    const tree = dir('Trip', [dir('Day 1', [file('a.txt'), file('b.txt')]), dir('Day 2', [file('c.txt')])]);
    const drop = new Event('drop', { bubbles: true, cancelable: true });
    Object.defineProperty(drop, 'dataTransfer', { value: { items: [{ webkitGetAsEntry: () => tree }], files: [] } });
    document.querySelector('div.files').dispatchEvent(drop);
  })()`);
  await page.getByText('Not uploaded: the folder “Trip/Day 1” already has a file named “a.txt”', { exact: false }).waitFor();
  await page.getByRole('progressbar', { name: /^c\.txt/ }).waitFor();
  const children = async (folderId: string) => (await api.get(`/v1/items?folderId=${folderId}`)).body.items as Array<{ id: string; name: string }>;
  const tree = async () => {
    const trip = await children(ids['Trip/']!);
    const day2 = trip.find((i) => i.name === 'Day 2');
    return { trip: trip.map((i) => i.name), day1: (await children(ids['Trip/Day 1/']!)).map((i) => i.name), day2: day2 ? (await children(day2.id)).map((i) => i.name) : [] };
  };
  const want = { trip: ['Day 1', 'Day 2'], day1: ['a.txt', 'b.txt'], day2: ['c.txt'] };
  for (let i = 0; i < 50 && JSON.stringify(await tree()) !== JSON.stringify(want); i++) await page.waitForTimeout(200);
  expect(await tree()).toEqual(want);
  expect((await api.get(`/v1/files/${(await children(ids['Trip/Day 1/']!))[0]!.id}/content`)).text).toBe('kept');
  expect(await page.getByRole('alert').filter({ hasText: 'already taken' }).count()).toBe(0);
  await page.getByRole('button', { name: 'Clear finished' }).click();
  await page.getByRole('region', { name: 'Uploads' }).waitFor({ state: 'detached' });
});

test('rename through the actions menu; a taken name is an alert in words; delete offers Undo', async () => {
  await page.getByRole('button', { name: 'Actions for notes.txt' }).click();
  const menu = page.getByRole('menu');
  expect(await menu.getByRole('menuitem').allTextContents()).toEqual(['Download', 'Rename', 'Move', 'Delete', 'Versions', 'Share link']);
  await menu.getByRole('menuitem', { name: 'Rename' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('textbox', { name: 'Name' }).fill('Reports');
  // A change made elsewhere renders the listing again behind the dialog: what was typed stays.
  const probe = await api.upload({}, { name: 'while-renaming.txt', content: 'x' });
  expect(probe.status).toBe(201);
  await page.locator('a', { hasText: 'while-renaming.txt' }).waitFor({ state: 'attached' });
  expect(await dialog.getByRole('textbox', { name: 'Name' }).inputValue()).toBe('Reports');
  expect((await api.delete(`/v1/files/${probe.body.id}`)).status).toBe(200);
  expect((await api.delete(`/v1/trash/${probe.body.id}`)).status).toBe(204);
  await dialog.getByRole('button', { name: 'Rename' }).click();
  // A rename is a sync op a worker applies: on a busy machine its refusal may take a while.
  await dialog.getByRole('alert').waitFor({ timeout: 30_000 });
  await expect(dialog.getByRole('alert').textContent()).resolves.toMatch(/already taken/);
  await dialog.getByRole('textbox', { name: 'Name' }).fill('minutes.txt');
  await dialog.getByRole('button', { name: 'Rename' }).click();
  await page.getByRole('link', { name: 'minutes.txt', exact: true }).waitFor();

  await page.getByRole('button', { name: 'Actions for minutes.txt' }).click();
  await page.getByRole('menuitem', { name: 'Delete' }).click();
  await page.getByRole('link', { name: 'minutes.txt', exact: true }).waitFor({ state: 'detached' });
  await page.getByRole('button', { name: 'Undo' }).click();
  await page.getByRole('link', { name: 'minutes.txt', exact: true }).waitFor();
});

test('the actions menu works from the keyboard: Enter opens it on its first item, arrows move, Escape returns', async () => {
  await page.getByRole('button', { name: 'Actions for minutes.txt' }).focus();
  await page.keyboard.press('Enter');
  await page.locator(':focus', { hasText: /^Download$/ }).waitFor();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  await page.locator(':focus', { hasText: /^Move$/ }).waitFor();
  await page.keyboard.press('Escape');
  await page.getByRole('menu').waitFor({ state: 'detached' });
  await page.locator(':focus[aria-label="Actions for minutes.txt"]').waitFor();
  await page.keyboard.press('Enter');
  await page.locator(':focus', { hasText: /^Download$/ }).waitFor();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await page.getByRole('dialog').getByRole('textbox', { name: 'Name' }).waitFor();
  // Locators, not a function run in the page: the app's CSP refuses eval, which waitForFunction needs.
  expect(await page.locator('input:focus').inputValue()).toBe('minutes.txt');
  await page.keyboard.press('Escape');
  await page.getByRole('dialog').waitFor({ state: 'detached' });
});

test('a folder downloads as a ZIP from its actions menu', async () => {
  await page.getByRole('button', { name: 'Actions for Reports' }).click();
  expect(await page.getByRole('menu').getByRole('menuitem').allTextContents()).toEqual(['Download', 'Rename', 'Move', 'Delete', 'Share link', 'Download as ZIP']);
  const [zip] = await Promise.all([page.waitForEvent('download'), page.getByRole('menuitem', { name: 'Download as ZIP' }).click()]);
  expect(zip.suggestedFilename()).toBe('Reports.zip');
  const body = readFileSync(await zip.path());
  expect(body.subarray(0, 2).toString()).toBe('PK');
  // The owner's own archive: no share link is made for it.
  expect((await api.get('/v1/links')).body.items).toEqual([]);
});

test('Grid view shows a card per child with a generic icon until a thumbnail exists; List view goes back', async () => {
  await page.getByRole('button', { name: 'Grid view' }).click();
  await page.getByRole('link', { name: 'minutes.txt', exact: true }).waitFor();
  expect(await page.getByRole('table').count()).toBe(0);
  await page.getByRole('button', { name: 'Actions for Reports' }).waitFor();
  expect(await seriousViolations(page)).toEqual([]);
  await page.getByRole('button', { name: 'List view' }).click();
  await page.getByRole('table').waitFor();
});

test('move and delete several selected rows at once; the trash restores and deletes forever', async () => {
  await page.getByRole('checkbox', { name: 'Select minutes.txt' }).check();
  await page.getByRole('checkbox', { name: 'Select <img src=x onerror=alert(1)>' }).check();
  const [zip] = await Promise.all([page.waitForEvent('download'), page.getByRole('region', { name: 'Selection' }).getByRole('button', { name: 'Download as ZIP' }).click()]);
  expect(zip.suggestedFilename()).toBe('files.zip');
  const entries = await unzipEntries(readFileSync(await zip.path()));
  expect(Object.keys(entries).sort()).toEqual(['<img src=x onerror=alert(1)>', 'minutes.txt']);
  expect(entries['<img src=x onerror=alert(1)>']).toBe('evil');
  await page.getByRole('region', { name: 'Selection' }).getByRole('button', { name: 'Move' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('button', { name: 'Reports' }).click();
  await dialog.getByRole('button', { name: 'Move here' }).click();
  await page.getByRole('link', { name: 'minutes.txt', exact: true }).waitFor({ state: 'detached' });
  await page.getByRole('link', { name: 'Reports', exact: true }).click();
  await page.getByRole('link', { name: 'minutes.txt', exact: true }).waitFor();
  await page.getByRole('checkbox', { name: 'Select all' }).check();
  await page.getByRole('region', { name: 'Selection' }).getByRole('button', { name: 'Delete' }).click();
  await page.getByRole('link', { name: 'minutes.txt', exact: true }).waitFor({ state: 'detached' });

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Trash' }).click();
  await page.getByRole('heading', { level: 1, name: 'Trash' }).waitFor();
  await page.getByRole('button', { name: 'Restore minutes.txt' }).click();
  await page.getByRole('button', { name: 'Restore minutes.txt' }).waitFor({ state: 'detached' });
  expect(await seriousViolations(page)).toEqual([]);
  await page.getByRole('button', { name: 'Delete <img src=x onerror=alert(1)> forever' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Delete forever' }).click();
  await page.getByRole('button', { name: 'Delete <img src=x onerror=alert(1)> forever' }).waitFor({ state: 'detached' });
  const trash = await api.get('/v1/trash');
  expect(trash.body.items).toEqual([]);
});

test('changes made elsewhere appear without a reload, in the folder and in the trash; search finds files with their folder', async () => {
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Files' }).click();
  await page.getByRole('heading', { level: 1, name: 'Files' }).waitFor();
  const up = await api.upload({}, { name: 'from-elsewhere.txt', content: 'x' });
  expect(up.status).toBe(201);
  await page.getByRole('link', { name: 'from-elsewhere.txt', exact: true }).waitFor({ timeout: 5000 });
  await page.getByRole('searchbox', { name: 'Search files' }).fill('minutes');
  await page.getByRole('link', { name: 'minutes.txt', exact: true }).waitFor();
  await page.getByRole('link', { name: 'Files / Reports' }).waitFor();
  await page.getByRole('searchbox', { name: 'Search files' }).fill('');
  expect(foreign).toEqual([]);
});

test('a picture uploaded in the grid view shows as its thumbnail once a worker made it', async () => {
  const png = await sharp({ create: { width: 96, height: 64, channels: 3, background: '#3366cc' } }).png().toBuffer();
  // The first look answers 404, as it does while the worker has not made the thumbnail yet.
  let asked = 0;
  await page.route('**/thumbnail?size=256', (route) => (asked++ === 0 ? route.fulfill({ status: 404, headers: { 'cache-control': 'no-store' }, body: '' }) : route.continue()));
  await page.getByRole('button', { name: 'Grid view' }).click();
  await page.getByLabel('Upload files').setInputFiles([{ name: 'sunset.png', mimeType: 'image/png', buffer: png }]);
  await page.getByRole('link', { name: 'sunset.png', exact: true }).waitFor();
  // The card first shows the generic icon; the thumbnail replaces it once it exists, without a reload,
  // decoded from the service's bytes (not a broken image).
  await page.waitForFunction(
    (name: string) => {
      const img = (globalThis as any).document.querySelector(`img[alt="${name}"]`);
      return Boolean(img?.complete && img.naturalWidth > 0);
    },
    'sunset.png',
    { timeout: 30_000 },
  );
  const id = ((await api.get('/v1/items?limit=1000')).body.items as Array<{ id: string; name: string }>).find((i) => i.name === 'sunset.png')!.id;
  expect(await page.getByRole('img', { name: 'sunset.png' }).getAttribute('src')).toBe(`/v1/files/${id}/thumbnail?size=256`);
  expect(asked).toBe(2);
  await page.unroute('**/thumbnail?size=256');
  await page.getByRole('button', { name: 'List view' }).click();
  await page.getByRole('table').waitFor();
});

test('a dropped folder tree makes its 1,050 folders in two sync-op requests, then its files go in', async () => {
  const folderRequests: string[] = [];
  const onRequest = (r: { method(): string; url(): string }) => {
    const path = new URL(r.url()).pathname;
    if (r.method() === 'POST' && (path === '/v1/sync/ops' || path.startsWith('/v1/folders'))) folderRequests.push(path);
  };
  page.on('request', onRequest);
  await page.evaluate(`(() => {
    const file = (name) => ({ isFile: true, name, file: (ok) => ok(new File([name], name, { type: 'text/plain' })) });
    const dir = (name, children) => {
      let read = false;
      return { isDirectory: true, name, createReader: () => ({ readEntries: (ok) => { ok(read ? [] : children); read = true; } }) };
    };
    const subs = Array.from({ length: 1049 }, (_, i) => dir('sub ' + i, [file('n' + i + '.txt')]));
    const tree = dir('Many', [dir('deep', [file('deep.txt')]), ...subs]);
    const drop = new Event('drop', { bubbles: true, cancelable: true });
    Object.defineProperty(drop, 'dataTransfer', { value: { items: [{ webkitGetAsEntry: () => tree }], files: [] } });
    document.querySelector('div.files').dispatchEvent(drop);
  })()`);
  await page.getByRole('region', { name: 'Uploads' }).getByText('1050 of 1050 done').waitFor({ timeout: 60_000 });
  page.off('request', onRequest);
  // 1,051 folders (the dropped one and its 1,050) in batches of up to 1,000 ops: two requests.
  expect(folderRequests).toEqual(['/v1/sync/ops', '/v1/sync/ops']);
  const many = ((await api.get('/v1/items?limit=1000')).body.items as Array<{ id: string; name: string }>).find((i) => i.name === 'Many')!;
  expect((await api.get(`/v1/items?folderId=${many.id}&limit=1`)).body.total).toBe(1050);
  const deep = ((await api.get(`/v1/items?folderId=${many.id}&limit=1`)).body.items as Array<{ id: string; name: string }>)[0]!;
  expect(deep.name).toBe('deep');
  expect((await api.get(`/v1/items?folderId=${deep.id}`)).body.items.map((i: { name: string }) => i.name)).toEqual(['deep.txt']);
  await page.getByRole('button', { name: 'Clear finished' }).click();
});
