/**
 * A device name for a browser, from its User-Agent: "Firefox on Linux", "Chrome on Windows". Only the
 * shown name comes from it; nothing is decided on it. Unknown agents are "Web browser".
 */
const BROWSERS: Array<[RegExp, string]> = [
  [/\bEdg\//, 'Edge'],
  [/\bOPR\//, 'Opera'],
  [/\bFirefox\//, 'Firefox'],
  // HeadlessChrome too.
  [/Chrom(e|ium)\//, 'Chrome'],
  [/\bVersion\/[\d.]+ .*Safari\//, 'Safari'],
];

const SYSTEMS: Array<[RegExp, string]> = [
  [/\bAndroid\b/, 'Android'],
  [/\b(iPhone|iPad|iPod)\b/, 'iOS'],
  [/\bCrOS\b/, 'ChromeOS'],
  [/\bWindows\b/, 'Windows'],
  [/\bMac OS X\b|\bMacintosh\b/, 'macOS'],
  [/\bLinux\b/, 'Linux'],
];

const first = (table: Array<[RegExp, string]>, agent: string) => table.find(([pattern]) => pattern.test(agent))?.[1];

export function browserDeviceName(userAgent: string | undefined): { name: string; platform: string } {
  const agent = (userAgent ?? '').slice(0, 512);
  const browser = first(BROWSERS, agent);
  const system = first(SYSTEMS, agent);
  const name = browser && system ? `${browser} on ${system}` : browser ?? (system ? `Web browser on ${system}` : 'Web browser');
  return { name, platform: system ? `web (${system})` : 'web' };
}
