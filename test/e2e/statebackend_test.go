package e2e

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/cq-source-x/cq-source-x/test/statebackend"
)

// oldTable is the table the syncs are given (backend_options.table_name),
// where versions before buckets kept every key.
const oldTable = "cq_state_x"

// startStateBackend serves a state backend on a unix socket in dir until
// the test ends, and returns it and its address.
func startStateBackend(t *testing.T, dir string) (*statebackend.Backend, string) {
	t.Helper()
	sock := filepath.Join(dir, "state.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	b, stop := statebackend.Serve(lis)
	t.Cleanup(stop)
	return b, "unix://" + sock
}
