// Package pqbench compares the two Parquet writers considered for the
// exporter, pqarrow (github.com/apache/arrow-go/v18/parquet/pqarrow, kept)
// and github.com/parquet-go/parquet-go, on the plugin's real x_bookmarks
// records. It is a separate module so that parquet-go stays out of the
// main module's go.mod. See docs/parquet.md for the figures and commands:
//
//	cd export/pqfile/pqbench && go test -run RoundTrip -bench . -benchtime 5x -count 5
package pqbench
