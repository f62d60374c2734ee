// Runs one SQL query with DuckDB and prints the rows as JSON on stdout.
// Go tests use it (through CQX_DUCKDB_DIR, set by .ci/run) to check that
// DuckDB reads the exported Parquet files. Usage: node query.mjs "SQL"
import { DuckDBInstance } from '@duckdb/node-api';

const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
const result = await con.runAndReadAll(process.argv[2]);
process.stdout.write(JSON.stringify(result.getRowObjectsJson()));
