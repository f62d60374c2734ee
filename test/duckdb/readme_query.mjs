// Runs the SQL block of README.md (the one under "Read the result with
// DuckDB") with DuckDB, in the current directory, and prints the rows. CI
// runs it on the output of the README's demo command, so the README's query
// is known to work. Usage: node readme_query.mjs README.md
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const readme = readFileSync(process.argv[2], 'utf8');
const section = readme.split('## Read the result with DuckDB')[1];
if (!section) throw new Error('README.md has no "Read the result with DuckDB" section');
const sql = section.match(/```sql\n([\s\S]*?)```/);
if (!sql) throw new Error('no ```sql block in that section');
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const result = await con.runAndReadAll(sql[1]);
const rows = result.getRowObjectsJson();
console.log(rows);
if (rows.length === 0) throw new Error('the README query returned no rows');
