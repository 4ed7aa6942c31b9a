/**
 * Every `gpu-relay` command line the docs show in a code block (README.md, docs/*.md; the first GPU of
 * the README included) names a command the CLI has, with options that command's own help lists. The
 * CLI is the package's `bin`, run as `npx gpu-relay` runs it; a renamed command or option fails here.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
const BIN = path.join(ROOT, pkg.bin['gpu-relay']);

const pages = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((n) => n.endsWith('.md'))
    .map((n) => `docs/${n}`),
];

/** Lines inside fenced code blocks. */
const codeLines = (text: string): string[] => {
  const out: string[] = [];
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    else if (fenced) out.push(line);
  }
  return out;
};

interface Shown {
  readonly page: string;
  readonly command: string;
  readonly options: readonly string[];
  readonly line: string;
}

/** `gpu-relay <command> [sub] …` up to a shell comment, pipe or `;`: the command (with `keys`' sub-command) and its --options. */
const shown: Shown[] = pages.flatMap((page) =>
  codeLines(readFileSync(path.join(ROOT, page), 'utf8')).flatMap((line) =>
    [...line.matchAll(/(?:^|[\s|;:(])gpu-relay ([a-z][a-z-]*)((?:\s+(?!#)[^\s|;)#]+)*)/g)].map((m) => {
      const words = m[2].trim().split(/\s+/).filter(Boolean);
      const command = m[1] === 'keys' && words[0] && !words[0].startsWith('-') ? `keys ${words[0]}` : m[1];
      const options = [...new Set(words.filter((w) => /^--[a-z]/.test(w)).map((w) => w.replace(/=.*$/, '')))];
      return { page, command, options, line: line.trim() };
    }),
  ),
);

const helpOf = new Map<string, { status: number | null; text: string }>();
const help = (command: string) => {
  if (!helpOf.has(command)) {
    const run = spawnSync(process.execPath, [BIN, ...command.split(' '), '--help'], {
      encoding: 'utf8',
      env: { PATH: process.env.PATH ?? '' },
    });
    helpOf.set(command, { status: run.status, text: `${run.stdout}\n${run.stderr}` });
  }
  return helpOf.get(command)!;
};

describe('Docs: gpu-relay command lines', () => {
  it('finds the command lines, the README first GPU among them', () => {
    expect(
      shown.some(
        (s) =>
          s.page === 'README.md' && s.line === 'npx gpu-relay create-order --gpu "RTX 4090" --max-price 0.5 --wait',
      ),
    ).toBe(true);
  });

  it.each(shown.map((s) => [s.page, s.line, s] as const))('%s: %s', (_page, _line, s) => {
    const { status, text } = help(s.command);
    const missing = s.options.filter((option) => !new RegExp(`${option}(?![a-z-])`).test(text));
    expect({ command: s.command, status, missing }).toEqual({ command: s.command, status: 0, missing: [] });
  });
});
