/**
 * Jest's test order: longest first, so the two workers of the 2-core CI machine end together instead
 * of one running a 60 s file alone at the end. Jest does this itself from its cache of the last run's
 * durations, but a clean clone (CI) has no cache and falls back to file sizes, which put a 1 KB fuzz
 * file of 30 s and the cfn-lint file near the end. `test/runner/durations.json` is that cache,
 * committed: seconds per test file (the longer of its two runs for a file in e2e and e2e-live), written by `npm run test:durations -- <jest --json output>`.
 * A duration jest measured on this machine wins; a file in neither runs first (Jest's own rule for a
 * file without timing), and a file that failed last time still runs first.
 */
/* eslint-disable @typescript-eslint/no-require-imports -- jest loads a sequencer with require(): CommonJS */
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const committed = require('./durations.json');
const ROOT = path.resolve(__dirname, '..', '..');

/** The key of a test file in durations.json: its path from the repository. */
const durationKey = (file) => path.relative(ROOT, file).split(path.sep).join('/');

class LongestFirst extends Sequencer {
  time(test) {
    const measured = super.time(test);
    if (measured != null) return measured;
    const seconds = committed[durationKey(test.path)];
    return seconds === undefined ? undefined : seconds * 1000;
  }
}

module.exports = LongestFirst;
module.exports.durationKey = durationKey;
