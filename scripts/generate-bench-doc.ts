/** `npm run bench:doc`: rewrites BENCHMARKS.md's "Last run" tables from bench/results.json (`npm run bench` does it after every run). */
import { writeBenchmarksDoc } from '../bench/doc';

writeBenchmarksDoc();
