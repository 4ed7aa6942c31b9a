#!/usr/bin/env node
/**
 * `npm test`: every jest project, with the typecheck and the lint (`npm run typecheck`, `npm run lint`)
 * run beside it instead of before it. The e2e files spend about half their time waiting on the relay
 * (a workflow's polls, a sweep, a callback), so the checks' ~75 s of CPU fit in jest's idle time: they
 * run at a lower priority (nice 10), so a jest worker that wants the CPU has it first. Jest's output
 * is shown as it runs; each check's output is kept and shown once jest is done: in full when the check
 * failed, as one line when it passed. The exit code is jest's, else 1 when a check failed.
 *
 * Arguments go to jest (`npm test -- test/unit/cli` runs those files, the checks still run). Plain Node,
 * no dependencies; it runs the package's scripts from the folder npm starts it in.
 */
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';

/** The package scripts run beside jest. */
export const CHECKS = ['typecheck', 'lint'];
/** How much lower than jest the checks run (POSIX nice: 0 normal, 19 lowest). */
const CHECK_NICENESS = 10;

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Runs a package script with its output kept; resolves with its exit code, output and seconds taken. */
const runCheck = (name) =>
  new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(npm, ['run', '--silent', name], { stdio: ['ignore', 'pipe', 'pipe'] });
    try {
      // Set before npm starts the script's own processes (they inherit it); a failure only costs speed.
      setPriority(child.pid, CHECK_NICENESS);
    } catch {
      // not permitted here: the check runs at jest's priority
    }
    const output = [];
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    const done = (code) =>
      resolve({ name, code, output: Buffer.concat(output).toString('utf8'), seconds: (Date.now() - started) / 1000 });
    child.on('error', (error) => {
      output.push(Buffer.from(`${error.message}\n`));
      done(1);
    });
    child.on('close', (code, signal) => done(code ?? (signal ? 1 : 0)));
  });

/** Runs jest with `args`, its output shown as it comes; resolves with its exit code. */
const runJest = (args) =>
  new Promise((resolve) => {
    const child = spawn('jest', args, { stdio: 'inherit' });
    child.on('error', (error) => {
      process.stderr.write(`npm test: jest did not start: ${error.message}\n`);
      resolve(1);
    });
    child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });

const main = async () => {
  const checks = CHECKS.map(runCheck);
  const jest = await runJest(process.argv.slice(2));
  const results = await Promise.all(checks);
  for (const check of results) {
    if (check.code === 0) {
      process.stderr.write(`npm test: ${check.name} passed (${check.seconds.toFixed(0)} s, beside jest)\n`);
    } else {
      process.stderr.write(`\nnpm test: ${check.name} FAILED (exit ${check.code}):\n${check.output}\n`);
    }
  }
  const failed = results.filter((c) => c.code !== 0).map((c) => c.name);
  if (jest !== 0) return jest;
  if (failed.length > 0) {
    process.stderr.write(`npm test: jest passed, but ${failed.join(' and ')} failed (above)\n`);
    return 1;
  }
  return 0;
};

process.exitCode = await main();
