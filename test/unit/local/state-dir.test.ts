import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { openStateDir, STATE_FORMAT, StateVersionError } from '../../../local/state-dir';

describe('Function: openStateDir', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'state-dir-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('stamps an absent folder with this format, and opens it again as it is', () => {
    // Act
    const first = openStateDir(path.join(root, 'state'));
    writeFileSync(first.queue, 'kept\n');
    const second = openStateDir(path.join(root, 'state'));

    // Assert
    expect(first.created).toBe(true);
    expect(JSON.parse(readFileSync(path.join(first.dir, 'state.json'), 'utf8'))).toMatchObject({
      format: STATE_FORMAT,
    });
    expect(second.created).toBe(false);
    expect(readFileSync(second.queue, 'utf8')).toBe('kept\n');
  });

  it('refuses a state of another format, naming the command that resets it, and changes nothing', () => {
    // Prepare
    const dir = path.join(root, 'old');
    mkdirSync(path.join(dir, 'table'), { recursive: true });
    writeFileSync(path.join(dir, 'state.json'), JSON.stringify({ format: STATE_FORMAT + 1, createdBy: '9.9.9' }));

    // Act
    const open = () => openStateDir(dir);

    // Assert
    expect(open).toThrow(StateVersionError);
    expect(open).toThrow(/written by relay 9\.9\.9 in state format 2.*npm run state:reset.*npm start -- --fresh/);
    expect(readdirSync(dir).sort()).toEqual(['state.json', 'table']);
  });

  it('refuses a folder with files and no stamp (not written by the relay)', () => {
    const dir = path.join(root, 'foreign');
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'notes.txt'), 'mine');
    expect(() => openStateDir(dir)).toThrow(/has no state\.json.*npm run state:reset/);
  });

  it('starts empty with fresh, whatever was there', () => {
    const dir = path.join(root, 'fresh');
    mkdirSync(path.join(dir, 'table'), { recursive: true });
    writeFileSync(path.join(dir, 'state.json'), JSON.stringify({ format: 0 }));
    const opened = openStateDir(dir, { fresh: true });
    expect(opened.created).toBe(true);
    expect(readdirSync(dir)).toEqual(['state.json']);
  });
});
