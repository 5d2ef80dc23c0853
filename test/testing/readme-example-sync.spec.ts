import * as fs from 'node:fs';
import * as path from 'node:path';
import { sectionSnippet } from '../docs/snippets';

/**
 * README's "Testing your application" block is readme-example.spec.ts, which Jest runs as it is: the two stay
 * the same code, but for where the package is imported from.
 */
describe('README "Testing your application"', () => {
  it('shows readme-example.spec.ts, word for word', () => {
    const readme = fs.readFileSync(path.join(__dirname, '..', '..', 'README.md'), 'utf8');
    const shown = sectionSnippet('README.md', readme, 'Testing your application').code.trim();
    const run = fs
      .readFileSync(path.join(__dirname, 'readme-example.spec.ts'), 'utf8')
      .replace("from '../../lib';", "from 'nestjs-redlock';")
      .trim();
    expect(shown).toBe(run);
  });
});
